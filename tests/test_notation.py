"""Notation, one symbol with one meaning: every symbol a chapter's mathematics uses (all
chapters, 0 to 10) is declared in the chapter (a ``symbols: [...]`` line in an HTML comment
under its title) and defined on the notation page, in exactly one row, so the chapters and
docs/notation.md cannot drift apart. A symbol is every letter in its typeface (bold, italic,
calligraphic, Greek: k heads and the bold key k are two symbols, as in the paper) with its
subscript when that names a quantity (D_h, U_qkv, t_warm); index subscripts, bars, tildes
and primes keep the symbol (z_0 and z_ell are tokens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DOCS = Path(__file__).resolve().parents[1] / "docs"
CHAPTERS = sorted(DOCS.glob("[01][0-9]-*.md"))  # every chapter, 0-10

MATH = re.compile(
    r"\$\$(.+?)\$\$|\$(.+?)\$|\{% filter equation\([^)]*\) %\}(.+?)\{% endfilter %\}", re.S
)
# words such as \mathrm{softmax} are not symbols, but a named subscript is: E_\text{pos}
WORDS = re.compile(r"\\(mathrm|mathbb|text|operatorname|texttt)\{([^{}]*)\}")
GREEK = (
    "alpha beta gamma delta epsilon eta theta kappa lambda mu nu xi pi rho sigma tau phi chi "
    "psi omega Delta Sigma Phi ell"
).split()
# Subscripts that name a different quantity (D_h is not D); any other subscript is an index
# (z_0, z_ell, W_1 and q_i are still z, W and q). A Greek letter with a digit (Adam's beta_1)
# is its own symbol too.
NAMED_SUBSCRIPTS = {
    "h", "k", "qkv", "msa", "pos", "class", "head", "p", "Q", "K", "V", "O",
    "conv", "warm", "end", "mlp", "F", "patch",
}  # fmt: skip
WORD = r"\\(?:text|mathrm)\{[A-Za-z]+\}"
SUP = r"'?(?:\^(?:\{[^{}]*\}|\w))?"  # a prime or superscript first: U^{(h)}_{qkv}, z'_ell
SUB = SUP + r"(?:_(?:\{(" + WORD + r"|[A-Za-z]+|\d)\}|(" + WORD + r"|[A-Za-z]|\d)))?"
TOKEN = re.compile(
    r"\\mathbf\{([A-Za-z])\}" + SUB
    + r"|\\mathcal\{([A-Z])\}"
    + r"|\\(" + "|".join(GREEK) + r")(?![A-Za-z])" + SUB
    + r"|([A-Za-z])" + SUB
)  # fmt: skip
KEEP = {"mathbf", "mathcal", *GREEK}


def _named(*subs: str | None, greek: bool = False) -> str:
    sub = next((s for s in subs if s), "")
    sub = re.sub(r"^\\(?:text|mathrm)\{(.*)\}$", r"\1", sub)
    if sub.isdigit() if greek else sub in NAMED_SUBSCRIPTS:
        return "_" + sub
    return ""


def symbols(tex: str) -> set[str]:
    """The notation symbols in one piece of LaTeX: every letter in its typeface (bold,
    italic, calligraphic, Greek), with its subscript where the subscript names a quantity.
    Decorations (a bar, a tilde, a prime) keep the symbol: A-bar is still the attention
    weights. Letters side by side are a product (TD is T times D); letters that belong to a
    command (\\sqrt, \\mathrm{...}) are not symbols."""
    tex = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", " ", tex, flags=re.S)  # facts printed in the formula
    tex = re.sub(r"(?<!\\)%[^\n]*", " ", tex)  # a TeX comment (a phone layout's "%% phone")
    tex = re.sub(r"\\(?:begin|end)\{[^{}]*\}", " ", tex)  # \\begin{cases}
    tex = re.sub(r"\\(?:sum|prod|min|max|lim|log|ln|exp)(?![A-Za-z])", " ", tex)
    tex = re.sub(r"\\\\(?:\[[^\]]*\])?", " ", tex)  # a line break, \\[2mm]

    def word(m: re.Match) -> str:  # kept only as the named subscript of a symbol
        attached = re.search(
            r"(?:[A-Za-z'}]|\^\{[^{}]*\})_\{?$", tex[max(0, m.start() - 30) : m.start()]
        )
        attached = attached and not re.search(r"\\(?!mathbf)\w+\{[^{}]*\}_\{?$", tex[: m.start()])
        named = m.group(1) in ("text", "mathrm") and m.group(2) in NAMED_SUBSCRIPTS
        return m.group(0) if attached and named else " "

    tex = WORDS.sub(word, tex)
    # a word as the subscript of no symbol (\\text{pairs}_{\\text{global}}, \\sum_\\text{images})
    tex = re.sub(
        r"(?<![A-Za-z}'\]])_(?:\{\\(?:text|mathrm)\{[^{}]*\}\}|\\(?:text|mathrm)\{[^{}]*\})",
        " ",
        tex,
    )

    def command(m: re.Match) -> str:  # \\sqrt, \\left, \\top, \\bar: not letters of the notation
        attached = tex[max(0, m.start() - 2) : m.start()].endswith(("_", "_{"))
        word = attached and m.group(1) in ("text", "mathrm")
        return m.group(0) if m.group(1) in KEEP or word else " "

    tex = re.sub(r"\\([A-Za-z]+)", command, tex)
    out: set[str] = set()
    for m in TOKEN.finditer(tex):
        bold, b1, b2, cal, greek, g1, g2, letter, l1, l2 = m.groups()
        if bold:
            out.add(f"\\mathbf{{{bold}}}{_named(b1, b2)}")
        elif cal:
            out.add(f"\\mathcal{{{cal}}}")
        elif greek:
            out.add("\\" + greek + _named(g1, g2, greek=True))
        else:
            out.add(letter + _named(l1, l2))
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


def rows() -> list[tuple[str, set[str]]]:
    """(first cell, its symbols) for every row of the notation page's tables."""
    out = []
    for line in (DOCS / "notation.md").read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2 and not set(cells[1].strip()) <= {"-"}:
            out.append((cells[1].strip(), page_symbols(cells[1])))
    return out


def defined() -> set[str]:
    """Symbols in the first column of the notation page's tables."""
    return set().union(*(syms for _, syms in rows()))


def test_extractor_reads_the_notation_it_must() -> None:
    got = symbols(r"\mathbf{U}_{qkv} \in \mathbb{R}^{D \times 3 D_h}")
    assert got == {"\\mathbf{U}_qkv", "D", "D_h"}
    assert symbols(r"\mathrm{softmax}(\mathbf{Q} \mathbf{K}^\top / \sqrt{d_k})") == {
        "\\mathbf{Q}",
        "\\mathbf{K}",
        "d_k",
    }
    assert symbols(r"A_{ij} = \gamma") == {"A", "\\gamma"}
    # lower-case letters count (k heads is not the bold key k), products split (TD^2)
    assert symbols(r"(B, k, T, D_h) \quad \mathbf{q}_i \cdot \mathbf{k}_j") == {
        "B", "k", "T", "D_h", "\\mathbf{q}", "\\mathbf{k"+"}",
    }  # fmt: skip
    assert symbols(r"12\,T D^2 + 2 T^2D") == {"T", "D"}
    # named subscripts make a symbol, indices and decorations do not
    assert symbols(r"\mathbf{E}'_\text{pos} + \mathbf{z}'_\ell + \tilde A_\ell") == {
        "\\mathbf{E}_pos", "\\mathbf{z}", "A", "\\ell",
    }  # fmt: skip
    assert symbols(r"\eta_t = \eta_{\max} \dfrac{t + 1}{t_\text{warm}}") == {
        "\\eta", "t", "t_warm",
    }  # fmt: skip
    assert symbols(r"\beta_1 \ne \beta") == {"\\beta_1", "\\beta"}
    assert symbols(r"\sum_{\text{images}} \mathcal{L}(\theta)") == {"\\mathcal{L}", "\\theta"}


def test_notation_page_defines_the_core_symbols() -> None:
    d = defined()
    for sym in (
        "D",
        "D_h",
        "d_k",
        "N",
        "T",
        "K",
        "k",
        "\\mathbf{z}",
        "\\mathbf{y}",
        "\\mathbf{U}_qkv",
    ):
        assert sym in d, sym


def test_every_symbol_has_one_row() -> None:
    """One symbol, one meaning: no symbol is defined in two rows of the notation page."""
    seen: dict[str, str] = {}
    twice = []
    for cell, syms in rows():
        for sym in syms:
            if sym in seen:
                twice.append(f"{sym}: {seen[sym]!r} and {cell!r}")
            seen[sym] = cell
    assert not twice, twice


def chapter_list(cell: str) -> set[int]:
    """ "0, 3-6, 10" -> {0, 3, 4, 5, 6, 10}; "none" -> set()."""
    out: set[int] = set()
    for part in cell.replace("none", "").split(","):
        if part.strip():
            lo, _, hi = part.strip().partition("-")
            out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def test_each_row_names_the_chapters_that_use_it() -> None:
    """The last column of a row lists the chapters whose mathematics uses its symbols: a new
    use of a symbol in another chapter shows up on this page, where its one meaning is."""
    uses: dict[str, set[int]] = {}
    for page in CHAPTERS:
        for sym in front_matter(page.read_text(encoding="utf-8")).get("symbols", []):
            uses.setdefault(sym, set()).add(int(page.name[:2]))
    wrong = []
    for line in (DOCS / "notation.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if not line.startswith("|") or set(cells[0]) <= {"-"} or cells[0] == "Symbol":
            continue
        syms = page_symbols(cells[0])
        if not syms:
            continue  # the operators' table: words, not letters
        want = set().union(*(uses.get(s, set()) for s in syms))
        if chapter_list(cells[-1]) != want:
            wrong.append(f"{cells[0]}: says {cells[-1]!r}, used in {sorted(want)}")
    assert not wrong, wrong


def test_notation_page_names_functions_that_exist() -> None:
    """The Code column names real functions: `analysis.attention_rollout`, not a guess."""
    import importlib

    text = (DOCS / "notation.md").read_text(encoding="utf-8")
    names = re.findall(
        r"`(?:vitbook\.)?((?:analysis|calc|model|patches|train|handset)\.\w+)`", text
    )
    names += re.findall(r"`\w+` in `(?:vitbook\.)?((?:analysis|calc|model)\.\w+)`", text)
    assert "analysis.attention_rollout" in names
    for name in names:
        module, attr = name.split(".")
        assert hasattr(importlib.import_module(f"vitbook.{module}"), attr), name


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.name)
def test_chapter_declares_every_symbol_it_uses(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    meta = front_matter(text)
    assert "symbols" in meta, f"{page.name}: add a '<!-- symbols: [...] -->' comment"
    declared = set(meta["symbols"])
    used = page_symbols(text)
    assert not used - declared, f"{page.name} uses undeclared symbols {sorted(used - declared)}"
    assert not declared - used, f"{page.name} declares unused symbols {sorted(declared - used)}"
    missing = declared - defined()
    assert not missing, f"{page.name}: define {sorted(missing)} in docs/notation.md"


def test_every_chapter_is_checked() -> None:
    assert [p.name[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(11)]


@pytest.mark.parametrize("name", ["glossary.md", "index.md", "building.md"])
def test_back_matter_math_uses_the_notation(name: str) -> None:
    """The glossary and the other pages with formulas use the chapters' symbols only."""
    used = page_symbols((DOCS / name).read_text(encoding="utf-8"))
    assert not used - defined(), (
        f"{name} uses symbols the notation page lacks: {sorted(used - defined())}"
    )
