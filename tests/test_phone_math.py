"""Phone layouts of display formulas (vitbook/site/math.py): where a formula may break, and how
it is broken into lines that fit. The widths come from a stand-in for MathJax here (the TeX's
length), so these run without Node; the browser tests check the typeset pages at 390 px."""

from __future__ import annotations

import re

from vitbook.site import math


def widest(tex: str) -> int:
    """The longest line of a layout, in characters, without its markup: a stand-in width."""
    bare = re.sub(r"\\(begin|end)\{\w+\}|\\quad|&|\{\}|\[0\.4em\]", "", tex)
    return max(len(line.strip()) for line in bare.split("\\\\"))


def kinds(tex: str) -> list[tuple[str, str]]:
    return [(k, tex[s:].split()[0] if k != "sep" else "") for s, _e, k in math.breakpoints(tex)]


def test_breaks_only_outside_braces_delimiters_and_environments() -> None:
    tex = r"a = \frac{b + c}{d} + \left(e - f\right) - g_{i=1}, \qquad h \in \mathbb{R}"
    found = kinds(tex)
    assert [k for k, _ in found] == ["rel", "bin", "bin", "sep", "rel"]
    assert [t[0] for k, t in found if k in ("rel", "bin")][:3] == ["=", "+", "-"]


def test_a_sign_after_an_opening_or_a_relation_is_unary() -> None:
    assert [k for k, _ in kinds(r"x = -y")] == ["rel"]
    assert [k for k, _ in kinds(r"x^- + y")] == ["bin"]
    assert [k for k, _ in kinds(r"(-a) - b")] == ["bin"]


def test_statements_go_on_lines_of_their_own() -> None:
    tex = r"A = 1, \qquad B = 2"
    out = math.phone_layout(tex, lambda t: widest(t) < 12)
    assert out == r"\begin{gathered}A = 1, \\[0.4em] B = 2\end{gathered}"


def test_a_long_statement_breaks_before_a_relation_and_aligns_on_the_first() -> None:
    tex = r"\mathrm{L}(x) = aaaaaaaa + bbbbbbbb = cccccccc"
    out = math.phone_layout(tex, lambda t: widest(t) < 30)
    assert out is not None and out.startswith(r"\begin{aligned}")
    lines = out.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}").split(r"\\")
    assert lines[0].strip().startswith(r"\mathrm{L}(x) &{} =")
    assert all(line.strip().startswith("&") for line in lines[1:])
    # every piece kept, in order: only line breaks and alignment added
    kept = re.sub(r"\\\\|[&{}\s]|\\quad|\\begin|aligned|\\end", "", out)
    assert kept == re.sub(r"[{}\s]", "", tex)


def test_no_place_to_break_gives_none() -> None:
    assert math.phone_layout(r"\left(a + b + c\right)", lambda t: len(t) < 5) is None
    assert math.phone_layout(r"abcdefgh", lambda t: len(t) < 5) is None


def test_a_break_hint_is_a_place_to_break_and_prints_nothing() -> None:
    tex = r"\mathrm{resize}(aaaa) \vbbreak \mathrm{pad}(bbbb)"
    out = math.phone_layout(tex, lambda t: widest(t) < 25)
    assert out is not None and r"\vbbreak" not in out and r"\\" in out


class FakeTypesetter:
    """Widths in ex from the TeX's length: a stand-in for MathJax."""

    def svg(self, tex: str, display: bool) -> str:
        width = max(len(line) for line in tex.split(r"\\")) * 0.8
        return f'<mjx-container><svg width="{width:.3f}ex" data-tex="{tex}"></svg></mjx-container>'


def test_a_page_may_give_its_own_phone_layout() -> None:
    tex = "a = b + c\n%% phone\n\\begin{gathered} a = b \\\\ + c \\end{gathered}"
    out = math.display_math(tex, numbered=True, typesetter=FakeTypesetter())
    assert 'class="vb-math-wide"' in out and 'class="vb-math-narrow"' in out
    assert 'data-tex="a = b + c"' in out  # the wide layout without the phone section
    assert "gathered" in out.split("vb-math-narrow")[1]


def test_a_formula_that_fits_a_phone_has_one_layout() -> None:
    out = math.display_math("a = b", numbered=False, typesetter=FakeTypesetter())
    assert "vb-math" not in out and out.count("<svg") == 1


def test_each_glyph_is_drawn_once_per_page() -> None:
    a, b = '<path d="M1 1L2 2"></path>', '<path d="M3 3"></path>'
    moved = '<path d="M1 1L2 2" transform="translate(500,0)"></path>'
    page = (
        f"<p><mjx-container><svg>{a}{b}</svg></mjx-container> and "
        f"<mjx-container><svg>{a}{moved}</svg></mjx-container></p>"
        '<svg class="icon"><path d="M1 1L2 2"></path></svg>'  # not a formula's: left alone
    )
    out = math.share_glyphs(page)
    assert out.count('id="vb-g0"') == 1 and out.count('d="M1 1L2 2"') == 2
    assert out.count('<use xlink:href="#vb-g0"></use>') == 2
    assert '<use xlink:href="#vb-g0" transform="translate(500,0)"></use>' in out
    assert b in out, "an outline used once stays where it is"
    assert math.share_glyphs("<p>no math</p>") == "<p>no math</p>"


def test_a_bracket_that_opens_a_block_or_a_line_is_kept() -> None:
    r"""``[\mathbf{x}]`` right after ``\begin{aligned}``, ``\begin{gathered}`` or a line break
    would be read as an optional argument and vanish from the formula: every formula typeset
    gets an empty group before such a bracket, and lengths such as ``[0.4em]`` are left alone."""
    tex = r"[\mathbf{x}]_{c, i} = [\mathbf{x}_p]_{j}, \qquad i = m \frac{W}{P} + n"  # Eq. 2.3
    out = math.guard_brackets(math.phone_layout(tex, lambda t: widest(t) < 50))
    assert out.startswith(r"\begin{gathered}{}[\mathbf{x}]_{c, i} = "), out
    assert out.endswith(r"\\[0.4em] i = m \frac{W}{P} + n\end{gathered}"), out
    authored = "\\begin{aligned}\n[\\mathbf{t}_i]_f ={}& a \\\\\n[b] &= c\n\\end{aligned}"
    assert math.guard_brackets(authored) == (
        "\\begin{aligned}{}\n[\\mathbf{t}_i]_f ={}& a \\\\{}\n[b] &= c\n\\end{aligned}"
    )
    for length in ("[0.4em]", "[2mm]", "[ -1pt ]"):
        assert math.guard_brackets(rf"a \\{length} b") == rf"a \\{length} b"
