"""Slide decks, one per chapter, built with the site from the book's own sources.

A deck's source is ``docs/slides/chNN.yml`` (published beside the deck): the slides of the
chapter's chain of steps, each a title with what it shows, by name: a figure id
(``figures/chNN/<id>.png``, the desktop or phone variant that fills a 16:9 slide best), facts
(``{{ ch05.weight_1 }}``, from ``figures/facts.json``), equation labels (the TeX of the
chapter's ``equation("label")`` block, typeset at build time like the pages), listings
(``vitbook/model.py:attention``, a snippet section, as the pages include them), an explorer of
the chapter, and speaker notes. The goals, the "Check yourself" questions and the summary are
not in the deck file: they are read from the chapter page as MkDocs renders it
(:func:`collect`, called by the page hook), so a deck says what its page says.

The hook's ``on_post_build`` writes ``site/slides/chNN/index.html`` (reveal.js, from npm,
copied into ``site/assets/reveal/``: no request leaves the site) and prints
``site/slides/chNN.pdf`` (16:9, one page per slide) with Chromium through Playwright, from
reveal.js's print view. A deck's PDF is cached by the digest of the deck's HTML, of every file
it shows and of this builder (``.cache/slides/<digest>.pdf``): a change to one chapter's page,
deck file, facts or figures prints that deck again and no other. ``site/slides/manifest.json``
lists each deck's slides, digest and the facts it prints (read by ``tests/test_slides.py``).
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import shutil
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import markdown
import yaml

from vitbook.site import math, provenance

LOG = logging.getLogger("mkdocs.plugins.vitbook")
ROOT = Path(__file__).resolve().parents[2]
BUILDER = Path(__file__)
#: Where the deck files live (under the docs folder: MkDocs publishes them beside the decks,
#: with the stylesheet and script of every deck).
DECK_DIR = "slides"
REVEAL = Path("node_modules/reveal.js")
REVEAL_FILES = ("dist/reset.css", "dist/reveal.css", "dist/reveal.js", "plugin/notes/notes.js",
                "LICENSE")  # fmt: skip
#: A deck has this many slides, from its title to its summary.
MIN_SLIDES, MAX_SLIDES = 15, 25
#: The slide, in CSS pixels (reveal.js scales it to the screen): 16:9.
WIDTH, HEIGHT = 1280, 720
#: Bullets of the page's goals and summary per slide: a class reads three or four long
#: sentences from the back of the room, not six.
GOALS_PER_SLIDE, SUMMARY_PER_SLIDE = 4, 3
#: The box a figure is fitted into on a slide (below the title; with a line of text under it).
FIGURE_BOX = (1200, 585)
FIGURE_BOX_TEXT = (1200, 525)
#: A display formula on a slide: its font size in px at most, the width it may take, the
#: x-height of the font (MathJax sizes its SVG in ex), and the margins around it.
EQ_FONT_PX, EQ_WIDTH_PX, EX_PER_EM, EQ_MARGIN_PX = 44, 1060, 0.545, 38
_HEIGHT_RE = re.compile(r'<svg[^>]*? height="([0-9.]+)ex"')


def equation_size(svg: str) -> tuple[int, int]:
    """The font size (px) a display formula gets on a slide, the largest up to
    :data:`EQ_FONT_PX` at which it fits :data:`EQ_WIDTH_PX`, and the height it then takes."""
    width = math.svg_width_ex(svg) * EX_PER_EM
    font = min(EQ_FONT_PX, int(EQ_WIDTH_PX / width)) if width else EQ_FONT_PX
    m = _HEIGHT_RE.search(svg)
    height = float(m.group(1)) * EX_PER_EM * font if m else font
    return font, round(height) + EQ_MARGIN_PX


CHAPTER_RE = re.compile(r"^(\d\d)-[a-z0-9-]+\.md$")
FACT_RE = re.compile(r"\{\{\s*(ch\d\d)\.(\w+)\s*\}\}")


class SlidesError(Exception):
    """A deck names something that does not exist, or breaks a rule: the build must fail."""


#: The content HTML of each chapter page of this build, before the page hook links its
#: numbers and typesets its formulas (``chapter -> html``), set by :func:`collect`.
PAGES: dict[int, str] = {}


def chapter_of(src: str) -> int | None:
    m = CHAPTER_RE.match(Path(src).name)
    return int(m.group(1)) if m else None


def collect(page_html: str, src_path: str, project: Path = ROOT) -> None:
    """Keep a chapter page's content for its deck (called by the page hook), its numbers as
    spans naming their facts; and a copy under ``.cache/slides/pages/``, from which
    ``python -m vitbook.site.slides`` rebuilds the decks of a built site without building it
    again (while a deck file is being written)."""
    from vitbook.engine import cache

    n = chapter_of(src_path)
    if n is not None:
        PAGES[n] = fact_spans(page_html)
        cache.atomic_write(cache_dir(project) / "pages" / f"ch{n:02d}.html",
                           PAGES[n].encode("utf-8"))  # fmt: skip


# --- what a deck names ------------------------------------------------------------------------


def deck_files(docs: Path) -> dict[int, Path]:
    """``chapter -> docs/slides/chNN.yml`` for every deck file."""
    out = {}
    for path in sorted((docs / DECK_DIR).glob("ch[0-9][0-9].yml")):
        out[int(path.stem[2:])] = path
    return out


def read_deck(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data.get("slides"), list):
        raise SlidesError(f"{path}: a deck file lists its slides under `slides:`")
    return data


def named_facts(deck: dict[str, Any]) -> list[str]:
    """Every fact a deck file names (``ch05.weight_1``), in order, each once."""
    found = [f"{a}.{b}" for a, b in FACT_RE.findall(yaml.safe_dump(deck, sort_keys=False))]
    return list(dict.fromkeys(found))


def spec_slides(deck: dict[str, Any]) -> list[dict[str, Any]]:
    """The deck file's own slides (not the goals, quiz and summary read from the page)."""
    return [s for s in deck["slides"] if isinstance(s, dict)]


def chapter_source(docs: Path, n: int) -> Path:
    found = sorted(docs.glob(f"{n:02d}-*.md"))
    if len(found) != 1:
        raise SlidesError(f"chapter {n}: expected one docs/{n:02d}-*.md, found {found}")
    return found[0]


def equation_tex(source: str, label: str) -> str:
    """The TeX of the chapter's ``{% filter equation("label") %}`` block."""
    m = re.search(
        r"\{%-?\s*filter\s+equation\(\s*[\"']" + re.escape(label) + r"[\"']\s*\)\s*-?%\}"
        r"(.*?)\{%-?\s*endfilter\s*-?%\}",
        source,
        re.S,
    )
    if not m:
        raise SlidesError(f"no equation {label!r} in the chapter")
    return m.group(1).strip()


def snippet(spec: str, root: Path = ROOT) -> str:
    """A listing as the pages include it (``pymdownx.snippets``): ``path:section``, the lines
    between the section's markers, dedented."""
    path, _, section = spec.partition(":")
    file = root / path
    if not file.is_file():
        raise SlidesError(f"listing {spec!r}: {path} does not exist")
    lines = file.read_text(encoding="utf-8").splitlines()
    if not section:
        return "\n".join(lines)
    start = end = None
    for i, line in enumerate(lines):
        if "--8<--" in line and f"[start:{section}]" in line:
            start = i + 1
        elif "--8<--" in line and f"[end:{section}]" in line and start is not None:
            end = i
            break
    if start is None or end is None:
        raise SlidesError(f"listing {spec!r}: no section {section!r} in {path}")
    return textwrap.dedent("\n".join(lines[start:end])).strip("\n")


def page_counts(chapter_md: str) -> dict[str, int]:
    """How many goals, quiz questions and summary points a chapter's Markdown has (what its
    page shows): the slides its deck takes from the page."""
    goals = 0
    m = re.search(r'^!!! abstract "[^"]*"\n((?:    .*\n|\s*\n)+)', chapter_md, re.M)
    if m:
        goals = len(re.findall(r"^    - ", m.group(1), re.M))
    quiz = chapter_md.split("## Check yourself", 1)
    questions = (
        len(re.findall(r"^\?\?\? question", quiz[1].split("\n## ", 1)[0], re.M))
        if len(quiz) == 2
        else 0
    )
    summary = chapter_md.split("\n## Summary", 1)
    points = 0
    if len(summary) == 2:
        body = re.split(r"\n## |\n\{\{ cite_box", summary[1], maxsplit=1)[0]
        points = len(re.findall(r"^- ", body, re.M))
    return {"goals": goals, "quiz": questions, "summary": points}


def chunks(n: int, per: int) -> list[tuple[int, int]]:
    """``n`` items over as few slides as ``per`` allows, spread evenly: (start, stop) each."""
    if n == 0:
        return []
    k = -(-n // per)
    bounds = [round(i * n / k) for i in range(k + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


#: Letters of text per goals or summary slide (a long point gets a slide of its own).
TEXT_BUDGET = 430


def text_length(fragment: str) -> int:
    """Letters a reader sees in an HTML fragment (a formula counts as a few)."""
    fragment = re.sub(r'<span class="arithmatex">.*?</span>', "xxxxx", fragment, flags=re.S)
    return len(" ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split()))


def packed(items: list[str], per: int, budget: int = TEXT_BUDGET) -> list[list[str]]:
    """``items`` over slides in order: at most ``per`` each, and no more than ``budget``
    letters unless one item alone is longer."""
    out: list[list[str]] = []
    size = 0
    for item in items:
        n = text_length(item)
        if not out or len(out[-1]) >= per or size + n > budget:
            out.append([])
            size = 0
        out[-1].append(item)
        size += n
    return out


def planned(deck: dict[str, Any], counts: dict[str, int]) -> list[str]:
    """The kinds of the deck's slides in order: ``title``, then the deck file's entries with
    ``goals``, ``quiz`` and ``summary`` expanded to as many slides as the page gives them."""
    kinds = ["title"]
    for s in deck["slides"]:
        if s == "goals":
            kinds += ["goals"] * len(chunks(counts["goals"], GOALS_PER_SLIDE))
        elif s == "summary":
            kinds += ["summary"] * len(chunks(counts["summary"], SUMMARY_PER_SLIDE))
        elif s == "quiz":
            kinds += ["quiz"] * counts["quiz"]
        elif isinstance(s, dict):
            kinds.append("explorer" if "explorer" in s else "link" if "link" in s else "step")
        else:
            raise SlidesError(f"unknown slide {s!r}: goals, quiz, summary or a mapping")
    return kinds


# --- the page's goals, quiz and summary ---------------------------------------------------------


def fact_spans(text: str) -> str:
    """The page's marked numbers (:func:`vitbook.site.provenance.mark`) as spans naming their
    fact, which the deck's tests read."""
    names = provenance._NAMES  # noqa: SLF001 - the names of the marks made in this process
    return provenance.MARK_RE.sub(lambda m: fact_span(names[int(m.group(1))], m.group(2)), text)


def fact_span(name: str, text: str) -> str:
    return f'<span class="vb-fact" data-fact="{name}">{text}</span>'


def _inner(tag: Any) -> str:
    return "".join(str(c) for c in tag.contents).strip()


def unlink(soup_tag: Any) -> None:
    """Links of the page (glossary terms, cross-references, citations) kept as their text: a
    slide is read from the screen, and their addresses are the page's."""
    for a in soup_tag.find_all("a"):
        a.unwrap()


def page_parts(page_html: str) -> dict[str, Any]:
    """The goals, the quiz and the summary of a chapter page's content HTML."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page_html, "html.parser")
    unlink(soup)
    out: dict[str, Any] = {"goals": [], "quiz": [], "summary": []}
    box = soup.select_one("div.admonition.abstract")
    if box is not None and box.find("ul"):
        out["goals"] = [_inner(li) for li in box.find("ul").find_all("li", recursive=False)]

    def section(hid: str) -> list[Any]:
        h = soup.find("h2", id=hid)
        items = []
        for sib in h.find_next_siblings() if h else []:
            if sib.name == "h2" or (sib.name == "div" and "admonition" in sib.get("class", [])):
                break
            items.append(sib)
        return items

    for el in section("check-yourself"):
        if el.name != "details":
            continue
        title = el.find("summary")
        options = []
        rest = []
        for child in el.children:
            if child is title or getattr(child, "name", None) is None:
                continue
            if child.name == "ul" and not options:
                for li in child.find_all("li", recursive=False):
                    text = _inner(li)
                    m = re.match(r"\[( |x|X|=)\]\s*", text)
                    mark = m.group(1).lower() if m else " "
                    options.append((mark, text[m.end() :] if m else text))
            else:
                rest.append(str(child))
        out["quiz"].append(
            {"title": _inner(title), "options": options, "explanation": "".join(rest)}
        )
    for el in section("summary"):
        if el.name == "ul":
            out["summary"] += [_inner(li) for li in el.find_all("li", recursive=False)]
    return out


# --- rendering -----------------------------------------------------------------------------------


class _Fact:
    def __init__(self, chapter: str, name: str, entry: dict[str, Any], plain: bool) -> None:
        self.name, self.value, self.text = f"{chapter}.{name}", entry["value"], entry["text"]
        self.tol, self.plain = entry.get("tol"), plain

    def shown(self, text: str) -> str:
        return text if self.plain else fact_span(self.name, html.escape(text))

    def __str__(self) -> str:
        return self.text if self.plain else fact_span(self.name, html.escape(self.text))


class _Chapter:
    def __init__(self, name: str, facts: dict[str, Any], plain: bool) -> None:
        self._name, self._facts, self._plain = name, facts, plain

    def __getattr__(self, key: str) -> _Fact:
        if key.startswith("_"):
            raise AttributeError(key)
        if key not in self._facts:
            raise SlidesError(f"unknown fact {self._name}.{key}")
        return _Fact(self._name, key, self._facts[key], self._plain)


def render_text(text: str, facts: dict[str, Any], plain: bool = False) -> str:
    """A deck file's text with its facts filled in (``{{ ch05.weight_1 }}``)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    variables: dict[str, Any] = {ch: _Chapter(ch, f, plain) for ch, f in facts.items()}

    def max_diff(fact: _Fact) -> str:
        """As the pages print a largest difference (vitbook.site.macros.max_diff)."""
        if fact.tol is not None:
            if not abs(fact.value) < fact.tol:
                raise SlidesError(f"{fact.name} = {fact.value} is not below its bound")
            return "less than " + fact.shown(provenance.bound_text(fact.tol))
        if fact.value == 0:
            return "exactly " + fact.shown("0")
        return "at most " + str(fact)

    variables["max_diff"] = max_diff
    try:
        return env.from_string(text).render(**variables)
    except jinja2.UndefinedError as exc:
        raise SlidesError(f"{exc} in {text[:80]!r}") from None


def md(text: str, inline: bool = False) -> str:
    out = markdown.markdown(
        text, extensions=["pymdownx.arithmatex"], extension_configs={
            "pymdownx.arithmatex": {"generic": True}}
    )  # fmt: skip
    return re.sub(r"^<p>|</p>$", "", out.strip()) if inline else out


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def figure_variant(project: Path, key: str, box: tuple[int, int], force: str | None = None) -> str:
    """The light variant of figure ``key`` that shows its pixels largest in ``box`` (so its
    labels are the largest): ``""`` (desktop) or ``".phone"``; ``force`` picks one."""
    options = {"desktop": "", "phone": ".phone"}
    if force:
        return options[force]
    best, scale = "", 0.0
    for suffix in options.values():
        w, h = png_size(project / "figures" / f"{key}{suffix}.png")
        s = min(box[0] / w, box[1] / h)
        if s > scale:
            best, scale = suffix, s
    return best


@dataclass
class Slide:
    kind: str
    title: str
    body: str
    notes: str
    files: list[str] = field(default_factory=list)  # site paths it shows
    center: bool = False  # little to show (a formula, a short listing): centred under the title


@dataclass
class Deck:
    n: int
    title: str
    slides: list[Slide]
    html: str = ""
    digest: str = ""
    files: list[str] = field(default_factory=list)


def pick_lines(code: str, lines: str | None) -> str:
    """``lines`` of a listing (``"1-4, 22-27"``, 1-based, inclusive), a gap marked ``...``."""
    if not lines:
        return code
    all_lines = code.splitlines()
    out: list[str] = []
    for part in str(lines).split(","):
        a, _, b = part.strip().partition("-")
        first, last = int(a), int(b or a)
        if not 1 <= first <= last <= len(all_lines):
            raise SlidesError(f"lines {lines!r}: the listing has {len(all_lines)} lines")
        if out:
            indent = re.match(r" *", all_lines[first - 1]).group(0)
            out.append(f"{indent}...")
        out += all_lines[first - 1 : last]
    return "\n".join(out)


def snippet_lines(entry: dict[str, Any]) -> list[str]:
    """The lines a slide's listing shows."""
    return pick_lines(snippet(entry["listing"]), entry.get("lines")).splitlines()


def _listing(spec: str, lines: str | None) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    code = pick_lines(snippet(spec), lines)
    if len(code.splitlines()) > 16:
        raise SlidesError(
            f"listing {spec!r} has {len(code.splitlines())} lines: a slide shows 16 at most; "
            'give `lines: "first-last, ..."`'
        )
    body = highlight(code, PythonLexer(), HtmlFormatter(nowrap=True))
    return (
        f'<div class="vb-code"><div class="vb-code-title">{html.escape(spec)}</div>'
        f"<pre><code>{body}</code></pre></div>"
    )


def build_deck(
    n: int,
    deck: dict[str, Any],
    parts: dict[str, Any],
    facts: dict[str, Any],
    *,
    project: Path,
    docs: Path,
    chapter_url: str,
    chapter_title: str,
    numbers: dict[str, tuple[str, str, str]],
    alt: dict[str, str],
    published: str = "",
) -> Deck:
    """Chapter ``n``'s deck from its deck file, its page's parts and the facts."""
    ch = f"ch{n:02d}"
    source = chapter_source(docs, n).read_text(encoding="utf-8")
    slides: list[Slide] = []
    up = "../../"

    def number(label: str, kind: str) -> str:
        key = f"{ch}/{label}"
        if key not in numbers or numbers[key][0] != kind:
            raise SlidesError(f"{ch} deck: no {kind} {label!r} in the chapter")
        return numbers[key][1]

    def figure_html(label: str, box: tuple[int, int], variant: str | None, files: list[str]) -> str:
        key = f"{ch}/{label}"
        if not (project / "figures" / f"{key}.png").is_file():
            raise SlidesError(f"{ch} deck: figures/{key}.png does not exist")
        suffix = figure_variant(project, key, box, variant)
        w, h = png_size(project / "figures" / f"{key}{suffix}.png")
        src = f"figures/{key}{suffix}.png"
        files.append(src)
        scale = min(box[0] / w, box[1] / h)
        alt_text = html.escape(provenance.unmark(alt.get(key, label)), quote=True)
        return (
            f'<figure class="vb-slide-figure"><img src="{up}{src}" alt="{alt_text}" '
            f'width="{round(w * scale)}" height="{round(h * scale)}">'
            f"<figcaption>Figure {number(label, 'figure')}</figcaption></figure>"
        )

    def text(value: str) -> str:
        return render_text(value, facts)

    slides.append(
        Slide(
            "title",
            f"Chapter {n}",
            f'<p class="vb-kicker">Chapter {n}</p><h1>{html.escape(chapter_title)}</h1>'
            '<p class="vb-book">Vision Transformers, Computed</p>'
            f'<p class="vb-where">Every figure, number and formula on these slides is the '
            f'chapter&rsquo;s own. Read it at <a href="{up}{chapter_url}" '
            f'data-print-href="{published}{chapter_url}">{html.escape(published or "the book")}'
            f"{chapter_url}</a></p>",
            "<p>" + text(deck.get("notes", "Introduce the chapter.")) + "</p>",
        )
    )
    for entry in deck["slides"]:
        if entry == "goals":
            spans = packed(parts["goals"], GOALS_PER_SLIDE)
            for i, group in enumerate(spans):
                more = f" ({i + 1} of {len(spans)})" if len(spans) > 1 else ""
                items = "".join(f"<li>{g}</li>" for g in group)
                slides.append(
                    Slide(
                        "goals",
                        "After this chapter you can" + more,
                        f'<ul class="vb-list">{items}</ul>',
                        "<p>The chapter's learning goals, as its page states them. Ask which "
                        "one the class finds least familiar, and come back to it at the "
                        "summary.</p>",
                    )
                )
        elif entry == "summary":
            spans = packed(parts["summary"], SUMMARY_PER_SLIDE)
            for i, group in enumerate(spans):
                more = f" ({i + 1} of {len(spans)})" if len(spans) > 1 else ""
                items = "".join(f"<li>{p}</li>" for p in group)
                small = " vb-smaller" if sum(map(text_length, group)) > TEXT_BUDGET else ""
                slides.append(
                    Slide(
                        "summary",
                        "Summary" + more,
                        f'<ul class="vb-list vb-small{small}">{items}</ul>',
                        "<p>The chapter page's summary. Each point names a figure or a "
                        "number the class has seen: ask for it before showing the slide.</p>",
                    )
                )
        elif entry == "quiz":
            for q in parts["quiz"]:
                opts = []
                answer = []
                for mark, opt in q["options"]:
                    if mark == "=":
                        opts.append('<li class="vb-typed">Type your answer (a number).</li>')
                        answer.append(opt)
                        continue
                    cls = ' class="fragment vb-right"' if mark == "x" else ""
                    opts.append(f"<li{cls}>{opt}</li>")
                    if mark == "x":
                        answer.append(opt)
                title = re.sub(r"^\d+\.\s*", "", q["title"])
                slides.append(
                    Slide(
                        "quiz",
                        title,
                        '<p class="vb-kicker">Check yourself</p>'
                        f'<ol class="vb-options" type="A">{"".join(opts)}</ol>',
                        f"<p><strong>Answer:</strong> {'; '.join(answer)}.</p>" + q["explanation"],
                    )
                )
        elif isinstance(entry, dict):
            files: list[str] = []
            kind = "explorer" if "explorer" in entry else "link" if "link" in entry else "step"
            title = text(entry.get("title", ""))
            if not title:
                raise SlidesError(f"{ch} deck: a slide without a title: {entry}")
            body = ""
            points = entry.get("points") or []
            box = FIGURE_BOX_TEXT if points or entry.get("say") else FIGURE_BOX
            if entry.get("equation"):
                labels = entry["equation"]
                labels = [labels] if isinstance(labels, str) else labels
                for label in labels:
                    tex = render_text(equation_tex(source, label), facts, plain=True)
                    tex = math.PHONE_SECTION_RE.split(tex, maxsplit=1)[0]
                    tex = tex.replace(math.BREAK_HINT, " ")
                    svg = math.TYPESETTER.svg(tex, True)
                    font, height = equation_size(svg)
                    box = (box[0], box[1] - height)
                    body += (
                        f'<div class="vb-slide-eq"><div class="vb-slide-eq-body" '
                        f'style="font-size: {font}px">{svg}</div>'
                        f'<span class="vb-eq-number">({number(label, "equation")})</span></div>'
                    )
            if entry.get("figure"):
                body += figure_html(entry["figure"], box, entry.get("variant"), files)
            if entry.get("listing"):
                body += _listing(entry["listing"], entry.get("lines"))
            if kind == "explorer":
                label = entry["explorer"]
                body += figure_html(label, FIGURE_BOX_TEXT, entry.get("variant"), files)
                anchor = f"{chapter_url}#fig-{label}"
                body += (
                    f'<p class="vb-open">Open it: <a href="{up}{anchor}" '
                    f'data-print-href="{published}{anchor}">Figure {number(label, "figure")} '
                    f"in Chapter {n}</a> (it runs in the browser, offline)</p>"
                )
            if kind == "link":
                link = entry["link"]
                if not (project / "docs" / link["source"]).is_file():
                    raise SlidesError(f"{ch} deck: link to docs/{link['source']}, which is missing")
                url = re.sub(r"\.(md|py)$", "/", link["source"])
                if entry.get("figure") is None and link.get("figure"):
                    body += figure_html(link["figure"], FIGURE_BOX_TEXT, None, files)
                body += (
                    f'<p class="vb-open"><a href="{up}{url}" data-print-href="{published}{url}">'
                    f"{html.escape(link['text'])}</a></p>"
                )
            if points:
                items = "".join(f"<li>{md(text(p), inline=True)}</li>" for p in points)
                body += f'<ul class="vb-list">{items}</ul>'
            if entry.get("say"):
                body += f'<p class="vb-say">{md(text(entry["say"]), inline=True)}</p>'
            notes = entry.get("notes")
            if not notes:
                raise SlidesError(f"{ch} deck: slide {title!r} has no speaker notes")
            center = (
                not files
                and len(points) < 3
                and not (entry.get("listing") and len(snippet_lines(entry)) > 6)
            )
            slides.append(Slide(kind, title, body, md(text(notes)), files, center))
    return Deck(n, chapter_title, slides)


def pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".vb-code pre")


def deck_page(deck: Deck, reveal_version: str) -> str:
    sections = []
    for i, s in enumerate(deck.slides):
        heading = "" if s.kind == "title" else f"<h2>{s.title}</h2>"
        sections.append(
            f'<section class="vb-{s.kind}" data-vb-kind="{s.kind}" id="s{i + 1}"'
            + (' data-vb-layout="center"' if s.center else "")
            + f'>{heading}<div class="vb-body">{s.body}</div>'
            f'<aside class="notes">{s.notes}</aside></section>'
        )
    body = math.typeset_page("\n".join(sections))
    body = math.share_glyphs(body)
    title = f"Chapter {deck.n}. {html.escape(deck.title)}: slides"
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="vitbook.site.slides, reveal.js {reveal_version}">\n'
        '<link rel="stylesheet" href="../../assets/reveal/dist/reset.css">\n'
        '<link rel="stylesheet" href="../../assets/reveal/dist/reveal.css">\n'
        '<link rel="stylesheet" href="../../stylesheets/fonts.css">\n'
        '<link rel="stylesheet" href="../slides.css">\n'
        f"<style>{pygments_css()}</style>\n"
        '</head><body><div class="reveal"><div class="slides">\n' + body + "\n</div></div>\n"
        '<script src="../../assets/reveal/dist/reveal.js"></script>\n'
        '<script src="../../assets/reveal/plugin/notes/notes.js"></script>\n'
        '<script src="../slides.js"></script>\n'
        "</body></html>\n"
    )


def builder_digest(docs: Path) -> str:
    """What every deck is made with: this builder, the decks' stylesheet and script, and
    reveal.js's version."""
    h = hashlib.sha256(BUILDER.read_bytes())
    for name in ("slides.css", "slides.js"):
        h.update((docs / DECK_DIR / name).read_bytes())
    h.update(reveal_version(ROOT).encode())
    return h.hexdigest()


def reveal_version(project: Path) -> str:
    pkg = project / REVEAL / "package.json"
    try:
        return json.loads(pkg.read_text())["version"]
    except OSError:
        raise SlidesError(f"{pkg} is missing: run `npm ci` (reveal.js is pinned)") from None


def deck_digest(deck: Deck, site: Path, base: str) -> str:
    """The key of a deck's PDF: its HTML, the bytes of every file it shows, the builder."""
    h = hashlib.sha256(base.encode() + b"\0" + deck.html.encode())
    for f in sorted(set(deck.files)):
        h.update(f.encode() + b"\0" + hashlib.sha256((site / f).read_bytes()).digest())
    return h.hexdigest()


# --- the build ---------------------------------------------------------------------------------


def write_decks(site: Path, project: Path, docs: Path, pages: dict[str, str], *, published: str,
                numbers: dict[str, tuple[str, str, str]], alt: dict[str, str],
                titles: dict[int, str]) -> list[Deck]:  # fmt: skip
    """Write every deck's HTML into ``site/slides/`` and reveal.js into ``site/assets``;
    returns the decks (with their digests)."""
    facts = json.loads((project / "figures" / "facts.json").read_text(encoding="utf-8"))
    version = reveal_version(project)
    base = builder_digest(docs)
    decks = []
    for n, path in deck_files(docs).items():
        if n not in PAGES:  # a project that builds some chapters (the tests' small sites)
            continue
        spec = read_deck(path)
        parts = page_parts(PAGES[n])
        chapter_md = chapter_source(docs, n).read_text(encoding="utf-8")
        counts = page_counts(chapter_md)
        deck = build_deck(
            n, spec, parts, facts, project=project, docs=docs,
            chapter_url=pages[chapter_source(docs, n).name], chapter_title=titles[n],
            numbers=numbers, alt=alt, published=published,
        )  # fmt: skip
        got = {k: sum(s.kind == k for s in deck.slides) for k in ("goals", "quiz", "summary")}
        if got["quiz"] != counts["quiz"] or not got["goals"] or not got["summary"]:
            raise SlidesError(
                f"{path}: {got} slides of goals, quiz and summary; the page has {counts}"
            )
        if not MIN_SLIDES <= len(deck.slides) <= MAX_SLIDES:
            raise SlidesError(
                f"{path}: {len(deck.slides)} slides; a deck has {MIN_SLIDES} to {MAX_SLIDES}"
            )
        deck.html = deck_page(deck, version)
        deck.files = [f for s in deck.slides for f in s.files]
        deck.digest = deck_digest(deck, project, base)
        out = site / DECK_DIR / f"ch{n:02d}" / "index.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(deck.html, encoding="utf-8")
        decks.append(deck)
    # the decks' stylesheet, script and sources (MkDocs copies them too; a rebuild by
    # `python -m vitbook.site.slides` must not print with the site's older copies)
    for path in sorted((docs / DECK_DIR).glob("*")):
        if path.suffix in (".css", ".js", ".yml"):
            shutil.copyfile(path, site / DECK_DIR / path.name)
    reveal = project / REVEAL
    for name in REVEAL_FILES:
        dest = site / "assets" / "reveal" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(reveal / name, dest)
    return decks


def cache_dir(project: Path) -> Path:
    return project / ".cache" / "slides"


def print_decks(site: Path, project: Path, decks: list[Deck], meta: dict[str, str]) -> dict:
    """Each deck's 16:9 PDF into ``site/slides/chNN.pdf``, from the cache when its digest is
    there; printed (Chromium, offline) otherwise. Writes ``site/slides/manifest.json``."""
    import io

    from pypdf import PdfReader

    from vitbook.engine import cache
    from vitbook.site import pdf as printed
    from vitbook.site.local import chromium, serve

    folder = cache_dir(project)
    todo = [d for d in decks if not (folder / f"{d.digest}.pdf").is_file()]
    if todo:
        t0 = time.perf_counter()
        try:
            with serve(site) as base, chromium() as browser:
                context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                              else r.abort())  # fmt: skip
                page = context.new_page()
                for d in todo:
                    page.goto(f"{base}{DECK_DIR}/ch{d.n:02d}/?print-pdf", wait_until="load")
                    page.wait_for_function(
                        "window.Reveal && Reveal.isReady() && "
                        "document.querySelectorAll('.pdf-page').length > 0",
                        timeout=30_000,
                    )
                    page.evaluate("document.fonts.ready.then(() => true)")
                    raw = page.pdf(print_background=True, prefer_css_page_size=True,
                                   tagged=False, outline=False)  # fmt: skip
                    info = dict(meta, **{"/Title": f"Chapter {d.n}: {d.title} (slides)"})
                    blob = printed.normalise(printed.strip_volatile(raw), info)
                    cache.atomic_write(folder / f"{d.digest}.pdf", blob)
                context.close()
        except FileNotFoundError as exc:  # no Chromium here: the decks, without their PDFs
            LOG.info("slides: PDFs not printed (%s)", exc)
            todo = []
        LOG.info("slides: %d decks printed in %.1f s", len(todo), time.perf_counter() - t0)
    manifest: dict[str, Any] = {"decks": {}}
    for d in decks:
        cached = folder / f"{d.digest}.pdf"
        entry = {
            "slides": len(d.slides),
            "kinds": [s.kind for s in d.slides],
            "digest": d.digest,
            "files": sorted(set(d.files)),
            "printed": d in todo,
        }
        if cached.is_file():
            blob = cached.read_bytes()
            (site / DECK_DIR / f"ch{d.n:02d}.pdf").write_bytes(blob)
            reader = PdfReader(io.BytesIO(blob))
            box = reader.pages[0].mediabox
            entry |= {"pdf_pages": len(reader.pages), "pdf_size": [float(box.width),
                                                                   float(box.height)]}  # fmt: skip
        manifest["decks"][f"ch{d.n:02d}"] = entry
    (site / DECK_DIR / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    """Rebuild the decks of a built site from the chapter pages its build kept (for a deck
    file's author: seconds instead of a site build). The site build itself writes them."""
    import argparse
    import sys

    from vitbook.site import hooks
    from vitbook.site.config import mkdocs_config

    ap = argparse.ArgumentParser(prog="python -m vitbook.site.slides", description=main.__doc__)
    ap.add_argument("site", nargs="?", default="site", help="the built site (default: site)")
    args = ap.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").is_file():
        print(f"error: {site} holds no built site: run `mkdocs build` first", file=sys.stderr)
        return 1
    from vitbook.site import slides  # the module the hooks use (this one may be __main__)

    for path in sorted((cache_dir(ROOT) / "pages").glob("ch[0-9][0-9].html")):
        slides.PAGES[int(path.stem[2:])] = path.read_text(encoding="utf-8")
    conf = dict(mkdocs_config())
    conf["docs_dir"] = str(ROOT / conf.get("docs_dir", "docs"))
    conf.setdefault("extra", {})
    decks = hooks.write_slides(conf, site, ROOT)
    hooks.print_slides(conf, site, ROOT, decks)
    for d in decks:
        print(f"  ch{d.n:02d}: {len(d.slides)} slides, {d.digest[:12]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
