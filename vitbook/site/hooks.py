"""MkDocs hooks: serve the rendered figures and the locally installed MathJax with the site;
link every printed number to its provenance; name the edition.

``mkdocs.yml`` lists this file under ``hooks``. Figures are copied from ``figures/`` and
MathJax from ``node_modules`` (installed by ``npm ci`` from the pinned ``package-lock.json``),
so the built site asks no other host for anything. The numbers the macros print
(:mod:`vitbook.site.provenance`) become links to the Numbers appendix, with the data of their
cards. A versioned build (``MIKE_DOCS_VERSION``, see :mod:`vitbook.site.editions`) is served
under its version's path and shows Material's version selector.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from vitbook.site import editions, fonts, math, provenance
from vitbook.site import macros as book

MATHJAX = Path("node_modules/mathjax/es5")


#: This build's copy of the book and its facts' provenance (set by on_config).
STATE: dict[str, Any] = {}


def on_config(config: Any) -> Any:
    book.numbering.cache_clear()
    book.bibliography.cache_clear()
    project = Path(config["config_file_path"]).parent
    root_url = config["extra"].setdefault("site_root", config.get("site_url") or "")
    ed = editions.current(project, {**config, "site_url": root_url})
    if ed.path:  # served under <version>/ beside the other versions: Material's selector
        config["site_url"] = ed.url
        config["extra"]["version"] = {"provider": "mike"}
    config["extra"]["edition"] = ed.as_dict()
    STATE["edition"] = ed
    STATE["facts"] = provenance.ledger(project)
    notebooks = config["plugins"].get("mkdocs-jupyter")
    if notebooks is not None:
        folder = Path(notebooks.config["cache_dir"]).parts[0:2]  # .cache/mkdocs-jupyter
        notebooks.config["cache_dir"] = str(Path(*folder) / package_key(project / "vitbook"))
    return config


def package_key(package: Path) -> str:
    """A hash of every source file of the package and of the environment's library versions.

    mkdocs-jupyter keys an executed notebook by the notebook's own text only: a notebook whose
    text did not change but whose imports did would be served from its cache with stale
    outputs. Its cache folder is named by this key instead, so any change to ``vitbook`` (or a
    library version) executes the notebooks again, and nothing else does."""
    import hashlib

    from vitbook.engine.deps import environment

    h = hashlib.sha256(repr(sorted(environment().items())).encode())
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


#: Lossy WebP quality (the cache key holds it, so a change re-encodes).
WEBP_QUALITY = 75


def webp_copies(png: Path) -> dict[str, bytes]:
    """WebP copies of a figure, at full width and at each of ``book.WEBP_WIDTHS`` below it,
    each the smaller of a lossy (quality 75) and a lossless encoding: lossy suits photographs,
    lossless flat plots. Cached by the PNG's SHA-256 under ``.cache/webp``."""
    import hashlib
    import io

    from PIL import Image

    from vitbook.engine import cache

    blob = png.read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    folder = Path(__file__).resolve().parents[2] / ".cache" / "webp" / digest[:2]
    image = None
    out = {}
    width, height = book.png_size(png)
    stem = png.name.removesuffix(".png")
    for w in [w for w in book.WEBP_WIDTHS if w < width] + [width]:
        name = f"{stem}.webp" if w == width else f"{stem}.{w}w.webp"
        cached = folder / f"{digest}.{w}.q{WEBP_QUALITY}.webp"
        if cached.is_file():
            out[name] = cached.read_bytes()
            continue
        if image is None:
            image = Image.open(io.BytesIO(blob)).convert("RGB")
        sized = image if w == width else image.resize((w, round(height * w / width)), Image.LANCZOS)
        best = b""
        for options in ({"quality": WEBP_QUALITY, "method": 6}, {"lossless": True, "method": 6}):
            buf = io.BytesIO()
            sized.save(buf, format="WEBP", **options)
            if not best or len(buf.getvalue()) < len(best):
                best = buf.getvalue()
        cache.atomic_write(cached, best)
        out[name] = best
    return out


#: The start of one line of a highlighted listing (``line_spans: __span`` in mkdocs.yml), with
#: its line-number anchor and the spaces that indent it: bare, in a whitespace span, or at the
#: start of a token that holds them (a docstring's continuation lines).
_CODE_LINE_RE = re.compile(
    r'<span id="(__span-\d+-\d+)">((?:<a [^>]*></a>)?(?:<span class="[^"]*">)?)( *)'
)


def code_line_indents(html: str) -> str:
    """Give every line of a listing its indentation as ``--vb-indent`` (in characters), so that
    on a wide screen a line too long for the column wraps under its own code, four characters
    in (docs/stylesheets/book.css), instead of running out of sight."""
    return _CODE_LINE_RE.sub(
        lambda m: (
            f'<span id="{m.group(1)}" style="--vb-indent:{len(m.group(3))}">'
            f"{m.group(2)}{m.group(3)}"
        ),
        html,
    )


def link_numbers(html: str, page: Any) -> str:
    """The page's printed numbers as links to their Numbers entries, and the data of their
    cards (once per fact) at the end of the page's content."""
    if provenance.OPEN not in html:
        return html
    numbers = "../" * page.url.count("/") + "numbers/"
    done = provenance.link_numbers(html, numbers)
    if not done.linked:
        return done.html
    ed = STATE.get("edition")
    data = provenance.page_data(
        done.linked, STATE.get("facts", {}), ed.repo if ed else "", ed.commit if ed else "", numbers
    )
    return done.html + "\n" + data


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Link the printed numbers (before the formulas are typeset, so that a number inside one
    stays TeX), typeset the page's formulas at build time (SVG in the page: no math runtime
    needed), and mark each listing line's indentation for wrapping."""
    return code_line_indents(math.typeset_page(link_numbers(html, page)))


def on_post_page(output: str, page: Any, config: Any) -> str:
    """Notebook pages: typeset their Markdown cells' ``$...$`` math at build time too. A
    number printed outside the content (a heading in the table of contents, the title) is
    plain text."""
    if provenance.OPEN in output:
        output = provenance.unmark(output)
    if page.file.src_path.endswith(".py"):
        return math.typeset_dollars(output)
    return output


def on_post_build(config: Any) -> None:
    """Copy the rendered figures and MathJax (from ``npm ci``) into the built site.

    The MathJax runtime is loaded only by pages whose math is not typeset at build time (the
    notebook pages' Markdown cells); see ``docs/javascripts/mathjax.js``."""
    math.TYPESETTER.close()
    math.clean_search_index(Path(config["site_dir"]))
    site = Path(config["site_dir"])
    project = Path(config["config_file_path"]).parent
    src = project / "figures"
    for path in sorted(src.glob("ch*/*.*")):
        dest = site / "figures" / path.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        if path.suffix == ".png":
            for name, blob in webp_copies(path).items():
                (dest.parent / name).write_bytes(blob)
    mathjax = project / MATHJAX
    if not (mathjax / "tex-mml-chtml.js").exists():
        raise book.BookError(f"{mathjax}/tex-mml-chtml.js is missing: run `npm ci` in {project}")
    out = site / "assets" / "mathjax"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mathjax / "tex-mml-chtml.js", out / "tex-mml-chtml.js")
    # the fonts, and the TeX extensions MathJax loads on demand (\boldsymbol, \cancel, ...)
    for sub in ("output/chtml/fonts/woff-v2", "input/tex/extensions"):
        shutil.copytree(mathjax / sub, out / sub, dirs_exist_ok=True)
    fonts.install(site, cache=project / ".cache" / "vitbook" / "fonts")
    # how to cite this copy: the repository's CITATION.cff with its commit and address
    ed = STATE.get("edition") or editions.current(project)
    (site / "CITATION.cff").write_text(editions.citation_cff(project, ed), encoding="utf-8")
    (site / "edition.json").write_text(json.dumps(ed.as_dict(), indent=1) + "\n")
