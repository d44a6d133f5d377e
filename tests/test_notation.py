"""Notation: every symbol a chapter's mathematics uses is declared in the chapter (a
``symbols: [...]`` line in an HTML comment under its title) and defined on the notation page,
so the chapters and docs/notation.md cannot drift apart. Symbols checked: bold letters (base
letter), Greek letters, capital letters with their named subscripts (D_h, U_qkv), and d_k-style
widths; lower-case scalars and indices (i, j, x) are explained where they are used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DOCS = Path(__file__).resolve().parents[1] / "docs"
CHAPTERS = sorted(DOCS.glob("0[0-8]-*.md"))  # chapters 0-8; 9 and 10 may opt in the same way

MATH = re.compile(
    r"\$\$(.+?)\$\$|\$(.+?)\$|\{% filter equation\([^)]*\) %\}(.+?)\{% endfilter %\}", re.S
)
WORDS = re.compile(r"\\(?:mathrm|mathbb|text|operatorname|texttt)\{[^{}]*\}")
GREEK = "alpha beta gamma delta epsilon mu sigma omega Phi phi ell theta lambda".split()
NAMED_SUBSCRIPTS = {"h", "k", "v", "Q", "K", "V", "O", "qkv", "msa", "pos", "class", "head"}
TOKEN = re.compile(
    r"\\mathbf\{([A-Za-z])\}"
    r"|\\(" + "|".join(GREEK) + r")(?![A-Za-z])"
    r"|(?<![\\A-Za-z])([A-Z])(?![A-Za-z])(?:_\{?(\\text\{[a-z]+\}|[A-Za-z]+)\}?)?"
    r"|(?<![\\A-Za-z])(d)_\{?([a-z])\}?"
)


def symbols(tex: str) -> set[str]:
    """The notation symbols in one piece of LaTeX."""
    tex = WORDS.sub(" ", tex)  # words such as \mathrm{softmax} are not symbols
    out: set[str] = set()
    for m in TOKEN.finditer(tex):
        bold, greek, cap, sub, d, dsub = m.groups()
        if bold:
            out.add(f"\\mathbf{{{bold}}}")
        elif greek:
            out.add("\\" + greek)
        elif cap:
            sub = (sub or "").removeprefix("\\text{").removesuffix("}")
            out.add(f"{cap}_{sub}" if sub in NAMED_SUBSCRIPTS else cap)
        elif d:
            out.add(f"d_{dsub}")
    return out


def page_symbols(text: str) -> set[str]:
    used: set[str] = set()
    for m in MATH.finditer(text):
        used |= symbols(next(g for g in m.groups() if g))
    return used


def front_matter(text: str) -> dict:
    """The chapter's declaration: a YAML ``symbols: [...]`` line inside the HTML comment under
    the title (a comment, so that the page still starts with its '# N. Title')."""
    m = re.search(r"<!--[^>]*?^(symbols: \[.*?\])\s*$[^>]*?-->", text, re.M | re.S)
    return yaml.safe_load(m.group(1)) if m else {}


def defined() -> set[str]:
    """Symbols in the first column of the notation page's tables."""
    out: set[str] = set()
    for line in (DOCS / "notation.md").read_text().splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2 and not set(cells[1].strip()) <= {"-"}:
            out |= page_symbols(cells[1])
    return out


def test_extractor_reads_the_notation_it_must() -> None:
    got = symbols(r"\mathbf{U}_{qkv} \in \mathbb{R}^{D \times 3 D_h}")
    assert got == {"\\mathbf{U}", "D", "D_h"}
    assert symbols(r"\mathrm{softmax}(Q K^\top / \sqrt{d_k})") == {"Q", "K", "d_k"}
    assert symbols(r"A_{ij} = \gamma") == {"A", "\\gamma"}


def test_notation_page_defines_the_core_symbols() -> None:
    d = defined()
    for sym in ("D", "D_h", "d_k", "N", "T", "K", "\\mathbf{z}", "\\mathbf{y}", "\\mathbf{U}"):
        assert sym in d, sym


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.name)
def test_chapter_declares_every_symbol_it_uses(page: Path) -> None:
    text = page.read_text()
    meta = front_matter(text)
    assert "symbols" in meta, f"{page.name}: add a '<!-- symbols: [...] -->' comment"
    declared = set(meta["symbols"])
    used = page_symbols(text)
    assert not used - declared, f"{page.name} uses undeclared symbols {sorted(used - declared)}"
    assert not declared - used, f"{page.name} declares unused symbols {sorted(declared - used)}"
    missing = declared - defined()
    assert not missing, f"{page.name}: define {sorted(missing)} in docs/notation.md"
