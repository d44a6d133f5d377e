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

import gzip
import json
import re
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from vitbook.site import editions, fonts, math, provenance, slides
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


def on_env(env: Any, config: Any, files: Any) -> Any:
    """``{{ page.file.src_path | colab_blob }}`` in ``overrides/main.html``: where the Colab
    button opens a notebook (:func:`vitbook.site.editions.colab_blob`)."""
    env.filters["colab_blob"] = lambda src: editions.colab_blob(config["extra"]["edition"], src)
    return env


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
#: Copies at most this wide (what phones and a 720 px column at one device pixel per CSS pixel
#: download) get libwebp's slowest, tightest method; the wider copies that only 1.5x and 2x
#: desktop screens fetch get method 4: half the encoding time of a build, about 2% more bytes.
WEBP_TIGHT_MAX = 720


def webp_method(width: int) -> int:
    """libwebp's effort (0-6) for a copy ``width`` px wide (see :data:`WEBP_TIGHT_MAX`)."""
    return 6 if width <= WEBP_TIGHT_MAX else 4


def webp_copies(png: Path) -> dict[str, bytes]:
    """WebP copies of a figure, at full width and at each of ``book.WEBP_WIDTHS`` below it,
    each the smaller of a lossy (quality 75) and a lossless encoding: lossy suits photographs,
    lossless flat plots (libwebp's effort: :func:`webp_method`). Cached by the PNG's SHA-256
    under ``.cache/webp``."""
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
        method = webp_method(w)
        cached = folder / f"{digest}.{w}.q{WEBP_QUALITY}.m{method}.webp"
        if cached.is_file():
            out[name] = cached.read_bytes()
            continue
        if image is None:
            image = Image.open(io.BytesIO(blob)).convert("RGB")
        sized = image if w == width else image.resize((w, round(height * w / width)), Image.LANCZOS)
        best = b""
        for options in (
            {"quality": WEBP_QUALITY, "method": method},
            {"lossless": True, "method": method},
        ):
            buf = io.BytesIO()
            sized.save(buf, format="WEBP", **options)
            if not best or len(buf.getvalue()) < len(best):
                best = buf.getvalue()
        cache.atomic_write(cached, best)
        out[name] = best
    return out


# --- explorer data as the site serves it --------------------------------------------------

#: An array this large (bytes) goes to a file of its own, named by its content, that every
#: explorer holding the same array shares (the face photograph is in four of them): a reader
#: downloads it once for the whole book.
SHARED_BYTES = 32 * 1024
SHARED_DIR = "data"


def _med(planes: np.ndarray) -> np.ndarray:
    """LOCO-I's median edge predictor (as in lossless JPEG-LS) of each pixel from its left,
    upper and upper-left neighbours, over (..., H, W) uint8 planes; residuals modulo 256."""
    x = planes.astype(np.int16)
    a = np.zeros_like(x)
    b = np.zeros_like(x)
    c = np.zeros_like(x)
    a[..., :, 1:] = x[..., :, :-1]
    b[..., 1:, :] = x[..., :-1, :]
    c[..., 1:, 1:] = x[..., :-1, :-1]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pred = np.where(c >= hi, lo, np.where(c <= lo, hi, a + b - c))
    return ((x - pred) % 256).astype(np.uint8)


def _unmed(res: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_med` (the page's is docs/javascripts/explorers/core.js)."""
    r = res.astype(np.int16)
    out = np.zeros_like(r)
    h, w = r.shape[-2:]
    for i in range(h):
        for j in range(w):
            a = out[..., i, j - 1] if j else 0
            b = out[..., i - 1, j] if i else 0
            c = out[..., i - 1, j - 1] if i and j else 0
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            pred = np.where(c >= hi, lo, np.where(c <= lo, hi, a + b - c))
            out[..., i, j] = (r[..., i, j] + pred) % 256
    return out.astype(np.uint8)


def filtered(arr: np.ndarray) -> tuple[str | None, bytes]:
    """How an array is stored for the page, and its bytes: an image (``(..., H, W, C)``
    uint8, C of 1, 3 or 4) may go as planes of MED residuals (``med``), which deflate packs a
    quarter smaller for a photograph; 4-byte numbers as their byte planes (``shuffle``: the
    exponent bytes together); each only where deflate packs it smaller than the array as it
    is (a small or flat image does not gain)."""
    raw = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"))).tobytes()
    candidates: list[tuple[str | None, bytes]] = [(None, raw)]
    if arr.dtype == np.uint8 and arr.ndim >= 3 and arr.shape[-1] in (1, 3, 4):
        planes = np.moveaxis(arr, -1, -3)  # (..., C, H, W)
        candidates.append(("med", np.ascontiguousarray(_med(planes)).tobytes()))
    if arr.dtype.itemsize == 4 and arr.size:
        candidates.append(("shuffle", np.frombuffer(raw, np.uint8).reshape(-1, 4).T.tobytes()))
    if len(candidates) == 1:
        return candidates[0]
    return min(candidates, key=lambda c: len(zlib.compress(c[1], 9)))


def unfiltered(kind: str | None, blob: bytes, dtype: str, shape: list[int]) -> np.ndarray:
    """The inverse of :func:`filtered`."""
    dt = np.dtype(dtype).newbyteorder("<")
    if kind == "med":
        *lead, h, w, ch = shape
        planes = np.frombuffer(blob, np.uint8).reshape(*lead, ch, h, w)
        return np.moveaxis(_unmed(planes), -3, -1)
    if kind == "shuffle":
        raw = np.frombuffer(blob, np.uint8).reshape(4, -1).T.copy().tobytes()
        return np.frombuffer(raw, dt).reshape(shape)
    return np.frombuffer(blob, dt).reshape(shape)


def site_explorer(blob: bytes) -> tuple[bytes, dict[str, bytes]]:
    """An explorer's data file (vitbook/engine/explorer.py) as the site serves it: its header
    and small arrays gzip-compressed in one file, each large array filtered (:func:`filtered`)
    and gzip-compressed in a file of its own under ``figures/data/``, named by its content,
    so that explorers holding the same array share one download. A host sends a ``.bin`` file
    as it is, so the compression is done here; the page inflates it
    (docs/javascripts/explorers/core.js). The same data give the same bytes on every build.
    Returns the main file's bytes and ``{path under figures/: bytes}`` of the shared ones."""
    import hashlib
    import json

    from vitbook.engine.explorer import decode, part_files

    data = decode(blob)
    parts = part_files(blob)  # the parts' files keep their names beside this one
    header: dict[str, Any] = {}
    inline: list[bytes] = []
    shared: dict[str, bytes] = {}
    offset = 0
    for name in sorted(data.arrays):
        arr = np.asarray(data.arrays[name])
        kind, raw = filtered(arr)
        entry: dict[str, Any] = {"dtype": arr.dtype.name, "shape": list(arr.shape),
                                 "length": int(arr.size), "filter": kind}  # fmt: skip
        if len(raw) >= SHARED_BYTES:
            key = hashlib.sha256(json.dumps(entry, sort_keys=True).encode() + raw).hexdigest()
            file = f"{SHARED_DIR}/{key[:20]}.bin"
            shared[file] = gzip.compress(raw, compresslevel=9, mtime=0)
            entry["file"] = f"../{file}"
        else:
            entry["offset"] = offset
            pad = -len(raw) % 8
            inline.append(raw + b"\0" * pad)
            offset += len(raw) + pad
        header[name] = entry
    head = json.dumps(
        {"meta": data.meta, "arrays": header, "site": 1} | ({"parts": parts} if parts else {}),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    head += b" " * (-(len(head) + 4) % 8)
    main = struct.pack("<I", len(head)) + head + b"".join(inline)
    return gzip.compress(main, compresslevel=9, mtime=0), shared


def read_site_explorer(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an explorer's data file in a built site (for tests): the inverse of
    :func:`site_explorer`, reading the shared files beside it."""
    import json

    main = gzip.decompress(path.read_bytes())
    (n,) = struct.unpack_from("<I", main)
    header = json.loads(main[4 : 4 + n])
    base = 4 + n
    out = {}
    for name, h in header["arrays"].items():
        if "file" in h:
            raw = gzip.decompress((path.parent / h["file"]).read_bytes())
        else:
            size = h["length"] * np.dtype(h["dtype"]).itemsize
            raw = main[base + h["offset"] : base + h["offset"] + size]
        out[name] = unfiltered(h["filter"], raw, h["dtype"], h["shape"])
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


# --- listing titles: links to the source at the commit that built the page ------------------

#: A fenced listing with a title (``python title="vitbook/calc.py"``), at any indentation.
_FENCE_RE = re.compile(
    r'^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[^\n]*?title="(?P<title>[^"]+)"[^\n]*\n'
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.M | re.S,
)
_SNIPPET_RE = re.compile(r'--8<--\s+"(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"')
_FILENAME_RE = re.compile(r'<span class="filename">([^<]+)</span>')


def section_lines(path: Path, section: str | None) -> tuple[int, int] | None:
    """The first and last line (1-based) of a snippet section (between its ``[start:name]``
    and ``[end:name]`` markers), or of the whole file when ``section`` is None."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    if section is None:
        return (1, len(lines)) if lines else None
    start = end = None
    for i, line in enumerate(lines, 1):
        if f"[start:{section}]" in line and "--8<--" in line:
            start = i + 1
        elif f"[end:{section}]" in line and "--8<--" in line and start is not None:
            end = i - 1
            break
    return (start, end) if start is not None and end is not None and end >= start else None


def listing_links(markdown: str, project: Path, base: str) -> list[tuple[str, str | None]]:
    """For each titled listing of a page, in order: its title and the URL of what it shows
    (``base/<path>#L<first>-L<last>``), or None when the title names no file of the project."""
    out = []
    for m in _FENCE_RE.finditer(markdown):
        title = m.group("title")
        path = project / title
        if not path.is_file() or not path.resolve().is_relative_to(project.resolve()):
            out.append((title, None))
            continue
        snippet = _SNIPPET_RE.search(m.group("body"))
        span = None
        if snippet and snippet.group("path") == title:
            span = section_lines(path, snippet.group("section"))
        anchor = f"#L{span[0]}-L{span[1]}" if span else ""
        out.append((title, f"{base}/{title}{anchor}"))
    return out


def link_listing_titles(html: str, links: list[tuple[str, str | None]]) -> str:
    """Wrap the n-th listing title of the page in a link to the n-th source of ``links``."""
    queue = list(links)

    def one(m: re.Match[str]) -> str:
        while queue:
            title, url = queue.pop(0)
            if title == m.group(1):
                if url is None:
                    return m.group(0)
                return (
                    f'<span class="filename"><a class="vb-source" href="{url}" '
                    f'title="{title} at the commit this page was built from">{title}</a></span>'
                )
        return m.group(0)

    return _FILENAME_RE.sub(one, html)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Note where each titled listing of the page comes from (read in on_page_content)."""
    project = Path(config["config_file_path"]).parent
    ed = STATE.get("edition")  # the repository and the commit built (on_config)
    page.vb_listings = (
        listing_links(markdown, project, f"{ed.repo}/blob/{ed.commit}")
        if ed and ed.repo and ed.commit else []
    )  # fmt: skip
    return markdown


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
    needed, each glyph's outline once per page), mark each listing line's indentation for
    wrapping, and link each listing's title to its source at the commit the page was built
    from. A chapter's content is kept for its slide deck first (:mod:`vitbook.site.slides`)."""
    slides.collect(html, page.file.src_path)
    html = code_line_indents(math.share_glyphs(math.typeset_page(link_numbers(html, page))))
    html = slide_links(html, page, Path(config["docs_dir"]))
    return link_listing_titles(html, getattr(page, "vb_listings", []))


#: The paragraph of a chapter's cite box that links its PDF (vitbook.site.macros.cite_box).
_PDF_LINE_RE = re.compile(r'<p>(?:(?!</p>).)*?class="vb-pdf-link".*?</p>', re.S)


def slide_links(html: str, page: Any, docs: Path) -> str:
    """A chapter with a deck (docs/slides/chNN.yml) links it and its PDF in its cite box,
    after the chapter's PDF: ``slides/chNN/`` and ``slides/chNN.pdf``."""
    n = slides.chapter_of(page.file.src_path)
    if n is None or not (docs / slides.DECK_DIR / f"ch{n:02d}.yml").is_file():
        return html
    up = "../" * page.url.count("/")
    line = (
        f'<p class="vb-slides-links">Slides of this chapter, built from the same figures, '
        f'numbers and formulas: <a href="{up}slides/ch{n:02d}/">the deck</a> (press S for the '
        f'speaker notes) and <a href="{up}slides/ch{n:02d}.pdf" type="application/pdf">its '
        f"PDF</a> (16:9).</p>"
    )
    m = _PDF_LINE_RE.search(html)
    if m is None:
        return html + line
    return html[: m.end()] + line + html[m.end() :]


#: mkdocs-glightbox's script, which it loads in the page's head (blocking its first paint), and
#: its set-up, run where the page's body ends.
_GLIGHTBOX_JS_RE = re.compile(r'<script src="([^"]*glightbox\.min\.js)"></script>')
_GLIGHTBOX_INIT_RE = re.compile(r'<script id="init-glightbox">(.*?)</script>', re.S)


def defer_lightbox(output: str) -> str:
    """Load the lightbox's script without holding up the page: ``defer``, and its set-up run
    once the page is parsed (the lightbox is for a reader's click, never for the first paint).
    ``lightbox`` stays a global, which docs/javascripts/reader.js reloads on a resize."""
    js, init = _GLIGHTBOX_JS_RE.search(output), _GLIGHTBOX_INIT_RE.search(output)
    if not js or not init:
        return output
    body = init.group(1).replace("const lightbox = ", "window.lightbox = ", 1)
    output = output.replace(js.group(0), f'<script src="{js.group(1)}" defer></script>', 1)
    return output.replace(
        init.group(0),
        '<script id="init-glightbox">document.addEventListener("DOMContentLoaded", () => {'
        f"{body}}});</script>",
        1,
    )


def on_post_page(output: str, page: Any, config: Any) -> str:
    """Notebook pages: typeset their Markdown cells' ``$...$`` math at build time too. A
    number printed outside the content (a heading in the table of contents, the title) is
    plain text. Every page: the lightbox's script deferred."""
    if provenance.OPEN in output:
        output = provenance.unmark(output)
    if page.file.src_path.endswith(".py"):
        output = math.typeset_dollars(output)
    return defer_lightbox(output)


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
        if path.name.endswith(".explorer.bin"):
            main, shared = site_explorer(path.read_bytes())
            dest.write_bytes(main)
            for name, blob in shared.items():
                (site / "figures" / name).parent.mkdir(parents=True, exist_ok=True)
                (site / "figures" / name).write_bytes(blob)
            continue
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
    decks = write_slides(config, site, project)  # before the fonts: their letters are cut too
    fonts.install(site, cache=project / ".cache" / "vitbook" / "fonts")
    print_slides(config, site, project, decks)
    # how to cite this copy: the repository's CITATION.cff with its commit and address
    ed = STATE.get("edition") or editions.current(project)
    (site / "CITATION.cff").write_text(editions.citation_cff(project, ed), encoding="utf-8")
    (site / "edition.json").write_text(json.dumps(ed.as_dict(), indent=1) + "\n")


def write_slides(config: Any, site: Path, project: Path) -> list[Any]:
    """Every chapter's slide deck into ``site/slides/`` (:mod:`vitbook.site.slides`)."""
    from vitbook.site.pdf import nav_titles

    docs = Path(config["docs_dir"])
    ed = STATE.get("edition") or editions.current(project)
    titles = {}
    for src, title in nav_titles(config.get("nav")).items():
        n = slides.chapter_of(src)
        if n is not None:
            titles[n] = re.sub(r"^\d+\.\s*", "", title)
    decks = slides.write_decks(
        site, project, docs, dict(book.nav_pages(config.get("nav"))),
        published=ed.url, numbers=book.numbering(str(docs)), alt=book.figure_alt(str(docs)),
        titles=titles,
    )  # fmt: skip
    math.TYPESETTER.close()
    slides.PAGES.clear()
    return decks


def print_slides(config: Any, site: Path, project: Path, decks: list[Any]) -> None:
    """The decks' 16:9 PDFs (printed only where a deck changed: cached by its digest)."""
    # no date and no commit: a deck's PDF is the same file until the deck changes
    meta = {
        "/Author": str(config["extra"].get("authors", "")),
        "/Creator": "vitbook.site.slides (reveal.js, Chromium via Playwright)",
        "/Producer": "vitbook.site.slides with pypdf",
        "/Subject": f"{config.get('site_name', 'vitbook')}: slides",
    }
    slides.print_decks(site, project, decks, meta)
