"""Every printed number auditable: where each fact of ``figures/facts.json`` comes from.

A page prints a fact with ``{{ ch02.tokens_p16 }}``. The macro does not print bare text: it
prints the text between three private-use characters that name the fact (:func:`mark`), and
after Markdown has made the page's HTML, :func:`link_numbers` turns each marked number into a
link to its entry in the "Numbers" appendix (``numbers/#ch02-tokens_p16``), with the data of a
short card (``docs/javascripts/numbers.js``: hover, focus or tap shows it). Where a link cannot
stand (inside a formula, a listing, an attribute, a question's summary or another link) the
number is printed as plain text.

The card and the appendix say, for each fact (:func:`ledger`):

* its name and printed text;
* the function that computed it, with its file and lines, linked to the source at the commit
  that built the page (the lines are read from the source as it is, not from the manifest,
  which keeps those of the last computation);
* for a result of training, how many seeds, their lowest and highest value (the facts
  ``<name>_lo`` and ``<name>_hi`` that ``vitbook.experiments.stats.record`` records beside the
  mean) and the tolerance across machines;
* whether it is computed (reproduced exactly), trained, measured (a timing) or quoted from a
  source (the table or figure and the source, from ``vitbook.quoted``: the fact's
  ``"quoted"``);
* the CPU capability it was computed on, and for trained results the one the runs were
  trained on (``figures/manifest.json``: ``computed_on``; ``frozen/``: each run's record).

Nothing here knows about ViTs.
"""

from __future__ import annotations

import ast
import html
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

OPEN, MID, CLOSE = "\ue000", "\ue001", "\ue002"
MARK_RE = re.compile(f"{OPEN}(\\d+){MID}(.*?){CLOSE}", re.S)
#: a fact printed by a page's Markdown: ``ch02.tokens_p16`` or ``ch02["tokens_p16"]`` (not its
#: ``.value`` or ``.text``, which print no number of the book's own or no link)
PRINTED_RE = re.compile(
    r"\bch(\d\d)(?:\.([a-z_][a-z0-9_]*)\b|\[\s*[\"']([a-z_][a-z0-9_]*)[\"']\s*\])"
    r"(?!\s*\.(?:value|text)\b)"
)
FIGURES = Path("vitbook") / "figures"

#: Fact names, in the order pages first printed them: a marker carries the index (digits are
#: safe from Markdown, a name with ``_`` is not).
_NAMES: list[str] = []
_IDS: dict[str, int] = {}


def mark(name: str, text: str) -> str:
    """``text`` marked as the printed value of fact ``name`` (``ch02.tokens_p16``)."""
    if name not in _IDS:
        _IDS[name] = len(_NAMES)
        _NAMES.append(name)
    return f"{OPEN}{_IDS[name]}{MID}{text}{CLOSE}"


def unmark(text: str) -> str:
    """``text`` with every marked number reduced to its printed text."""
    return MARK_RE.sub(lambda m: m.group(2), text)


def entry_url(name: str) -> str:
    """Where a fact's entry is, from the site's root: the Numbers page of its chapter."""
    return f"numbers/{name.split('.', 1)[0]}/#{anchor(name)}"


def anchor(name: str) -> str:
    """The id of a fact's Numbers entry: ``ch02.tokens_p16`` -> ``ch02-tokens_p16``."""
    return name.replace(".", "-", 1)


# --- the page: marked numbers become links --------------------------------------------------

_TOKEN_RE = re.compile(r"<!--.*?-->|<[^>]*>", re.S)
_TAG_RE = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)([^>]*?)(/?)>", re.S)
#: elements inside which a number stays plain text: a link there would be invalid (inside
#: another link, or in a summary, which is itself a control) or would break what it is in
PLAIN_IN = {"a", "code", "pre", "summary", "script", "style", "title", "textarea", "button"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


@dataclass
class Linked:
    """What :func:`link_numbers` did to one page."""

    html: str
    linked: list[str] = field(default_factory=list)  # fact names, once per link
    plain: list[str] = field(default_factory=list)  # printed as plain text (see PLAIN_IN)


def link_numbers(page_html: str, numbers_url: str) -> Linked:
    """Turn the marked numbers of a page's HTML into links to their entries, on the Numbers
    page of their chapter (``numbers_url`` is the way to the site's root + ``numbers/``).

    A number inside a formula (``class="arithmatex"``), a listing, a summary, a link or an
    attribute is printed as plain text; one inside a summary keeps a ``data-vb-fact`` span so
    that a test can tell it was printed there on purpose."""
    out: list[str] = []
    result = Linked("")
    stack: list[str] = []  # open elements that forbid links (tag names, "math" for formulas)
    pos = 0

    def text_part(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            name = _NAMES[int(m.group(1))]
            shown = m.group(2)
            if stack:
                result.plain.append(name)
                if stack[-1] == "summary":
                    return f'<span class="vb-num-plain" data-vb-fact="{name}">{shown}</span>'
                return unmark(shown)
            result.linked.append(name)
            return (
                f'<a class="vb-num" href="{numbers_url}{name.split(".", 1)[0]}/#{anchor(name)}" '
                f'data-vb-fact="{name}">{unmark(shown)}</a>'
            )

        return MARK_RE.sub(one, text)

    for tok in _TOKEN_RE.finditer(page_html):
        out.append(text_part(page_html[pos : tok.start()]))
        raw = tok.group(0)
        pos = tok.end()
        if OPEN in raw:  # in an attribute (alt text, a title): plain text
            result.plain.extend(_NAMES[int(i)] for i in re.findall(f"{OPEN}(\\d+){MID}", raw))
            raw = unmark(raw)
        out.append(raw)
        m = _TAG_RE.match(raw)
        if not m or raw.startswith("<!"):
            continue
        closing, tag, attrs, selfclose = m.group(1), m.group(2).lower(), m.group(3), m.group(4)
        if tag in VOID or selfclose:
            continue
        if not closing:
            if tag in PLAIN_IN:
                stack.append(tag)
            elif re.search(r'class="[^"]*\barithmatex\b', attrs):
                stack.append("math:" + tag)
            elif stack and stack[-1].startswith("math:"):
                stack.append("math:" + tag)
        else:
            if stack and (stack[-1] == tag or stack[-1] == "math:" + tag):
                stack.pop()
    out.append(text_part(page_html[pos:]))
    result.html = "".join(out)
    return result


# --- where each fact comes from -------------------------------------------------------------


def _decorated_items(path: Path) -> dict[str, dict[str, Any]]:
    """``id -> {function, lines}`` for every ``@figure(id=...)``/``@facts(id=...)`` function of a
    chapter module, read from its syntax tree (no import: the site does not load torch)."""
    found: dict[str, dict[str, Any]] = {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for dec in node.decorator_list:
            if not isinstance(dec, ast.Call):
                continue
            name = (
                dec.func.attr
                if isinstance(dec.func, ast.Attribute)
                else getattr(dec.func, "id", "")
            )
            if name not in ("figure", "facts"):
                continue
            for kw in dec.keywords:
                if kw.arg == "id" and isinstance(kw.value, ast.Constant):
                    first = min(d.lineno for d in node.decorator_list)
                    found[str(kw.value.value)] = {
                        "function": node.name,
                        "lines": [first, node.end_lineno or node.lineno],
                    }
    return found


@cache
def _sources(root: str) -> dict[str, dict[str, Any]]:
    """``chNN/id -> {file, function, lines}`` for every registered item, from the sources."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((Path(root) / FIGURES).glob("ch[0-9][0-9]_*.py")):
        chapter = path.name[:4]
        for item_id, where in _decorated_items(path).items():
            out[f"{chapter}/{item_id}"] = {"file": (FIGURES / path.name).as_posix(), **where}
    return out


def _capability(on: dict[str, Any] | None) -> str | None:
    if not on:
        return None
    cap = str(on.get("capability", "unknown"))
    paths = on.get("paths")
    return f"{cap} ({paths} paths)" if paths else cap


@cache
def _run_capabilities(root: str) -> dict[tuple[str, str], str]:
    """``(run, slug) -> capability`` of every frozen run's record (what it was trained on)."""
    out: dict[tuple[str, str], str] = {}
    for path in sorted((Path(root) / "frozen").glob("*/*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        cap = _capability(record.get("computed_on"))
        if cap:
            out[(path.parent.name, path.stem)] = cap
    return out


def bound_text(tol: float) -> str:
    """The bound a rounding-level fact is printed as, from its ``tol=``: 1e-05 -> "1e-5"."""
    mantissa, exponent = f"{tol:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


#: What the Numbers appendix says of a rounding-level fact (a computed one with ``tol=``), true
#: whether or not a page prints it; the card of a printed one says so in its own words
#: (docs/javascripts/numbers.js).
ROUNDING_TEXT = (
    "a rounding error: its last digits change with the CPU, so a page that prints it prints a"
    " bound, below {}"
)


@dataclass
class Entry:
    """One fact with its provenance (what a card and the Numbers appendix show)."""

    name: str  # ch02.tokens_p16
    text: str
    item: str  # ch02/patch-grids
    kind: str  # "computed", "trained", "measured" or "quoted"
    function: str | None = None
    file: str | None = None
    lines: list[int] | None = None
    seeds: int | None = None
    tol: float | None = None
    low: str | None = None
    high: str | None = None
    cpu: str | None = None
    trained_on: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)  # site urls of the pages that print it
    quoted: str | None = None  # for a quoted number: its table or figure and its source

    @property
    def chapter(self) -> str:
        return self.name.split(".", 1)[0]

    def card(self) -> dict[str, Any]:
        """The compact record a page carries for its card (``docs/javascripts/numbers.js``)."""
        out: dict[str, Any] = {"t": self.text, "k": self.kind, "i": self.item}
        if self.quoted:
            out["q"] = self.quoted
        if self.function:
            out["f"], out["p"], out["l"] = self.function, self.file, self.lines
        if self.seeds:
            out["s"] = self.seeds
        if self.low is not None and self.high is not None:
            out["r"] = [self.low, self.high]
        if self.tol is not None and self.kind == "trained":
            out["tol"] = f"{self.tol:.4g}"
        elif self.tol is not None:
            out["b"] = bound_text(self.tol)
        if self.cpu:
            out["c"] = self.cpu
        if self.trained_on:
            out["tc"] = ", ".join(self.trained_on)
        return out


def _kind(fact: dict[str, Any], entry: dict[str, Any]) -> str:
    if fact.get("quoted"):
        return "quoted"
    if fact.get("measured") or entry.get("deterministic") is False:
        return "measured"
    if entry.get("trained") or fact.get("seeds"):
        return "trained"
    return "computed"


def printed_by(docs_dir: Path, pages: dict[str, str]) -> dict[str, list[str]]:
    """``fact name -> [page url, ...]``: which pages' Markdown prints each fact (``pages``:
    ``src path -> url``, in the order of the navigation)."""
    out: dict[str, list[str]] = {}
    for src, url in pages.items():
        path = docs_dir / src
        if path.suffix != ".md" or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for m in PRINTED_RE.finditer(text):
            name = f"ch{m.group(1)}.{m.group(2) or m.group(3)}"
            if url not in out.setdefault(name, []):
                out[name].append(url)
    return out


def ledger(
    root: Path, pages: dict[str, str] | None = None, docs_dir: Path | None = None
) -> dict[str, Entry]:
    """Every fact of ``figures/facts.json`` with its provenance, ``name -> Entry``, in the
    order of chapters and of the manifest's items."""
    root = Path(root)
    manifest = _read_json(root / "figures" / "manifest.json")
    sources = _sources(str(root))
    runs = _run_capabilities(str(root))
    printed = printed_by(docs_dir or root / "docs", pages or {}) if pages is not None else {}
    entries: dict[str, Entry] = {}
    for key in sorted(manifest):
        entry = manifest[key]
        facts = entry.get("facts", {})
        where = sources.get(key) or entry.get("source") or {}
        trained_on = sorted(
            {
                runs[(c["run"], c["slug"])]
                for c in entry.get("consumed", [])
                if (c.get("run"), c.get("slug")) in runs
            }
        )
        for name, fact in sorted(facts.items()):
            full = f"{key.split('/')[0]}.{name}"
            e = Entry(
                name=full,
                text=str(fact.get("text", "")),
                item=key,
                kind=_kind(fact, entry),
                function=where.get("function"),
                file=where.get("file"),
                lines=list(where["lines"]) if where.get("lines") else None,
                seeds=fact.get("seeds"),
                tol=fact.get("tol"),
                cpu=_capability(entry.get("computed_on")),
                trained_on=trained_on,
                pages=printed.get(full, []),
                quoted=fact.get("quoted"),
            )
            entries[full] = e
    # the spread over seeds: the _lo and _hi facts recorded beside a mean
    for name, e in entries.items():
        if not e.seeds:
            continue
        base = re.sub(r"_(lo|hi)$", "", name)
        lo, hi = entries.get(base + "_lo"), entries.get(base + "_hi")
        if lo is not None and hi is not None:
            e.low, e.high = lo.text, hi.text
    return entries


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


# --- what a page carries, and the appendix ----------------------------------------------------


def source_url(repo: str, commit: str, e: Entry) -> str | None:
    """The fact's function at ``commit`` on GitHub, its lines highlighted."""
    if not (e.file and e.lines and repo and commit):
        return None
    a, b = e.lines
    return f"{repo.rstrip('/')}/blob/{commit}/{e.file}#L{a}-L{b}"


def page_data(
    names: list[str], entries: dict[str, Entry], repo: str, commit: str, numbers_url: str
) -> str:
    """The ``<template id="vb-numbers-data">`` a page carries for its cards: the facts it
    links, each once, as JSON. A template, not a ``<script type="application/json">``:
    Material's instant navigation re-creates the scripts of the page it loads from their text
    alone, so a JSON script would run as JavaScript (a syntax error) and lose its id; a
    template's text is inert and travels with the page (and the search index leaves it out:
    ``data-search-exclude``)."""
    facts = {n: entries[n].card() for n in dict.fromkeys(names) if n in entries}
    data = {
        "src": f"{repo.rstrip('/')}/blob/{commit}/" if repo and commit else "",
        "numbers": numbers_url,
        "facts": facts,
    }
    text = html.escape(json.dumps(data, ensure_ascii=False, separators=(",", ":")), quote=False)
    return f'<template id="vb-numbers-data" data-search-exclude>{text}</template>'


KIND_TEXT = {
    "computed": "Computed",
    "trained": "Trained",
    "measured": "Measured (a timing)",
    "quoted": "Quoted",
}


def appendix_html(
    entries: dict[str, Entry],
    titles: dict[str, tuple[str, str]],
    page_titles: dict[str, str],
    repo: str,
    commit: str,
    rel: str,
    chapter: str | None = None,
) -> str:
    """The Numbers appendix: every fact by chapter (only ``chapter``'s, without a heading, for
    its own page), one anchor each, with its provenance and the pages that print it.
    ``titles``: ``chNN -> (heading, page url)``; ``page_titles``: ``url -> title``; ``rel``:
    the way from the appendix's page to the site's root."""
    esc = html.escape
    by_chapter: dict[str, list[Entry]] = {}
    for e in entries.values():
        if chapter is None or e.chapter == chapter:
            by_chapter.setdefault(e.chapter, []).append(e)
    parts = []
    for chapter_key in sorted(by_chapter):
        heading, _url = titles.get(chapter_key, (chapter_key, ""))
        rows = []
        for e in sorted(by_chapter[chapter_key], key=lambda e: e.name):
            bits = [f"<strong>{KIND_TEXT[e.kind]}</strong>"]
            if e.quoted:
                bits[0] += f" from {esc(e.quoted)}"
            if e.function:
                url = source_url(repo, commit, e)
                fn = f"<code>{esc(e.function)}()</code>"
                fn = f'<a href="{esc(url)}">{fn}</a>' if url else fn
                verb = "recorded by" if e.quoted else "by"
                where = f"<code>{esc(e.file or '')}</code>, lines {e.lines[0]}–{e.lines[1]}"
                bits.append(f"{verb} {fn} in {where}")
            bits.append(f"item <code>{esc(e.item)}</code>")
            tol = f"another CPU may move it by up to {e.tol:.4g}" if e.tol is not None else ""
            if e.seeds:
                spread = (
                    f", lowest {esc(e.low)}, highest {esc(e.high)}" if e.low is not None else ""
                )
                bits.append(f"over {e.seeds} seeds{spread}" + (f"; {tol}" if tol else ""))
            elif tol and e.kind == "trained":
                bits.append(tol)
            elif e.tol is not None:
                bits.append(ROUNDING_TEXT.format(bound_text(e.tol)))
            if e.kind != "quoted":  # a quoted number was not computed on any CPU
                bits.append(f"CPU: {esc(e.cpu)}" if e.cpu else "CPU: not recorded by this build")
            if e.trained_on:
                bits.append(f"runs trained on: {esc(', '.join(e.trained_on))}")
            if e.pages:
                links = ", ".join(
                    f'<a href="{rel}{esc(u)}">{esc(page_titles.get(u, u))}</a>' for u in e.pages
                )
                bits.append(f"printed in {links}")
            else:
                bits.append("printed on no page (recorded for the tests or the figures)")
            rows.append(
                f'<div class="vb-fact" id="{anchor(e.name)}"><p class="vb-fact-head">'
                f'<code class="vb-fact-name">{esc(e.name)}</code> = <span class="vb-fact-value">'
                f"{esc(e.text)}</span></p><p>{'; '.join(bits)}.</p></div>"
            )
        head = "" if chapter else f"## {heading} {{ #numbers-{chapter_key} }}\n\n"
        parts.append(  # a Markdown heading (in the page's contents), then one block of HTML
            f"{head}{len(rows)} numbers.\n\n"
            '<div class="vb-facts">\n' + "\n".join(rows) + "\n</div>\n"
        )
    return "\n".join(parts)
