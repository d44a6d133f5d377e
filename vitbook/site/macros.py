"""The book's page machinery, used by MkDocs: facts, numbered figures and equations, citations.

``mkdocs-macros`` loads :func:`define_env`; the MkDocs hooks that copy figures and MathJax
into the site are in :mod:`vitbook.site.hooks`. Nothing here knows about ViTs.

In a page (``docs/NN-slug.md``):

* ``{{ ch02.tokens_p16 }}`` prints a computed fact; an unknown name fails the build;
* ``{{ figure("patch-grids", "Caption ...") }}`` places Figure N.k (light and dark variants);
* ``{% filter equation("patch-count") %} N = HW/P^2 {% endfilter %}`` is numbered Eq. N.k;
* ``{{ ref("patch-grids") }}`` links to a figure or equation by id (``ch05/id`` across pages);
* ``{{ cite("dosovitskiy2021") }}`` cites ``docs/references.bib``; unknown keys fail the build;
* ``{{ cite_box() }}`` ends a chapter with its BibTeX and plain-text citation;
* ``{{ cite_book() }}``, ``{{ cite_chapter(2) }}``, ``{{ cite_figure("ch02/patch-grids") }}``
  give the same citations on any page (the "How to cite" page);
* ``{{ term("class token") }}`` links a term to its glossary entry; a missing entry fails.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import markdown

CHAPTER_RE = re.compile(r"^(\d\d)-[a-z0-9-]+\.md$")
LABEL_RE = re.compile(r"""\b(figure|equation)\(\s*["']([a-z0-9/-]+)["']""")


class BookError(Exception):
    """A page refers to something that does not exist: the build must fail."""


class Fact:
    """A computed number: prints as its formatted text, ``.value`` is the raw value."""

    def __init__(self, name: str, value: Any, text: str) -> None:
        self.name, self.value, self.text = name, value, text

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return format(self.value, spec) if spec else self.text


class Chapter:
    """The facts of one chapter; a missing name raises instead of printing nothing.

    Not a ``dict``: mkdocs-macros converts dict variables into its own mapping type, which
    would lose the error message below.
    """

    def __init__(self, name: str, facts: dict[str, Any]) -> None:
        self.name = name
        self._facts = {k: Fact(k, f["value"], f["text"]) for k, f in facts.items()}

    def __getattr__(self, key: str) -> Fact:
        if key.startswith("_"):
            raise AttributeError(key)
        return self[key]

    def __getitem__(self, key: str) -> Fact:
        try:
            return self._facts[key]
        except KeyError:
            raise BookError(
                f"unknown fact {self.name}.{key}; known: {', '.join(sorted(self._facts))}"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self._facts

    def __iter__(self):
        return iter(self._facts)

    def keys(self):
        return self._facts.keys()


def load_facts(path: Path) -> dict[str, Chapter]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BookError(f"{path} is missing: run `python -m vitbook figures` first") from None
    return {ch: Chapter(ch, facts) for ch, facts in data.items()}


def chapter_of(src_path: str) -> int | None:
    m = CHAPTER_RE.match(Path(src_path).name)
    return int(m.group(1)) if m else None


@cache
def numbering(docs_dir: str) -> dict[str, tuple[str, str, str]]:
    """Every figure and equation label in the book: ``chNN/id -> (kind, number, page url)``.

    Numbers follow the order in which ``figure(...)`` and ``equation(...)`` appear in each
    chapter's source, so a reference may point forward, or into another chapter.
    """
    labels: dict[str, tuple[str, str, str]] = {}
    for path in sorted(Path(docs_dir).glob("*.md")):
        n = chapter_of(path.name)
        if n is None:
            continue
        counters = {"figure": 0, "equation": 0}
        for kind, label in LABEL_RE.findall(path.read_text(encoding="utf-8")):
            key = label if "/" in label else f"ch{n:02d}/{label}"
            if key in labels:
                raise BookError(f"{path.name}: {kind} {label!r} is placed twice")
            counters[kind] += 1
            labels[key] = (kind, f"{n}.{counters[kind]}", path.stem + "/")
    return labels


@cache
def bibliography(path: str) -> dict[str, dict[str, str]]:
    """A small BibTeX reader: ``key -> fields`` (enough for the book's own references file)."""
    text = Path(path).read_text(encoding="utf-8")
    entries = {}
    for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,(.*?)\n\}", text, re.S):
        fields = {
            k.lower(): re.sub(r"[{}]", "", v).strip()
            for k, v in re.findall(r"(\w+)\s*=\s*[{\"](.*?)[}\"],?\s*$", m.group(3), re.M)
        }
        fields["type"] = m.group(1).lower()
        entries[m.group(2)] = fields
    return entries


def figure_alt(docs_dir: str) -> dict[str, str]:
    """The alt text of every figure, ``chNN/id -> text``, from ``docs/figure-alt.yml``: what
    the figure shows, for a reader who cannot see it (not the caption again)."""
    path = Path(docs_dir) / "figure-alt.yml"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return {}
    return _read_alt(str(path), stamp)


@cache
def _read_alt(path: str, stamp: int) -> dict[str, str]:
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    return {str(k): " ".join(str(v).split()) for k, v in data.items()}


#: Widths (CSS pixels of the image file) of the WebP copies made by vitbook.site.hooks.
WEBP_WIDTHS = (720,)
#: How wide a figure is shown: the whole column on a phone, at most the text column otherwise.
SIZES = "(max-width: 76.1875em) calc(100vw - 2.4rem), 720px"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a PNG, read from its header."""
    head = path.read_bytes()[:24]
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def picture(stem: str, theme: str, alt_text: str, width: int, height: int) -> str:
    """One theme's figure: WebP at two widths for browsers that take it, the PNG otherwise.

    The dark variant names its files in ``data-vb-*`` attributes only, so that a reader in the
    light theme never downloads it; ``docs/javascripts/reader.js`` fills them in when the
    reader switches to the dark theme (and the reverse for the light variant in dark)."""
    widths = [w for w in WEBP_WIDTHS if w < width]
    srcset = ", ".join([f"{stem}.{w}w.webp {w}w" for w in widths] + [f"{stem}.webp {width}w"])
    lazy = "data-vb-" if theme == "dark" else ""
    return (
        f'<picture class="vb-{theme}">'
        f'<source type="image/webp" {lazy}srcset="{srcset}" sizes="{SIZES}">'
        f'<img class="vb-{theme} vb-skip" {lazy}src="{stem}.png" alt="{alt_text}"'
        f' width="{width}" height="{height}" loading="lazy" decoding="async"></picture>'
    )


def plain(text: str) -> str:
    """Markdown reduced to its words (a fallback alt text): no backticks, links or emphasis."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return " ".join(re.sub(r"[`*]", "", text).split())


def anchor(key: str, kind: str) -> str:
    """The HTML id of a figure or equation: ``ch02/patch-grids`` -> ``fig-patch-grids``."""
    return ("fig-" if kind == "figure" else "eq-") + key.split("/", 1)[1]


def define_env(env: Any) -> None:  # noqa: C901 - one closure per macro reads best here
    """Called by mkdocs-macros: register the book's variables, macros and filters."""
    conf = env.conf
    docs_dir = conf["docs_dir"]
    facts_path = Path(env.project_dir) / "figures" / "facts.json"
    env.variables.update(load_facts(facts_path))
    extra = conf.get("extra", {})
    version = extra.get("version", "0")
    site_url = (conf.get("site_url") or "").rstrip("/") + "/"

    def current() -> tuple[int, str]:
        page = env.page
        n = chapter_of(page.file.src_path)
        if n is None:
            raise BookError(f"{page.file.src_path}: figures and equations belong in chapters")
        return n, page.file.src_path

    def resolve(label: str) -> tuple[str, tuple[str, str, str]]:
        key = label
        if "/" not in label:
            n = chapter_of(env.page.file.src_path)
            key = f"ch{n:02d}/{label}" if n is not None else label
        try:
            return key, numbering(docs_dir)[key]
        except KeyError:
            raise BookError(
                f"{env.page.file.src_path}: unknown figure or equation {label!r}"
            ) from None

    def rel(url: str) -> str:
        """A link from the current page to a page url (both directory-style)."""
        here = env.page.url
        depth = here.count("/")
        return "../" * depth + url

    @env.macro
    def figure(label: str, caption: str, alt: str | None = None) -> str:
        """Figure N.k: the light and dark variants, a caption and a link to the SVG.

        On a page that is not a chapter (the landing page), ``label`` must be a full key
        (``ch00/book-map``) and the figure is placed without a number."""
        if chapter_of(env.page.file.src_path) is None:
            if "/" not in label:
                raise BookError(
                    f"{env.page.file.src_path}: outside a chapter, name the figure"
                    f" as chNN/id, not {label!r}"
                )
            key, kind, number = label, "figure", None
        else:
            key, (kind, number, _url) = resolve(label)
        if kind != "figure":
            raise BookError(f"{label!r} is an equation, not a figure")
        stem = f"{rel('')}figures/{key}"
        if not (Path(env.project_dir) / "figures" / f"{key}.png").exists():
            raise BookError(f"figures/{key}.png does not exist: run `python -m vitbook figures`")
        alt_text = html.escape(alt or figure_alt(docs_dir).get(key) or plain(caption), quote=True)
        body = re.sub(r"^<p>|</p>$", "", markdown.markdown(caption).strip())
        cap = f"vb-cap-{anchor(key, kind)}"
        width, height = png_size(Path(env.project_dir) / "figures" / f"{key}.png")
        pictures = "\n".join(
            f'<a class="glightbox vb-{theme}" href="{stem}{suffix}.png" data-type="image"'
            f' data-gallery="vb-{theme}" data-description=".{cap}">'
            + picture(f"{stem}{suffix}", theme, alt_text, width, height)
            + "</a>"
            for theme, suffix in (("light", ""), ("dark", ".dark"))
        )
        return (
            f'<figure class="vb-figure" id="{anchor(key, kind)}">\n{pictures}\n'
            f'<figcaption class="{cap}"><a class="vb-label" href="#{anchor(key, kind)}">'
            f"{f'Figure {number}.' if number else 'Figure.'}</a> {body} "
            f'<span class="vb-svg">(<a href="{stem}.svg">SVG</a>, '
            f'<a href="{stem}.dark.svg">dark SVG</a>)</span></figcaption>\n'
            f"</figure>"
        )

    @env.filter
    def equation(latex: str, label: str) -> str:
        """A numbered display equation with a stable anchor (use as a filter block)."""
        key, (kind, number, _url) = resolve(label)
        if kind != "equation":
            raise BookError(f"{label!r} is a figure, not an equation")
        latex = latex.strip()
        # the number is HTML beside the formula (typeset at build time by vitbook.site.math),
        # so that a narrow screen scales the formula and always shows the number
        return (
            f'<div class="vb-equation" id="{anchor(key, kind)}">'
            f'<div class="arithmatex vb-eq-body">\\[{latex}\\]</div>'
            f'<span class="vb-eq-number">({number})</span></div>'
        )

    @env.macro
    def ref(label: str) -> str:
        """'Figure N.k' or 'Eq. N.k' as a link to it, on this page or another."""
        key, (kind, number, url) = resolve(label)
        name = "Figure" if kind == "figure" else "Eq."
        here = env.page.file.src_path.removesuffix(".md") + "/"
        href = f"#{anchor(key, kind)}" if url == here else f"{rel(url)}#{anchor(key, kind)}"
        return f'<a class="vb-ref" href="{href}">{name}&nbsp;{number}</a>'

    @env.macro
    def cite(*keys: str) -> str:
        """Author-year citations linked to the references page."""
        bib = bibliography(str(Path(docs_dir) / "references.bib"))
        parts = []
        for key in keys:
            if key not in bib:
                raise BookError(
                    f"{env.page.file.src_path}: unknown citation {key!r}; "
                    f"add it to docs/references.bib"
                )
            e = bib[key]
            first = e.get("author", "Anon").split(" and ")[0].split(",")[0].strip()
            etal = " et al." if " and " in e.get("author", "") else ""
            parts.append(
                f'<a class="vb-cite" href="{rel("references/")}#{key}">'
                f"{first}{etal}, {e.get('year', 'n.d.')}</a>"
            )
        return "(" + "; ".join(parts) + ")"

    authors = extra.get("authors", "The vitbook authors")
    book = conf.get("site_name", "vitbook")
    year = extra.get("year", "2026")

    def nav_title(src: str) -> str:
        """A page's title as the navigation gives it (what a chapter page's title is)."""

        def walk(items: Any) -> str | None:
            for item in items or []:
                if isinstance(item, dict):
                    for name, value in item.items():
                        if value == src:
                            return name
                        found = walk(value) if isinstance(value, list) else None
                        if found:
                            return found
            return None

        title = walk(conf.get("nav"))
        if title is None:
            raise BookError(f"{src} is not in the nav of mkdocs.yml")
        return title

    def chapter_citation(
        n: int, src: str, title: str, key: str, note: str = "", anchor_id: str = ""
    ) -> tuple[str, str]:
        """(plain text, BibTeX) citing chapter n, or one figure or equation of it."""
        title = re.sub(r"^\d+\.\s*", "", title)
        url = site_url + src.removesuffix(".md") + "/" + (f"#{anchor_id}" if anchor_id else "")
        bib = (
            f"@incollection{{{key},\n"
            f"  author    = {{{{{authors}}}}},\n"
            f"  title     = {{Chapter {n}: {title}}},\n"
            f"  booktitle = {{{book}}},\n"
            f"  edition   = {{{version}}},\n"
            f"  year      = {{{year}}},\n"
            + (f"  note      = {{{note}}},\n" if note else "")
            + f"  url       = {{{url}}}\n}}"
        )
        what = f"{note}, in Chapter {n}" if note else f"Chapter {n}"
        plain = (
            f"{authors} ({year}). {what}: {title}. In <em>{book}</em> (version {version}). {url}"
        )
        return plain, bib

    def box(heading: str, plain: str, bib: str) -> str:
        return (
            f'!!! quote "{heading}"\n\n'
            f"    {plain}\n\n"
            f"    ```bibtex\n"
            + "\n".join("    " + line for line in bib.splitlines())
            + "\n    ```\n"
        )

    def chapter_src(n: int) -> str:
        found = [p.name for p in Path(docs_dir).glob(f"{n:02d}-*.md")]
        if len(found) != 1:
            raise BookError(f"chapter {n}: expected one docs/{n:02d}-*.md, found {found}")
        return found[0]

    @env.macro
    def cite_box() -> str:
        """The 'Cite this chapter' box: BibTeX and plain text with version and URL."""
        n, src = current()
        plain, bib = chapter_citation(n, src, env.page.title or src, f"vitbook-ch{n:02d}")
        return box("Cite this chapter", plain, bib)

    @env.macro
    def cite_chapter(n: int) -> str:
        """The citation of chapter ``n``, as its own page's box gives it, from any page."""
        src = chapter_src(n)
        plain, bib = chapter_citation(n, src, nav_title(src), f"vitbook-ch{n:02d}")
        return box(f"Citing Chapter {n}", plain, bib)

    @env.macro
    def cite_figure(label: str) -> str:
        """How to cite one figure or equation (``ch02/patch-grids``), with its number and anchor."""
        if "/" not in label:
            raise BookError(f"cite_figure needs a full key such as ch02/patch-grids, not {label!r}")
        try:
            kind, number, url = numbering(docs_dir)[label]
        except KeyError:
            raise BookError(
                f"{env.page.file.src_path}: unknown figure or equation {label!r}"
            ) from None
        n = int(label[2:4])
        src = url.removesuffix("/") + ".md"
        name = ("Figure " if kind == "figure" else "Eq. ") + number
        plain, bib = chapter_citation(
            n,
            src,
            nav_title(src),
            f"vitbook-{anchor(label, kind)}-{number.replace('.', '-')}",
            note=name,
            anchor_id=anchor(label, kind),
        )
        return box(f"Citing {name}", plain, bib)

    @env.macro
    def cite_book() -> str:
        """The citation of the whole book (the same data as ``CITATION.cff``)."""
        bib = (
            f"@book{{vitbook,\n"
            f"  author    = {{{{{authors}}}}},\n"
            f"  title     = {{{book}}},\n"
            f"  edition   = {{{version}}},\n"
            f"  year      = {{{year}}},\n"
            f"  url       = {{{site_url}}}\n}}"
        )
        plain = f"{authors} ({year}). <em>{book}</em> (version {version}). {site_url}"
        return box("Citing the book", plain, bib)

    @env.macro
    def term(text: str, slug: str | None = None) -> str:
        """A glossary term linked to its entry: ``{{ term("class token") }}``; the entry
        (``{ #class-token }`` in ``docs/glossary.md``) must exist or the build fails."""
        slug = slug or re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
        glossary = Path(docs_dir) / "glossary.md"
        ids = set(re.findall(r"\{\s*#([a-z0-9-]+)\s*\}", glossary.read_text(encoding="utf-8")))
        if slug not in ids:
            raise BookError(
                f"{env.page.file.src_path}: no glossary entry #{slug} for {text!r};"
                f" add one to docs/glossary.md"
            )
        return f'<a class="vb-term" href="{rel("glossary/")}#{slug}">{html.escape(text)}</a>'

    @env.macro
    def references() -> str:
        """Every entry of ``docs/references.bib``, each with an anchor that citations link to."""
        bib = bibliography(str(Path(docs_dir) / "references.bib"))
        items = []
        for key, e in sorted(bib.items(), key=lambda kv: kv[1].get("author", kv[0]).lower()):
            venue = e.get("booktitle") or e.get("journal") or e.get("howpublished") or ""
            note = f" {e['note']}." if e.get("note") else ""
            url = e.get("url", "")
            link = f' <a href="{url}">{html.escape(url)}</a>' if url else ""
            items.append(
                f'<li id="{key}"><strong>{html.escape(e.get("author", ""))}</strong> '
                f"({e.get('year', 'n.d.')}). {html.escape(e.get('title', key))}. "
                f"<em>{html.escape(venue)}</em>.{note}{link} "
                f"<code>{key}</code></li>"
            )
        return '<ol class="vb-references">\n' + "\n".join(items) + "\n</ol>"

    env.variables["book_version"] = version


def notebook_sources(nav: Any) -> list[str]:
    """The pages of the nav that are notebooks kept as jupytext percent scripts (``*.py``)."""
    found: list[str] = []

    def walk(items: Any) -> None:
        for item in items or []:
            values = item.values() if isinstance(item, dict) else [item]
            for value in values:
                if isinstance(value, list):
                    walk(value)
                elif isinstance(value, str) and value.endswith(".py"):
                    found.append(value)

    walk(nav)
    return found


def on_post_build(env: Any) -> None:
    """Called by mkdocs-macros after the build: write each notebook page's ``.ipynb`` next to
    the page, for the download button of ``overrides/main.html`` (the reader runs it, so it is
    written without outputs; the page shows them)."""
    import jupytext

    conf = env.conf
    for src in notebook_sources(conf.get("nav")):
        stem = Path(src).stem
        out = Path(conf["site_dir"]) / stem / f"{stem}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        jupytext.write(jupytext.read(Path(conf["docs_dir"]) / src), out)
