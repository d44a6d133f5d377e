"""Math typeset at build time: every ``arithmatex`` formula of a page becomes SVG in the HTML.

``pymdownx.arithmatex`` (generic mode) leaves ``<span class="arithmatex">\\(...\\)</span>`` and
``<div class="arithmatex">\\[...\\]</div>`` in a page; :func:`typeset_page` replaces the TeX
inside with MathJax's SVG output (glyphs as paths, the formula as MathML for screen readers), so
a reader's browser needs no math runtime and no JavaScript to see it. MathJax runs in Node
(``mathjax-full``, pinned in ``package.json``), started at most once per build and only when a
formula is not yet in the cache (``.cache/math/<sha256>.html``, keyed by the TeX, display mode
and the MathJax version). A TeX error fails the build.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import re
import subprocess
from pathlib import Path

from vitbook.engine import cache

LOG = logging.getLogger("mkdocs.plugins.vitbook")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("tex2svg.js")
MATH_RE = re.compile(
    r'<(?P<tag>span|div) class="arithmatex(?P<cls>[^"]*)"(?P<attrs>[^>]*)>(?P<tex>.*?)</(?P=tag)>',
    re.S,
)
_DELIMS = {("\\(", "\\)"): False, ("\\[", "\\]"): True, ("$$", "$$"): True, ("$", "$"): False}


class MathError(Exception):
    """A formula MathJax cannot typeset: the build must fail."""


def mathjax_version() -> str:
    pkg = ROOT / "node_modules" / "mathjax-full" / "package.json"
    try:
        return json.loads(pkg.read_text())["version"]
    except OSError:
        raise MathError(f"{pkg} is missing: run `npm ci` (mathjax-full is pinned)") from None


def cache_folder() -> Path:
    return Path(os.environ.get("VITBOOK_MATH_CACHE", ROOT / ".cache" / "math"))


#: ``[`` where TeX would read it as an optional argument: right after ``\begin{aligned}`` or
#: ``\begin{gathered}`` (their vertical position) or after a line break ``\\`` (extra space),
#: unless it is a length such as ``[0.4em]`` or ``[2mm]``.
_ARGUMENT_BRACKET_RE = re.compile(
    r"(\\begin\{(?:aligned|gathered)\}|\\\\)(\s*)\[(?!\s*-?[\d.]+\s*[a-z]{2}\s*\])"
)


def guard_brackets(tex: str) -> str:
    r"""``tex`` with an empty group before every ``[`` that MathJax would take as an optional
    argument: ``\begin{aligned}[\mathbf{t}_i]_f = ...`` would lose ``[\mathbf{t}_i]`` from
    the formula (it sets the block's alignment instead), as a phone layout of Eq. 3.2 did."""
    return _ARGUMENT_BRACKET_RE.sub(r"\1{}\2[", tex)


class Typesetter:
    """One Node process for the whole build, started on the first formula not in the cache."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.version = ""
        self.typeset_count = 0
        self.cached_count = 0

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None:
            self.proc = subprocess.Popen(
                ["node", str(SCRIPT)],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc = None

    def svg(self, tex: str, display: bool) -> str:
        tex = guard_brackets(tex)
        if not self.version:
            self.version = mathjax_version()
        key = hashlib.sha256(f"{self.version}\0{int(display)}\0{tex}".encode()).hexdigest()
        path = cache_folder() / key[:2] / f"{key}.html"
        try:
            out = path.read_text(encoding="utf-8")
            self.cached_count += 1
            return out
        except OSError:
            pass
        proc = self._start()
        proc.stdin.write(json.dumps({"tex": tex, "display": display}) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        if "error" in answer:
            raise MathError(f"MathJax cannot typeset {tex!r}: {answer['error']}")
        out = slim(answer["svg"])
        cache.atomic_write(path, out.encode("utf-8"))
        self.typeset_count += 1
        return out


def slim(svg: str) -> str:
    """Drop what the page does not use: the per-glyph codes and the inline position style."""
    svg = re.sub(r' data-c="[0-9A-F]+"', "", svg)
    return svg.replace(' style="position: relative;"', "")


def strip_delimiters(tex: str) -> tuple[str, bool]:
    tex = html.unescape(tex).strip()
    for (left, right), display in _DELIMS.items():
        if tex.startswith(left) and tex.endswith(right) and len(tex) >= len(left) + len(right):
            return tex[len(left) : len(tex) - len(right)].strip(), display
    raise MathError(f"arithmatex content without delimiters: {tex[:80]!r}")


TYPESETTER = Typesetter()


def typeset_page(page_html: str, typesetter: Typesetter = TYPESETTER) -> str:
    """Replace every arithmatex formula of a page by its SVG; a display formula too wide for
    a phone gets a second layout for phones beside it (:func:`phone_layout`)."""

    def one(m: re.Match[str]) -> str:
        tex, display = strip_delimiters(m.group("tex"))
        tag = m.group("tag")
        numbered = "vb-eq-body" in m.group("cls")
        out = display_math(tex, numbered, typesetter) if display else typesetter.svg(tex, False)
        return f'<{tag} class="arithmatex{m.group("cls")}"{m.group("attrs")}>{out}</{tag}>'

    return MATH_RE.sub(one, page_html)


# --- one copy of each glyph per page ---------------------------------------------------------

_CONTAINER_RE = re.compile(r"<mjx-container\b.*?</mjx-container>", re.S)
_GLYPH_RE = re.compile(r'<path d="([^"]+)"((?: [a-z-]+="[^"]*")*)></path>')


def share_glyphs(page_html: str) -> str:
    """Draw each glyph of the page's formulas once: a glyph's outline that occurs more than once
    is defined in one hidden ``<svg class="vb-glyphs">`` at the top of the page and used by
    reference (``<use xlink:href>``), as MathJax's own global font cache does in a browser.
    ``xlink:href``, not ``href``: Material's instant navigation resolves every element with an
    ``href`` attribute by assigning it, which an SVG ``<use>`` refuses (its ``href`` is
    read-only), and the page's scripts stop on that error. A chapter's
    math is mostly the same few dozen glyphs, so its HTML shrinks by a third or more, and the
    phone parses less. Outlines that occur once stay where they are."""
    counts: dict[str, int] = {}
    for block in _CONTAINER_RE.findall(page_html):
        for m in _GLYPH_RE.finditer(block):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    ids: dict[str, str] = {}

    def glyph(m: re.Match[str]) -> str:
        d, rest = m.group(1), m.group(2)
        if counts.get(d, 0) < 2:
            return m.group(0)
        ids.setdefault(d, f"vb-g{len(ids)}")
        return f'<use xlink:href="#{ids[d]}"{rest}></use>'

    out = _CONTAINER_RE.sub(lambda m: _GLYPH_RE.sub(glyph, m.group(0)), page_html)
    if not ids:
        return page_html
    defs = "".join(f'<path id="{i}" d="{d}"></path>' for d, i in ids.items())
    return (
        '<svg class="vb-glyphs" aria-hidden="true" focusable="false" width="0" height="0">'
        f"<defs>{defs}</defs></svg>\n{out}"
    )


# --- phones: a second layout of a display formula too wide for a narrow column ---------------

#: The narrowest screen laid out for, in CSS pixels (a small phone); the book is checked at 390.
PHONE_SCREEN_PX = 375
#: Material's page margins on a phone (0.8rem on each side, at its 20 px root size).
PHONE_MARGINS_PX = 2 * 16
#: What a numbered equation's number and the gap before it take: "(10.4)" in the body font.
PHONE_NUMBER_PX = 56
#: The height of an "x" in the book's body font (DejaVu Sans, x-height 0.545 em, at 16 px):
#: MathJax's SVG is sized in ex of the surrounding text, so a formula's width in ex times this
#: is its width on the page.
BODY_EX_PX = 16 * 0.545
#: What a phone leaves a display formula, in ex: unnumbered, and numbered.
PHONE_EX = (PHONE_SCREEN_PX - PHONE_MARGINS_PX) / BODY_EX_PX
PHONE_EX_NUMBERED = (PHONE_SCREEN_PX - PHONE_MARGINS_PX - PHONE_NUMBER_PX) / BODY_EX_PX
#: Written by a page where a line may break on a phone (nothing on a wider screen), and the
#: line that starts a page's own phone layout of an equation (``%% phone``, then the TeX).
BREAK_HINT = "\\vbbreak"
PHONE_SECTION_RE = re.compile(r"^[ \t]*%%[ \t]*phone[ \t]*$", re.M)
_WIDTH_RE = re.compile(r'<svg[^>]*? width="([0-9.]+)ex"')


def svg_width_ex(svg: str) -> float:
    """The width of a typeset formula in ex (MathJax writes it on the outer ``<svg>``)."""
    m = _WIDTH_RE.search(svg)
    if not m:
        raise MathError(f"no width in MathJax's output: {svg[:120]!r}")
    return float(m.group(1))


def display_math(tex: str, numbered: bool, typesetter: Typesetter = TYPESETTER) -> str:
    r"""A display formula's SVG, and, when it is wider than a phone's column, a phone layout
    beside it: ``<span class="vb-math-wide">`` and ``<span class="vb-math-narrow">``, one of
    which the stylesheet shows (docs/stylesheets/book.css). A page may give its own phone
    layout after a ``%% phone`` line, and mark where a line may break with ``\vbbreak``."""
    parts = PHONE_SECTION_RE.split(tex, maxsplit=1)
    wide_tex = parts[0].replace(BREAK_HINT, " ").strip()
    wide = typesetter.svg(wide_tex, True)
    limit = PHONE_EX_NUMBERED if numbered else PHONE_EX
    if len(parts) == 2:
        narrow_tex = parts[1].strip()
    elif svg_width_ex(wide) <= limit:
        return wide
    else:

        def fits(candidate: str) -> bool:
            try:
                return svg_width_ex(typesetter.svg(candidate, True)) <= limit
            except MathError:  # a cut the TeX does not allow: not a layout
                return False

        narrow_tex = phone_layout(parts[0], fits)
        if narrow_tex is None:
            LOG.warning(
                "a display formula is %.0f ex wide, wider than a phone's %.0f ex, and has no "
                "place to break: give it a phone layout after a %%%% phone line: %s",
                svg_width_ex(wide), limit, wide_tex[:100],
            )  # fmt: skip
            return wide
    narrow = typesetter.svg(narrow_tex, True)
    if svg_width_ex(narrow) > limit:
        LOG.warning(
            "the phone layout of a display formula is %.0f ex wide, wider than a phone's "
            "%.0f ex: %s", svg_width_ex(narrow), limit, narrow_tex[:100],
        )  # fmt: skip
    return f'<span class="vb-math-wide">{wide}</span><span class="vb-math-narrow">{narrow}</span>'


#: Where a line may break, outside braces, ``\left...\right`` and environments: between
#: statements (``\qquad``), before a relation, before a binary operator, at a page's hint.
_RELATIONS = {
    "=", "<", ">", "\\approx", "\\leftarrow", "\\rightarrow", "\\to", "\\le", "\\ge",
    "\\leq", "\\geq", "\\neq", "\\in", "\\equiv", "\\propto", "\\sim",
}  # fmt: skip
_BINARY = {"+", "-", "\\cdot", "\\times", "\\pm"}
_TOKEN_RE = re.compile(r"\\[A-Za-z]+|\\.|[{}]|[^\\{}]")
#: After these a sign is unary (``-x``, ``(-1)``, ``x^-``): no break before it.
_OPENS = {"", "(", "[", ",", ";", "^", "_", "&", "\\qquad", "\\quad", "\\left", "\\begin"}
_SPACES = {"\\,", "\\;", "\\:", "\\!", "\\ "}


def breakpoints(tex: str) -> list[tuple[int, int, str]]:
    r"""``(start, end, kind)`` of every place a line may break, kind ``sep`` (between two
    statements: the ``\qquad`` is dropped), ``rel``, ``bin`` or ``hint`` (the hint dropped)."""
    found = []
    depth = 0
    last = ""  # the previous token at depth 0 that is not a space: a sign after it is unary
    for m in _TOKEN_RE.finditer(tex):
        tok = m.group()
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        elif tok in ("\\left", "\\begin"):
            depth += 1
        elif tok in ("\\right", "\\end"):
            depth -= 1
        elif depth == 0:
            if tok in ("\\qquad", "\\quad") and last in (",", ""):
                found.append((m.start(), m.end(), "sep"))
            elif tok == "\\qquad":
                found.append((m.start(), m.end(), "sep"))
            elif tok == BREAK_HINT:
                found.append((m.start(), m.end(), "hint"))
            elif tok in _RELATIONS:
                found.append((m.start(), m.start(), "rel"))
            elif tok in _BINARY and last not in _OPENS and last not in _RELATIONS:
                found.append((m.start(), m.start(), "bin"))
        if depth == 0 and not tok.isspace() and tok not in _SPACES:
            last = tok
    return found


def _statements(tex: str) -> list[list[tuple[str, str]]]:
    """The formula cut at every break point: statements (cut at ``sep``), each a list of
    ``(kind, text)`` pieces, the first of kind ``start``."""
    statements: list[list[tuple[str, str]]] = [[]]
    kind, pos = "start", 0
    for start, end, k in breakpoints(tex):
        piece = tex[pos:start].replace(BREAK_HINT, " ").strip()
        if piece:
            statements[-1].append((kind, piece))
        if k == "sep":
            statements.append([])
            kind = "start"
        else:
            kind = k if statements[-1] else "start"
        pos = end
    piece = tex[pos:].replace(BREAK_HINT, " ").strip()
    if piece:
        statements[-1].append((kind, piece))
    return [s for s in statements if s]


def _aligned(lines: list[list[tuple[str, str]]], at_relation: bool) -> str:
    """Lines of pieces as an ``aligned`` block: continuation lines aligned on the first line's
    first relation (``at_relation``), or flush left, indented by a quad."""
    if len(lines) == 1:
        return " ".join(t for _, t in lines[0])
    out = []
    for i, line in enumerate(lines):
        if i == 0:
            if at_relation:
                j = next(k for k, (kind, _) in enumerate(line) if kind == "rel")
                head = " ".join(t for _, t in line[:j])
                out.append(f"{head} &{{}} " + " ".join(t for _, t in line[j:]))
            else:
                out.append("& " + " ".join(t for _, t in line))
        else:
            pad = "" if at_relation and line[0][0] == "rel" else "\\quad"
            out.append(f"&{pad} {{}} " + " ".join(t for _, t in line))
    return "\\begin{aligned}" + " \\\\ ".join(out) + "\\end{aligned}"


def _pack(pieces: list[tuple[str, str]], fits, at_relation: bool) -> str | None:
    """Greedy: each line takes as many pieces as fit; ``None`` if even that is too wide."""
    lines: list[list[tuple[str, str]]] = [[pieces[0]]]
    for piece in pieces[1:]:
        trial = [*lines[:-1], [*lines[-1], piece]]
        if at_relation and not any(k == "rel" for k, _ in trial[0]):
            lines = trial  # the first line must reach the relation the others align on
            continue
        if fits(_aligned(trial, at_relation)):
            lines = trial
        else:
            lines.append([piece])
    if at_relation and not any(k == "rel" for k, _ in lines[0]):
        return None
    tex = _aligned(lines, at_relation)
    return tex if fits(tex) else None


def phone_layout(tex: str, fits) -> str | None:
    r"""The formula broken into lines that each ``fits(tex)`` a phone, or ``None`` when no
    place to break makes it fit. Statements separated by ``\qquad`` go on lines of their
    own; a statement still too wide breaks before a relation or a binary operator, its
    continuation lines aligned on the first relation, else flush left and indented."""
    statements = _statements(tex)
    if not statements or (len(statements) == 1 and len(statements[0]) == 1):
        return None
    blocks = []
    for pieces in statements:
        whole = " ".join(t for _, t in pieces).replace(BREAK_HINT, " ")
        if fits(whole):
            blocks.append(whole)
            continue
        if len(pieces) == 1:
            return None
        block = _pack(pieces, fits, True) or _pack(pieces, fits, False)
        if block is None:
            return None
        blocks.append(block)
    if len(blocks) == 1:
        return blocks[0]
    return "\\begin{gathered}" + " \\\\[0.4em] ".join(blocks) + "\\end{gathered}"


# --- search: readable text instead of TeX, prompts and listings -------------------------------

_TEX_WORDS = {
    "times": "×",
    "cdot": "·",
    "sqrt": "√",
    "sum": "∑",
    "in": "∈",
    "to": "→",
    "rightarrow": "→",
    "leq": "≤",
    "geq": "≥",
    "le": "≤",
    "ge": "≥",
    "neq": "≠",
    "approx": "≈",
    "infty": "∞",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "epsilon": "ε",
    "lambda": "λ",
    "mu": "μ",
    "sigma": "σ",
    "theta": "θ",
    "pi": "π",
    "ldots": "…",
    "dots": "…",
    "top": "ᵀ",
}
_PROMPT_RE = re.compile(r"(?:In|Out)\s*\[\s*\d*\s*\]:\s*")
_PRE_RE = re.compile(r"<pre>.*?</pre>", re.S)
_PROSE_RE = re.compile(r"<(?:p|h\d|ul|ol|table|blockquote|dl)\b")
_DOLLARS_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)


def tex_to_text(tex: str) -> str:
    """A formula as words a search snippet can show: ``8 \\times 8`` -> ``8 × 8``."""
    text = re.sub(r"\\[,;:! ]|\\q?quad\b", " ", tex)
    text = re.sub(r"\\(?:math[a-z]+|text[a-z]*|operatorname|boldsymbol|left|right)\b\s*", "", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _TEX_WORDS.get(m.group(1), m.group(1)), text)
    text = text.replace("\\", "").replace("{", "").replace("}", "")
    return " ".join(text.replace("^", "").replace("_", "").split())


#: The answer markers of a quiz option (``- [x] right``, ``- [ ] wrong``, ``- [=] 577``): the
#: page's script turns them into a form, but the search plugin indexes the Markdown's text.
_QUIZ_MARK_RE = re.compile(r"(^|(?<=>)|(?<=\s))\[(?: |x|X|=)\]\s*")


def clean_search_text(text: str) -> str:
    """A search entry without notebook prompts, "Copied!" buttons, code listings, raw TeX or
    the quiz options' answer markers."""
    # a notebook's code cell follows its "In [n]:" prompt up to the next prose (or prompt)
    parts = _PROMPT_RE.split(text.replace("\xa0", " "))
    text = parts[0] + " ".join(
        p[m.start() :] if (m := _PROSE_RE.search(p)) else "" for p in parts[1:]
    )
    text = _PRE_RE.sub(" ", text)
    text = text.replace("Copied!", "")
    text = _QUIZ_MARK_RE.sub(lambda m: m.group(1), text)
    text = _DOLLARS_RE.sub(lambda m: tex_to_text(next(g for g in m.groups() if g)), text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def clean_search_index(site_dir: Path) -> None:
    """Rewrite ``search/search_index.json`` (written by the search plugin) with clean text."""
    path = site_dir / "search" / "search_index.json"
    if not path.is_file():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    for doc in index.get("docs", []):
        doc["text"] = clean_search_text(doc.get("text", ""))
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), "utf-8")


# --- notebook pages: Markdown cells keep their math as $...$ text ------------------------------

_TAG_RE = re.compile(r"(<[^>]+>)")
_SKIP = ("script", "style", "code", "pre", "textarea", "svg", "mjx-container")
_INLINE_DOLLARS = re.compile(r"\$\$(.+?)\$\$|(?<![\\$\w])\$([^$\n]+?)\$(?![\w$])", re.S)


def typeset_dollars(page_html: str, typesetter: Typesetter = TYPESETTER) -> str:
    """Typeset ``$...$`` and ``$$...$$`` in the text of a page's ``<article>`` (the notebook
    pages' Markdown cells), outside code, scripts and styles."""
    start, end = page_html.find("<article"), page_html.rfind("</article>")
    if start < 0 or end < 0:
        return page_html
    parts = _TAG_RE.split(page_html[start:end])
    depth = 0
    for i, part in enumerate(parts):
        if i % 2:  # a tag
            m = re.match(r"<(/?)([a-zA-Z][\w-]*)", part)
            if m and m.group(2).lower() in _SKIP and not part.endswith("/>"):
                depth += -1 if m.group(1) else 1
                depth = max(depth, 0)
            continue
        if depth or "$" not in part:
            continue
        parts[i] = _INLINE_DOLLARS.sub(
            lambda m: typesetter.svg(
                html.unescape(m.group(1) or m.group(2)).strip(), bool(m.group(1))
            ),
            part,
        )
    return page_html[:start] + "".join(parts) + page_html[end:]
