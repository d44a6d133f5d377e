"""The book's page machinery, used by MkDocs: facts, numbered figures and equations, citations.

``mkdocs-macros`` loads :func:`define_env`; the MkDocs hooks that copy figures and MathJax
into the site are in :mod:`vitbook.site.hooks`. Nothing here knows about ViTs.

In a page (``docs/NN-slug.md``):

* ``{{ ch02.tokens_p16 }}`` prints a computed fact; an unknown name fails the build;
* ``{{ figure("patch-grids", "Caption ...") }}`` places Figure N.k (light and dark variants);
* ``{% filter equation("patch-count") %} N = HW/P^2 {% endfilter %}`` is numbered Eq. N.k;
* ``{{ ref("patch-grids") }}`` links to a figure or equation by id (``ch05/id`` across pages);
* ``{{ cite("dosovitskiy2021") }}`` cites ``docs/references.bib``; unknown keys fail the build;
  ``{{ citet("xiong2020") }}`` names the authors in the sentence: "Xiong et al. (2020)";
* ``{{ cite_box() }}`` ends a chapter with its BibTeX and plain-text citation;
* ``{{ cite_book() }}``, ``{{ cite_chapter(2) }}``, ``{{ cite_figure("ch02/patch-grids") }}``
  give the same citations on any page (the "How to cite" page);
* ``{{ max_diff(ch06.qkv_max_diff) }}`` prints a largest difference: "exactly 0", or, for a
  rounding error recorded with ``tol=``, the bound "less than 1e-06" (never the value, which
  changes with the CPU); ``{{ below(ch06.fh_row_sum_max_dev) }}`` prints any such rounding-level
  quantity as "below 1e-13";
* ``{{ term("class token") }}`` links a term to its glossary entry; a missing entry fails.

A draft build (``VITBOOK_DRAFT=1 mkdocs build``, never strict) prints a fact or figure that
is not computed yet as a visible placeholder, ``⟨ch01.n_val⟩``, with a warning, so that
prose can be read before the run behind it has finished; ``--strict`` fails on the warning.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import markdown

from vitbook.site import course, editions, provenance

CHAPTER_RE = re.compile(r"^(\d\d)-[a-z0-9-]+\.md$")
LABEL_RE = re.compile(r"""\b(figure|equation|explorer)\(\s*["']([a-z0-9/-]+)["']""")


class BookError(Exception):
    """A page refers to something that does not exist: the build must fail."""


LOG = logging.getLogger("mkdocs.plugins.vitbook")


def pdf_edition() -> bool:
    """This build is printed afterwards (``nox -s pdf`` sets ``VITBOOK_PDF=1``): its chapters
    link the PDFs that will sit beside them. Other builds (``nox -s book``, ``nox -s serve``)
    print none, and link the published book's PDFs instead."""
    return os.environ.get("VITBOOK_PDF") == "1"


def draft() -> bool:
    """A draft build: what is not computed yet is shown as a placeholder and warned about."""
    return os.environ.get("VITBOOK_DRAFT") == "1"


class Fact:
    """A computed number: prints as its formatted text, ``.value`` is the raw value, ``.tol``
    the tolerance it was recorded with (``rec.fact(..., tol=)``), if any.

    A fact of ``figures/facts.json`` (``chapter`` given) prints its text marked with its name
    (:func:`vitbook.site.provenance.mark`), which the page hook turns into a link to its entry
    in the Numbers appendix; ``.text`` is the bare text."""

    def __init__(
        self, name: str, value: Any, text: str, tol: float | None = None, chapter: str | None = None
    ) -> None:
        self.name, self.value, self.text, self.tol, self.chapter = name, value, text, tol, chapter

    def linked(self, text: str) -> str:
        """``text`` (this fact's own, or a bound derived from it) marked as this fact's."""
        return (
            text if self.chapter is None else provenance.mark(f"{self.chapter}.{self.name}", text)
        )

    def __str__(self) -> str:
        return self.linked(self.text)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec) if spec else self.text


class Chapter:
    """The facts of one chapter; a missing name raises instead of printing nothing.

    Not a ``dict``: mkdocs-macros converts dict variables into its own mapping type, which
    would lose the error message below.
    """

    def __init__(self, name: str, facts: dict[str, Any], linked: bool = False) -> None:
        self.name = name
        owner = name if linked else None
        self._facts = {k: Fact(k, f["value"], f["text"], f.get("tol"), owner)
                       for k, f in facts.items()}  # fmt: skip

    def __getattr__(self, key: str) -> Fact:
        if key.startswith("_"):
            raise AttributeError(key)
        return self[key]

    def __getitem__(self, key: str) -> Fact:
        try:
            return self._facts[key]
        except KeyError:
            if draft():
                LOG.warning("draft: fact %s.%s is not computed yet", self.name, key)
                return Fact(key, float("nan"), f"⟨{self.name}.{key}⟩")
            raise BookError(
                f"unknown fact {self.name}.{key}; known: {', '.join(sorted(self._facts))}"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self._facts

    def __iter__(self):
        return iter(self._facts)

    def keys(self):
        return self._facts.keys()


def load_facts(path: Path, linked: bool = True) -> dict[str, Chapter]:
    """The facts of ``figures/facts.json`` by chapter; ``linked``: each prints marked, for the
    page hook to link (:mod:`vitbook.site.provenance`)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BookError(f"{path} is missing: run `python -m vitbook figures` first") from None
    return {ch: Chapter(ch, facts, linked=linked) for ch, facts in data.items()}


def links_numbers(conf: Any) -> bool:
    """Whether the book's page hook runs in this build (it turns the marked numbers into links;
    a project that uses only the macros gets plain numbers)."""
    hooks = conf.get("hooks") or []
    return any(str(h).replace("\\", "/").endswith("vitbook/site/hooks.py") for h in hooks)


def noise_bound(fact: Fact) -> str:
    """The bound a rounding-level fact is printed as: its ``tol=`` ("1e-13"), checked to hold.

    One helper for every page (``max_diff``, ``below``): a quantity at rounding level moves
    with the CPU, so the page prints the bound the fact was recorded with, never its value.
    """
    value = fact.value
    if draft() and isinstance(value, float) and value != value:  # not computed yet
        return fact.text
    if fact.tol is None:
        raise BookError(
            f"{fact.name} is printed as a rounding-level bound but was recorded without tol=;"
            " record it with rec.fact(..., tol=<the bound>)"
        )
    if not abs(value) < fact.tol:
        raise BookError(f"{fact.name} = {value:g} is not below its bound {fact.tol:g}")
    return provenance.bound_text(fact.tol)


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
            kind = "figure" if kind == "explorer" else kind  # an explorer is a numbered figure
            key = label if "/" in label else f"ch{n:02d}/{label}"
            if key in labels:
                raise BookError(f"{path.name}: {kind} {label!r} is placed twice")
            counters[kind] += 1
            labels[key] = (kind, f"{n}.{counters[kind]}", path.stem + "/")
    return labels


def latex_to_text(value: str) -> str:
    """BibTeX field text as a reader sees it: accents decoded (``J{\\'e}gou`` -> Jégou),
    ``\\_`` -> ``_``, the braces that protect capitals dropped."""
    import codecs

    import latexcodec  # noqa: F401 - registers the "ulatex" codec

    text = codecs.decode(value, "ulatex")
    return re.sub(r"\s+", " ", re.sub(r"[{}]", "", text)).strip()


@cache
def bibliography(path: str) -> dict[str, dict[str, Any]]:
    """``docs/references.bib`` read by pybtex: ``key -> fields``, as plain text.

    Every field is a string (``author`` keeps BibTeX's "Last, First and ..." form, decoded);
    ``persons`` lists the authors as ``(last name with its von part, first names)``; ``type``
    is the entry type; ``url`` is left exactly as written. A file that is not valid BibTeX fails
    with pybtex's message, naming the line."""
    from pybtex.database import parse_file
    from pybtex.scanner import PybtexError

    try:
        data = parse_file(path, bib_format="bibtex")
    except PybtexError as exc:
        raise BookError(f"{path}: {exc}") from None
    entries: dict[str, dict[str, Any]] = {}
    for key, entry in data.entries.items():
        fields: dict[str, Any] = {
            k.lower(): (v.strip() if k.lower() == "url" else latex_to_text(v))
            for k, v in entry.fields.items()
        }
        people = entry.persons.get("author", [])
        persons = [
            (
                latex_to_text(" ".join(p.prelast_names + p.last_names)),
                latex_to_text(" ".join(p.first_names + p.middle_names)),
            )
            for p in people
        ]
        if people:
            fields["author"] = " and ".join(
                f"{last}, {first}" if first else last for last, first in persons
            )
        fields["persons"] = persons
        fields["type"] = entry.type.lower()
        entries[key] = fields
    return entries


def short_authors(entry: dict[str, Any]) -> str:
    """Authors as an author-year citation names them: "Smith", "Smith & Jones", "Smith et al."."""
    names = [last for last, _first in entry.get("persons", [])] or [
        entry.get("author", "Anon").split(",")[0].strip()
    ]
    if len(names) == 2:
        return f"{names[0]} &amp; {names[1]}"
    return names[0] + (" et al." if len(names) > 2 else "")


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
WEBP_WIDTHS = (720, 1080)
#: How wide a figure is shown: the whole column on a phone, at most the text column otherwise.
SIZES = "(max-width: 76.1875em) calc(100vw - 2.4rem), 720px"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of a PNG, read from its header."""
    head = path.read_bytes()[:24]
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


#: Screens this narrow get a figure's phone variant (``<id>.phone.png``, drawn 3.8 in wide with
#: larger text); wider screens, and print, the desktop one. Material's own phone breakpoint.
PHONE_MEDIA = "screen and (max-width: 44.9375em)"
#: Words of a caption that place a panel ("Left:", "(middle)", "left against", "on the left,"):
#: right for the desktop figure, not for its phone variant, laid out in fewer columns.
_PLACES_RE = re.compile(r"\b(?:left|right|middle)\b(?=:|\)| against|,)|\bon the left\b", re.I)


def phone_note(caption: str) -> str:
    """A sentence shown with the phone variant only (``vb-phone-note``, docs/stylesheets/
    book.css) when the caption places panels left and right: empty otherwise."""
    if not _PLACES_RE.search(caption):
        return ""
    return (
        '<span class="vb-phone-note">On a phone the panels are laid out again in reading '
        "order: left comes before right, top before bottom.</span> "
    )


def picture(
    stem: str,
    theme: str,
    alt_text: str,
    width: int,
    height: int,
    phone: tuple[str, int, int] | None = None,
) -> str:
    """One theme's figure: WebP at two widths for browsers that take it, the PNG otherwise;
    with ``phone = (stem, width, height)``, the phone variant first for narrow screens
    (:data:`PHONE_MEDIA`), as WebP and PNG.

    The dark variant names its files in ``data-vb-*`` attributes only, so that a reader in the
    light theme never downloads it; ``docs/javascripts/reader.js`` fills them in when the
    reader switches to the dark theme (and the reverse for the light variant in dark)."""
    widths = [w for w in WEBP_WIDTHS if w < width]
    srcset = ", ".join([f"{stem}.{w}w.webp {w}w" for w in widths] + [f"{stem}.webp {width}w"])
    lazy = "data-vb-" if theme == "dark" else ""
    sources = ""
    if phone is not None:
        pstem, pw, ph = phone
        pwidths = [w for w in WEBP_WIDTHS if w < pw]
        pset = ", ".join([f"{pstem}.{w}w.webp {w}w" for w in pwidths] + [f"{pstem}.webp {pw}w"])
        for kind, files in (("webp", pset), ("png", f"{pstem}.png {pw}w")):
            sources += (
                f'<source media="{PHONE_MEDIA}" type="image/{kind}" {lazy}srcset="{files}"'
                f' sizes="{SIZES}" width="{pw}" height="{ph}">'
            )
    return (
        f'<picture class="vb-{theme}">{sources}'
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


def frozen_summary(folder: Path) -> Chapter:
    """What ``docs/building.md`` says of the frozen runs, computed from ``frozen/``: how many,
    their size and seconds, and how the per-commit rotation splits them (the plan of
    ``python -m vitbook verify --runs --shard auto`` with its defaults)."""
    from vitbook.engine import frozen
    from vitbook.engine.cli import SHARD_BUDGET_S
    from vitbook.engine.verify import plan_shards

    records = [r for p in sorted(folder.glob("*/*.json")) if (r := frozen.read_record(p))]
    rotation = [r for r in records if r.get("seconds", 0.0) <= SHARD_BUDGET_S]
    size = sum(p.stat().st_size for p in folder.glob("*/*") if p.is_file())
    long_by_fn: dict[str, int] = {}
    for r in records:
        if r.get("seconds", 0.0) > SHARD_BUDGET_S:
            fn = r["run"].rsplit(".", 1)[-1]
            long_by_fn[fn] = long_by_fn.get(fn, 0) + 1
    long_kinds = ", ".join(f"{n} of `{fn}`" for fn, n in sorted(long_by_fn.items()))
    values = {
        "runs": (len(records), f"{len(records):,}"),
        "mb": (size / 1e6, f"{size / 1e6:.1f}"),
        "portable": (sum(bool(r.get("portable")) for r in records), None),
        "rotation_runs": (len(rotation), None),
        "long_runs": (len(records) - len(rotation), None),
        "long_kinds": (len(long_by_fn), long_kinds or "none"),
        "rotation_shards": (len(plan_shards(rotation, SHARD_BUDGET_S, 2)), None),
        "shard_budget": (SHARD_BUDGET_S, None),
        "hours": (sum(r.get("seconds", 0.0) for r in records) / 3600, None),
    }
    facts = {k: {"value": v, "text": t if t is not None else (f"{v:.1f}" if isinstance(v, float)
                                                              else f"{v:,}")}
             for k, (v, t) in values.items()}  # fmt: skip
    return Chapter("frozen", facts)


def runner_summary(root: Path) -> Chapter:
    """What ``docs/building.md`` says of the workflows on a runner, read from the rehearsal of
    the check job (``.ci/rehearsal.json``) and the jobs' comments (:mod:`vitbook.site.runner`);
    empty (so a page that prints from it fails) in a project without a rehearsal."""
    from vitbook.site import runner

    try:
        record = runner.rehearsal(root)
    except (OSError, ValueError):
        return Chapter("runner", {})
    check = runner.job_estimates(Path(root) / ".github" / "workflows" / "ci.yml")["check"]
    cpu = record.get("cpu_seconds")
    compute = runner.estimate_minutes(record)
    values = {
        "wall_min": (record["seconds"] / 60, f"{record['seconds'] / 60:.0f}"),
        "cpu_min": (cpu or 0.0, f"{cpu / 60:.1f}" if cpu is not None else "(not measured)"),
        "compute_min": (compute, f"{compute:.1f}"),
        "load": (record["load_after"], f"{record['load_after']:.0f}"),
        "cpus": (record["cpus"], f"{record['cpus']}"),
        "commit": (0, record["commit"][:7]),
        "date": (0, record["date"]),
        "check_min": (check, f"{check}"),
    }
    return Chapter("runner", {k: {"value": v, "text": t} for k, (v, t) in values.items()})


def runner_tables(root: Path) -> tuple[str, str]:
    """Markdown tables: the check job's rehearsed steps with their seconds, and every job of
    every workflow with its expected time on a runner."""
    from vitbook.site import runner

    try:
        steps = runner.rehearsal(root)["steps"]
    except (OSError, ValueError):
        steps = []  # the page prints no steps then (and says so); the jobs' table still
    rows = ["| Step of `check` | Here: wall s | Here: CPU s |", "|---|--:|--:|"]
    for st in steps:
        name = st["name"] if st["kind"] == "run" else f"`{st['name']}` (a stand-in here)"
        cpu = st.get("cpu_seconds")
        rows.append(f"| {name} | {st['seconds']:.0f} | {'—' if cpu is None else f'{cpu:.0f}'} |")
    jobs = ["| Workflow | Job | Expected on a 2-core runner |", "|---|---|---|"]
    for path in sorted((Path(root) / ".github" / "workflows").glob("*.yml")):
        for job, minutes in runner.job_estimates(path).items():
            when = "under 1 min" if minutes == 0 else f"about {minutes} min"
            jobs.append(f"| `{path.name}` | `{job}` | {when} |")
    return "\n".join(rows), "\n".join(jobs)


def define_env(env: Any) -> None:  # noqa: C901 - one closure per macro reads best here
    """Called by mkdocs-macros: register the book's variables, macros and filters."""
    conf = env.conf
    docs_dir = conf["docs_dir"]
    facts_path = Path(env.project_dir) / "figures" / "facts.json"
    env.variables.update(load_facts(facts_path, linked=links_numbers(conf)))
    env.variables["frozen"] = frozen_summary(Path(env.project_dir) / "frozen")
    course.define(env, Chapter)  # the syllabus's compute, deck and assignment links
    env.variables["runner"] = runner_summary(Path(env.project_dir))
    # False before the first `nox -s rehearse` (tests/test_workflows.py fails then): the page
    # says that no rehearsal is recorded instead of failing the build
    env.variables["runner_recorded"] = (Path(env.project_dir) / ".ci" / "rehearsal.json").is_file()

    @env.macro
    def runner_steps() -> str:
        """The check job's steps as rehearsed here (docs/building.md)."""
        return runner_tables(Path(env.project_dir))[0]

    @env.macro
    def runner_jobs() -> str:
        """Every workflow job's expected time on a runner (docs/building.md)."""
        return runner_tables(Path(env.project_dir))[1]

    extra = conf.get("extra", {})
    ed = editions.current(Path(env.project_dir), conf)
    version = ed.edition or ed.version
    env.variables["edition"] = ed.as_dict()

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
        if not (Path(env.project_dir) / "figures" / f"{key}.png").exists() and draft():
            LOG.warning("draft: figure %s is not drawn yet", key)
            return f"<p><strong>⟨figure {key}: not drawn yet⟩</strong> {caption}</p>"
        if not (Path(env.project_dir) / "figures" / f"{key}.png").exists():
            raise BookError(f"figures/{key}.png does not exist: run `python -m vitbook figures`")
        alt_text = html.escape(
            provenance.unmark(alt or figure_alt(docs_dir).get(key) or plain(caption)), quote=True
        )
        body = re.sub(r"^<p>|</p>$", "", markdown.markdown(caption).strip())
        cap = f"vb-cap-{anchor(key, kind)}"
        width, height = png_size(Path(env.project_dir) / "figures" / f"{key}.png")
        phone_png = Path(env.project_dir) / "figures" / f"{key}.phone.png"
        if not phone_png.exists():
            raise BookError(
                f"figures/{key}.phone.png does not exist: run `python -m vitbook figures`"
            )
        pw, ph = png_size(phone_png)
        pictures = "\n".join(
            f'<a class="glightbox vb-{theme}" href="{stem}{suffix}.png" data-type="image"'
            f' data-gallery="vb-{theme}" data-description=".{cap}">'
            + picture(
                f"{stem}{suffix}",
                theme,
                alt_text,
                width,
                height,
                phone=(f"{stem}.phone{suffix}", pw, ph),
            )
            + "</a>"
            for theme, suffix in (("light", ""), ("dark", ".dark"))
        )
        return (
            f'<figure class="vb-figure" id="{anchor(key, kind)}">\n{pictures}\n'
            f'<figcaption class="{cap}"><a class="vb-label" href="#{anchor(key, kind)}">'
            f"{f'Figure {number}.' if number else 'Figure.'}</a> {body} {phone_note(caption)}"
            f'<span class="vb-svg">(<a href="{stem}.svg">SVG</a>, '
            f'<a href="{stem}.dark.svg">dark SVG</a>)</span></figcaption>\n'
            f"</figure>"
        )

    @env.macro
    def explorer(label: str, caption: str, alt: str | None = None) -> str:
        """An interactive figure: the static figure (what print, search and readers without
        JavaScript get) inside ``<div class="vb-explorer">``, which
        ``docs/javascripts/explorers/index.js`` turns into the explorer
        ``docs/javascripts/explorers/chNN-<id>.js`` fed with ``figures/chNN/<id>.explorer.bin``.
        It is numbered as a figure; the figure item must export explorer data."""
        key, _ = resolve(label)
        data = Path(env.project_dir) / "figures" / f"{key}.explorer.bin"
        if not data.exists():
            raise BookError(
                f"{env.page.file.src_path}: {data} does not exist: give the figure item an "
                f"@<item>.export function and run `python -m vitbook figures`"
            )
        module = Path(docs_dir) / "javascripts" / "explorers" / f"{key.replace('/', '-')}.js"
        if not module.exists():
            raise BookError(f"{env.page.file.src_path}: explorer {key!r} has no {module}")
        return (
            f'<div class="vb-explorer" data-explorer="{key}" '
            f'data-src="{rel("")}figures/{key}.explorer.bin">\n'
            + figure(label, caption, alt)
            + "\n</div>"
        )

    @env.filter
    def equation(latex: str, label: str) -> str:
        """A numbered display equation with a stable anchor (use as a filter block)."""
        key, (kind, number, _url) = resolve(label)
        if kind != "equation":
            raise BookError(f"{label!r} is a figure, not an equation")
        latex = provenance.unmark(latex).strip()  # a fact inside a formula is plain TeX
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

    def entry(key: str) -> dict[str, Any]:
        bib = bibliography(str(Path(docs_dir) / "references.bib"))
        if key not in bib:
            raise BookError(
                f"{env.page.file.src_path}: unknown citation {key!r}; add it to docs/references.bib"
            )
        return bib[key]

    @env.macro
    def max_diff(fact: Fact) -> str:
        """A largest difference between two computations as a sentence gives it: "exactly 0"
        when they agree bit for bit ("differ by at most 0" says less than it should); for a
        rounding error, recorded with ``tol=``, the bound "less than 1e-06" (see ``below``);
        else "at most 7.6e-08" (the fact's own text)."""
        if not isinstance(fact, Fact):
            raise BookError(f"max_diff takes a fact such as ch06.qkv_max_diff, not {fact!r}")
        if fact.tol is not None:
            return "less than " + fact.linked(noise_bound(fact))
        if fact.value == 0:  # still the fact's number, linked to its provenance
            return "exactly " + fact.linked("0")
        return "at most " + str(fact)  # str(): the marked text (an f-string gives .text)

    @env.macro
    def below(fact: Fact) -> str:
        """A rounding-level quantity as a bound, "below 1e-13", never as its value: the value
        changes with the CPU (other vector paths, other summation orders), the bound does
        not. The bound is the fact's ``tol=``, which the cross-machine check enforces."""
        if not isinstance(fact, Fact):
            raise BookError(f"below takes a fact such as ch06.fh_row_sum_max_dev, not {fact!r}")
        return "below " + fact.linked(noise_bound(fact))

    @env.macro
    def cite(*keys: str) -> str:
        """Author-year citations linked to the references page: "(Xiong et al., 2020)"."""
        parts = []
        for key in keys:
            e = entry(key)
            parts.append(
                f'<a class="vb-cite" href="{rel("references/")}#{key}">'
                f"{short_authors(e)}, {e.get('year', 'n.d.')}</a>"
            )
        return "(" + "; ".join(parts) + ")"

    @env.macro
    def citet(key: str) -> str:
        """A citation that is part of the sentence, "Xiong et al. (2020) show...", for prose
        that names the authors (``cite`` after their names would print them twice)."""
        e = entry(key)
        return (
            f'<a class="vb-cite" href="{rel("references/")}#{key}">'
            f"{short_authors(e)} ({e.get('year', 'n.d.')})</a>"
        )

    authors = extra.get("authors", "The vitbook authors")
    from vitbook.site.config import book_date  # the last commit's date: the same on a rebuild

    urldate = book_date(Path(env.project_dir)).isoformat()
    book = conf.get("site_name", "vitbook")
    year = str(ed.date.year) if ed.edition else extra.get("year", "2026")

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

    def title_of(src: str) -> str:
        """A page's title in the nav, or (a section's index page) its file name."""
        try:
            return nav_title(src)
        except BookError:
            return src.removesuffix(".md")

    def which() -> tuple[str, str, str]:
        """How a citation names this copy: (BibTeX version line, BibTeX note, plain text)."""
        if ed.edition:
            what = f"edition {ed.edition} of {ed.date.isoformat()}" + (
                f", commit {ed.short}" if ed.short else ""
            )
            return (
                f"  version   = {{{ed.edition}}},\n  date      = {{{ed.date.isoformat()}}},\n",
                what[0].upper() + what[1:],
                f"edition {ed.edition} ({ed.date.isoformat()}"
                + (f", commit {ed.short}" if ed.short else "")
                + ")",
            )
        built = f"commit {ed.short}, " if ed.short else ""
        return (
            "",
            f"Latest text, not an edition: {built}built {ed.date.isoformat()}",
            f"latest text, not an edition ({built}built {ed.date.isoformat()})",
        )

    def chapter_citation(
        n: int, src: str, title: str, key: str, note: str = "", anchor_id: str = ""
    ) -> tuple[str, str]:
        """(plain text, BibTeX) citing chapter n, or one figure or equation of it."""
        title = re.sub(r"^\d+\.\s*", "", title)
        url = ed.url + src.removesuffix(".md") + "/" + (f"#{anchor_id}" if anchor_id else "")
        version_line, copy_note, copy_plain = which()
        bib = (
            f"@incollection{{{key},\n"
            f"  author    = {{{{{authors}}}}},\n"
            f"  title     = {{Chapter {n}: {title}}},\n"
            f"  booktitle = {{{book}}},\n"
            f"  publisher = {{Self-published}},\n"
            f"  year      = {{{year}}},\n"
            + version_line
            + f"  note      = {{{note + '; ' if note else ''}{copy_note}}},\n"
            + f"  url       = {{{url}}},\n"
            f"  urldate   = {{{urldate}}}\n}}"
        )
        what = f"{note}, in Chapter {n}" if note else f"Chapter {n}"
        plain = f"{authors} ({year}). {what}: {title}. In <em>{book}</em>, {copy_plain}. {url}"
        return plain, bib

    def stable_hint() -> str:
        """For the latest text: cite an edition instead (or: none exists yet)."""
        if ed.edition:
            return ""
        if ed.previous:
            return (
                f"This is the latest text, which changes with every commit: for a reference "
                f"that does not change, cite an edition, such as the newest, "
                f'<a href="{ed.url_of(ed.previous)}">edition {ed.previous}</a>.'
            )
        return (
            "This is the latest text, which changes with every commit; no edition of the book "
            "has been released yet, so there is no fixed text to cite. Cite this one with its "
            "commit."
        )

    def box(heading: str, plain: str, bib: str) -> str:
        hint = stable_hint()
        return (
            f'!!! quote "{heading}"\n\n'
            f"    {plain}\n\n"
            + (f"    {hint}\n\n" if hint else "")
            + "    ```bibtex\n"
            + "\n".join("    " + line for line in bib.splitlines())
            + "\n    ```\n"
        )

    def chapter_src(n: int) -> str:
        found = [p.name for p in Path(docs_dir).glob(f"{n:02d}-*.md")]
        if len(found) != 1:
            raise BookError(f"chapter {n}: expected one docs/{n:02d}-*.md, found {found}")
        return found[0]

    def printed_here(src: str) -> list[str]:
        """The facts a page's Markdown prints (``ch02.tokens_p16``), in order."""
        return list(provenance.printed_by(Path(docs_dir), {src: src}))

    @env.macro
    def changes_note(n: int | None = None) -> str:
        """What changed in this chapter since the last edition: the commits that touched its
        page, figure modules or notebook (from the history), and the printed numbers whose text
        differs from that edition's ``figures/facts.json``, old and new."""
        if n is None:
            n, src = current()
        else:
            src = chapter_src(n)
        root = Path(env.project_dir)
        since = ed.previous
        if ed.edition and not since:
            return (
                f'!!! note "Changes"\n\n    Edition {ed.edition} is the first edition of the '
                f"book: there is no earlier one to compare it with.\n"
            )
        if not since:
            return (
                '!!! note "Changes"\n\n    No edition of the book has been released yet: this '
                "text will become the first. Each later edition lists here what changed in the "
                "chapter since the one before, and which printed numbers moved.\n"
            )
        this = f"edition {ed.edition}" if ed.edition else "this latest text"
        head = f'??? note "Changes since edition {since}"\n\n'
        if not ed.history:
            return (
                head + f"    This copy was built without the repository's history, so it "
                f"cannot list what changed since edition {since}; see the "
                f"[history]({ed.repo}/commits/{ed.ref}) instead.\n"
            )
        releases = editions.release_commits(root, list(ed.editions))
        commits = [
            c
            for c in editions.log(root, since, editions.chapter_paths(n, root))
            if c.commit not in releases  # "Edition X.Y.Z": the version written, no change
        ]
        lines = [f"    Between edition {since} and {this}:", ""]
        if commits:
            for c in commits:
                subject = html.escape(
                    c.subject if len(c.subject) <= 200 else c.subject[:197] + "..."
                )
                link = (
                    f"[`{c.commit[:7]}`]({ed.repo}/commit/{c.commit})"
                    if ed.repo
                    else f"`{c.commit[:7]}`"
                )
                flag = (
                    " (a correction: see the [errata](" + rel("errata/") + "))" if c.errata else ""
                )
                lines.append(f"    - {c.date} {link}: {subject}{flag}")
        else:
            lines.append("    - no commit touched this chapter's page, figures or notebook.")
        lines.append("")
        old = editions.facts_at(root, since)
        new = json.loads(facts_path.read_text()) if facts_path.exists() else {}
        if old is None:
            lines.append(f"    The numbers of edition {since} are not in this checkout.")
        else:
            moved = editions.changed_numbers(old, new, printed_here(src))
            if not moved:
                lines.append(
                    f"    No number printed in this chapter changed since edition {since}."
                )
            else:
                lines += [
                    "    Printed numbers that changed:",
                    "",
                    f"    | Number | Edition {since} | {this[0].upper() + this[1:]} |",
                    "    |---|---|---|",
                ]
                for name, a, b in moved:
                    entry = f"[`{name}`]({rel(provenance.entry_url(name))})"
                    lines.append(
                        f"    | {entry} | {html.escape(a) if a is not None else '(none)'} | "
                        f"{html.escape(b) if b is not None else '(removed)'} |"
                    )
        return head + "\n".join(lines) + "\n"

    @env.macro
    def cite_box() -> str:
        """The 'Cite this chapter' box: BibTeX and plain text naming this copy (the edition
        with its date, commit and address, or the latest text), after the chapter's note of
        what changed since the last edition."""
        n, src = current()
        plain, bib = chapter_citation(n, src, env.page.title or src, f"vitbook-ch{n:02d}")
        stem = Path(src).stem  # the PDF that `nox -s pdf` prints (vitbook/site/pdf.py)
        pdf = f"ch{stem[:2]}-{stem[3:]}.pdf"
        label = f"edition {ed.edition}" if ed.edition else "the latest text"
        if pdf_edition():
            # this build is printed too (`nox -s pdf`, an edition with its PDF): its PDFs sit
            # beside its pages
            where, note = rel("pdf/"), label
        else:
            # a build that prints nothing links the PDFs of the published copy, and says so
            where = f"{ed.site_url}{ed.path or editions.LATEST}/pdf/"
            note = f"{label}, published copy; this build prints none"
        link = (
            f'<a class="vb-pdf-link" href="{where}{pdf}" type="application/pdf">'
            f"PDF of this chapter</a> ({note}, with the answers in an appendix); "
            f'<a class="vb-pdf-link" href="{where}vitbook.pdf" type="application/pdf">'
            f"the whole book</a>."
        )
        return changes_note(n) + "\n" + box("Cite this chapter", plain, bib) + f"\n    {link}\n"

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
        version_line, copy_note, copy_plain = which()
        bib = (
            f"@book{{vitbook,\n"
            f"  author    = {{{{{authors}}}}},\n"
            f"  title     = {{{book}}},\n"
            f"  publisher = {{Self-published}},\n"
            f"  year      = {{{year}}},\n" + version_line + f"  note      = {{{copy_note}}},\n"
            f"  url       = {{{ed.url}}},\n"
            f"  urldate   = {{{urldate}}}\n}}"
        )
        plain = f"{authors} ({year}). <em>{book}</em>, {copy_plain}. {ed.url}"
        return box("Citing the book", plain, bib)

    @env.macro
    def numbers_appendix(n: int | None = None) -> str:
        """The Numbers appendix (``docs/numbers/``): on chapter ``n``'s page, every fact of the
        chapter, one anchor each, with its provenance and the pages that print it; without
        ``n``, the list of those pages with how many numbers each holds."""
        pages = dict(nav_pages(conf.get("nav")))
        titles = {}
        for src, url in pages.items():
            k = chapter_of(src)
            if k is not None:
                titles[f"ch{k:02d}"] = (f"Chapter {nav_title(src)}", url)
        page_titles = {url: title_of(src) for src, url in pages.items()}
        entries = provenance.ledger(Path(env.project_dir), pages, Path(docs_dir))
        if n is None:
            counts: dict[str, int] = {}
            for e in entries.values():
                counts[e.chapter] = counts.get(e.chapter, 0) + 1
            return "\n".join(
                f"- [{titles.get(ch, (ch, ''))[0]}]({ch}.md): {count} numbers"
                for ch, count in sorted(counts.items())
            )
        return provenance.appendix_html(
            entries, titles, page_titles, ed.repo, ed.commit, rel(""), chapter=f"ch{n:02d}"
        )

    @env.macro
    def errata_list() -> str:
        """The corrections between editions: each commit with an ``Erratum:`` trailer, under
        the edition that first carried it (from the history)."""
        if not ed.history:
            return (
                "This copy was built without the repository's history, so it cannot list the "
                f"corrections; see the [history]({ed.repo}/commits/{ed.ref})."
            )
        groups = editions.errata(Path(env.project_dir), list(ed.editions))
        if not groups:
            return "No correction has been recorded yet."
        out = []
        for version, commits in groups:
            title = (
                f"Corrected in edition {version}" if version else "Corrected since the last edition"
            )
            out.append(f"## {title}\n")
            for c in commits:
                link = (
                    f"[`{c.commit[:7]}`]({ed.repo}/commit/{c.commit})" if ed.repo else c.commit[:7]
                )
                for text in c.errata:
                    out.append(f"- {html.escape(text)} ({c.date}, {link})")
            out.append("")
        return "\n".join(out)

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
        """Every entry of ``docs/references.bib``, each with an anchor that citations link to:
        authors (initials), year, title, venue or how it was published, note, link."""
        bib = bibliography(str(Path(docs_dir) / "references.bib"))

        def names(e: dict[str, Any]) -> str:
            people = []
            for last, first in e.get("persons", []):
                if last.lower() == "others":
                    people.append("et al.")
                    continue
                initials = " ".join(
                    "-".join(part[0] + "." for part in word.split("-") if part)
                    for word in first.split()
                )
                people.append(f"{last}, {initials}" if initials else last)
            if len(people) > 1 and people[-1] != "et al.":
                return ", ".join(people[:-1]) + " and " + people[-1]
            return ", ".join(people).replace(", et al.", " et al.")

        def sentence(text: str) -> str:
            text = text.strip()
            return text if not text or text[-1] in ".?!" else text + "."

        items = []
        order = sorted(bib.items(), key=lambda kv: (kv[1].get("author", kv[0]).lower(), kv[0]))
        for key, e in order:
            venue = e.get("booktitle") or e.get("journal") or e.get("howpublished") or ""
            parts = [
                f"<strong>{html.escape(names(e) or key)}</strong> ({e.get('year', 'n.d.')}).",
                html.escape(sentence(e.get("title", key))),
            ]
            if venue:
                parts.append(f"<em>{html.escape(sentence(venue))}</em>")
            if e.get("note"):
                parts.append(html.escape(sentence(e["note"])))
            url = e.get("url", "")
            if url:
                parts.append(f'<a href="{html.escape(url)}">{html.escape(url)}</a>')
            if e.get("urldate"):
                parts.append(f"(accessed {html.escape(e['urldate'])})")
            items.append(f'<li id="{key}">{" ".join(parts)} <code>{key}</code></li>')
        return '<ol class="vb-references">\n' + "\n".join(items) + "\n</ol>"

    env.variables["book_version"] = version
    env.variables["book_year"] = year


def nav_pages(nav: Any) -> list[tuple[str, str]]:
    """``(source, url)`` of every page of the nav, in its order (``02-patches.md`` ->
    ``02-patches/``; the home page's url is empty)."""
    found: list[tuple[str, str]] = []

    def walk(items: Any) -> None:
        for item in items or []:
            values = item.values() if isinstance(item, dict) else [item]
            for value in values:
                if isinstance(value, list):
                    walk(value)
                elif isinstance(value, str) and "://" not in value:
                    stem = re.sub(r"\.(md|py)$", "", value)
                    stem = "" if stem == "index" else stem.removesuffix("/index")
                    found.append((value, stem + "/" if stem else ""))

    walk(nav)
    return found


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
    the page, for the download button of ``overrides/main.html`` and the latest text's Colab
    button (the reader runs it, so it is written without outputs; the page shows them). Its
    install cell names the commit this site is built from (``notebooks.site_copy``)."""
    from vitbook.site import notebooks

    conf = env.conf
    commit = ((conf.get("extra") or {}).get("edition") or {}).get("commit") or ""
    for src in notebook_sources(conf.get("nav")):
        stem = Path(src).with_suffix("")  # notebooks/ch02-patches: the page's folder
        out = Path(conf["site_dir"]) / stem / f"{stem.name}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(notebooks.site_copy(Path(conf["docs_dir"]) / src, commit), encoding="utf-8")
