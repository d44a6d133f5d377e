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
import os
import re
import subprocess
from pathlib import Path

from vitbook.engine import cache

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
    """Replace every arithmatex formula of a page by its SVG."""

    def one(m: re.Match[str]) -> str:
        tex, display = strip_delimiters(m.group("tex"))
        out = typesetter.svg(tex, display)
        tag = m.group("tag")
        return f'<{tag} class="arithmatex{m.group("cls")}"{m.group("attrs")}>{out}</{tag}>'

    return MATH_RE.sub(one, page_html)


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
