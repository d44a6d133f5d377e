"""No hand-typed numbers in the book's pages: a quantity in prose, a quiz option or a figure
caption comes from ``figures/facts.json`` (``{{ chNN.name }}``), recorded by the figure module
that computes or defines it, papers' numbers with their citation.

What the check looks at, and the few things it lets through (each a rule, not a list of lines):

- It reads every page under ``docs/`` with code (fenced and inline), snippets, macros and math
  (``$...$``, ``$$...$$`` and ``equation`` blocks) blanked out, line numbers kept, and the text
  inside ``figure(...)`` and ``explorer(...)`` captions put back in.
- A "number" is what a reader would take for a measured or quoted quantity: a decimal
  (``0.02``, ``4.0``), a number with thousands separators (``1,000``) or an integer of three or
  more digits (``224``). One- and two-digit integers are the text's own small parameters
  (P = 16, a batch of 8, "two heads"), as CONTRIBUTING allows.
- Labels are not quantities: a figure, table, equation, chapter, section or lesson number
  (``Table 2``, ``Fig. 5.3``), an arXiv id, a year (1900-2099), a model name (``ViT-B/16``,
  ``JFT-300M``, ``ImageNet-21k`` contain no free-standing number anyway), a licence name
  (``CC BY 4.0``, ``Apache License 2.0``), a hash name (``SHA-256``) and an instruction-set
  name (``AVX-512``).
- Table rows and quiz questions (``???`` lines) are prose too; headings, ``!!!`` admonition
  openers, link definitions, link targets (``](url)``) and raw HTML are not.

An exercise whose input is the number (``a $225 \\times 225$ image``) writes it as math, as the
question itself does: notation, not a result.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch

from vitbook import calc
from vitbook.analysis import sincos_1d
from vitbook.engine import Recorder
from vitbook.figures import (
    ch04_solutions,
    ch07_solutions,
    ch08_solutions,
    ch09_solutions,
    ch10_solutions,
)
from vitbook.model import Block, preset

DOCS = Path(__file__).resolve().parents[1] / "docs"
FACTS = DOCS.parent / "figures" / "facts.json"

NUMBER = re.compile(
    r"(?<![\w.])\d[\d,]*\.\d+%?"  # decimals: 0.02, 4.0, 2.3%
    r"|(?<![\w.])\d{1,3}(?:,\d{3})+"  # thousands separators: 1,000
    r"|(?<![\w.])\d{3,}(?![\w])"  # three or more digits: 224
)
LABELS = [
    re.compile(
        r"(?i)\b(figure|fig\.|eq\.|equation|table|chapter|section|lesson|arxiv:?)\s*[\d.]+(?:[–-][\d.]+)?"
    ),
    re.compile(r"\b(19|20)\d\d\b"),  # years
    re.compile(r"\b(CC BY(-[A-Z]{2})*|Apache License) \d\.\d\b"),  # licence names
    re.compile(r"\bSHA-\d+\b"),  # hash names
    re.compile(r"\bAVX-?\d+\b"),  # instruction-set names (AVX2, AVX-512)
]
# Lines that are not prose: headings, admonition openers, link definitions and raw HTML.
# (Table rows are checked like prose.)
NOT_PROSE = ("#", "!", "[", "<")
NUMBER_ONLY = re.compile(r"\s*\d[\d,.]*\s*")
MACRO = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
CAPTIONED = re.compile(r"\{\{\s*(?:figure|explorer)\(")
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def prose(text: str) -> str:
    """``text`` with everything but prose blanked out (line numbers kept); captions kept."""
    out = re.sub(r"```.*?```", _blank, text, flags=re.S)
    out = re.sub(r"\{%\s*filter equation.*?\{%\s*endfilter\s*%\}", _blank, out, flags=re.S)
    captions = [  # the caption's string literals (facts join them with ~), not the label
        (macro.start() + s.start(1), s.group(1))
        for macro in MACRO.finditer(out)
        if CAPTIONED.match(macro.group(0))
        for s in list(STRING.finditer(macro.group(0)))[1:]
    ]
    out = MACRO.sub(_blank, out)
    for start, caption in captions:  # put the captions back, where they stood
        out = out[:start] + caption + out[start + len(caption) :]
    out = re.sub(r"\$\$.*?\$\$", _blank, out, flags=re.S)
    # inline math is notation, except a span that is only a number ($224$): that is a number
    # in math clothing, and counts as prose, outside the Exercises section, whose questions
    # state their own inputs ("a $225 \times 225$ image", "rows of $768$ numbers")
    start = out.find("\n## Exercises\n")
    end = out.find("\n## ", start + 1) if start >= 0 else -1
    exercises = range(start, end if end >= 0 else len(out)) if start >= 0 else range(0)

    def inline(m: re.Match) -> str:
        if NUMBER_ONLY.fullmatch(m.group(1)) and m.start() not in exercises:
            return " " + m.group(1) + " "  # the number stays where it stood
        return _blank(m)

    out = re.sub(r"\$([^$\n]+)\$", inline, out)
    out = re.sub(r"`[^`\n]+`|--8<--.*", _blank, out)
    out = re.sub(r"\]\([^)\s]*\)", _blank, out)  # link targets: URLs and paths
    return out


def typed_numbers(text: str) -> list[tuple[int, str]]:
    """(line, number) for every number typed into ``text``'s prose and captions."""
    found = []
    for n, line in enumerate(prose(text).splitlines(), 1):
        if line.lstrip().startswith(NOT_PROSE):
            continue
        for label in LABELS:
            line = label.sub(" ", line)
        found += [(n, m) for m in NUMBER.findall(line)]
    return found


def test_no_number_is_typed_into_the_pages():
    typed = [
        f"{page.relative_to(DOCS.parent)}:{n}: {number}"
        for page in sorted(DOCS.rglob("*.md"))
        for n, number in typed_numbers(page.read_text(encoding="utf-8"))
    ]
    assert not typed, (
        f"{len(typed)} numbers typed into the pages; record each as a fact "
        "(rec.fact in the figure module that computes or defines it) and write "
        "{{ chNN.name }}:\n" + "\n".join(typed)
    )


def test_the_check_finds_what_a_writer_would_type():
    page = "\n".join(
        [
            "The model reaches 0.73 accuracy on 1,000 images of 224 pixels.",
            '{{ figure("x", "Trained for 300 steps at a rate of 0.01.") }}',
            "    - [x] (8, 197, 768) leaves the block",
            "| batch | 4096 |",
        ]
    )
    expected = ["0.73", "1,000", "224", "300", "0.01", "197", "768", "4096"]
    assert [n for _, n in typed_numbers(page)] == expected
    assert [n for n, _ in typed_numbers(page)] == [1, 1, 1, 2, 2, 3, 3, 4]


def test_labels_facts_math_and_code_pass():
    page = "\n".join(
        [
            "Table 2 of Dosovitskiy et al. (2021), Fig. 5.3 and Eq. 4.1; arXiv:2010.11929.",
            "ViT-B/16 reaches {{ ch01.acc }} at $224 \\times 224$; `reshape(B, -1, 768)`.",
            "The text is CC BY 4.0 and the digest is SHA-256; P = 16, a batch of 8.",
            "[Licence](https://creativecommons.org/licenses/by/4.0/); Apache License 2.0.",
            '{{ figure("x", "Drawn with `plot.heatmap(vmax=0.05)` from three runs.") }}',
            '{% filter equation("sincos") %}',
            "\\omega_i = 10000^{-2i/D'}",
            "{% endfilter %}",
            "```python",
            "x = 1024",
            "```",
        ]
    )
    assert typed_numbers(page) == []


# --- the facts that replaced typed numbers say what the prose says they do -----------------


def _facts(item, chapter: int) -> dict:
    rec = Recorder(chapter)
    item(rec)
    return {k: v["value"] for k, v in rec.facts.items()}


def _recorded(chapter: str, name: str):
    return json.loads(FACTS.read_text())[chapter][name]["value"]


def test_sincos_base_is_the_base_the_table_uses():
    base = _facts(ch04_solutions.in_prose, 4)["sincos_base"]
    dim, i = 16, 3
    table = sincos_1d(4, dim)  # (positions, dim): sines in the first half, cosines in the second
    omega = base ** (-2 * i / dim)
    assert table[1, i].item() == pytest.approx(math.sin(omega), abs=1e-6)
    assert table[2, dim // 2 + i].item() == pytest.approx(math.cos(2 * omega), abs=1e-6)


def test_quiz_shapes_are_what_a_b16_block_produces():
    facts = _facts(ch07_solutions.in_prose, 7)
    cfg = preset("vit-b/16")
    block = Block(dim=cfg.dim, heads=cfg.heads, mlp_ratio=cfg.mlp_dim / cfg.dim)
    seen = {}
    block.mlp.fc1.register_forward_hook(lambda m, i, o: seen.update(fc1=tuple(o.shape)))
    with torch.no_grad():
        out = block(torch.zeros(8, dict(calc.shape_trace(cfg))["with_cls"][1], cfg.dim))
    out = out[0] if isinstance(out, tuple) else out  # (B, T, D), with or without weights
    assert facts["q1_fc1"] == str(seen["fc1"])
    assert facts["q1_out"] == str(tuple(out.shape))
    assert facts["jax_pos_std"] == 0.02  # vit_jax/models_vit.py: normal(stddev=0.02)


def test_ch08_quiz_and_pre_logits_width():
    facts = _facts(ch08_solutions.in_prose, 8)
    assert facts["s16_patches"] == (224 // 16) ** 2
    width = facts["pre_logits_width_b16"]
    assert _recorded("ch08", "pre_logits_params_b16") == width * width + width


def test_ln_ten_is_the_loss_of_a_uniform_ten_class_softmax():
    loss = torch.nn.functional.cross_entropy(torch.zeros(1, 10), torch.tensor([3])).item()
    assert f"{loss:.1f}" == f"{_facts(ch09_solutions.in_prose, 9)['ln_ten']:.1f}"


def test_deletion_verdicts_obey_their_quoted_intervals():
    """Rollout's deletion area against another map's is lower or higher exactly when the
    quoted 95% interval of the paired difference excludes zero."""
    for other in ("raw", "saliency"):
        lo = _recorded("ch10", f"del_rollout_minus_{other}_lo")
        hi = _recorded("ch10", f"del_rollout_minus_{other}_hi")
        want = "lower" if hi < 0 else "higher" if lo > 0 else "indistinguishable"
        assert _recorded("ch10", f"del_rollout_vs_{other}") == want


def test_a_number_in_math_clothing_counts_outside_the_exercises():
    page = "\n".join(
        [
            "Trained at $224$ pixels; the weights are $W \\in R^{768}$.",
            "## Exercises",
            "1. Call it on a $225 \\times 225$ image with rows of $768$ numbers.",
            "## Summary",
            "It reaches $0.95$.",
        ]
    )
    assert typed_numbers(page) == [(1, "224"), (5, "0.95")]


def test_window_sizes_quoted_are_the_ones_the_window_facts_use():
    facts = _facts(ch10_solutions.in_prose, 10)
    small, big = facts["win_image"], facts["win_image_big"]
    assert _recorded("ch10", "win_tokens_224") == (small // 4) ** 2
    pairs = ch10_solutions.attention_pairs
    ratio = pairs(big, 4, None) / pairs(big, 4, 7)
    assert _recorded("ch10", "win_ratio_896") == pytest.approx(ratio)


BOUND_BEFORE = re.compile(
    r"(at most|within|agree to|drops to|differ by|changes? by|largest (difference|change)( is)?)"
    r"\s*\(?$"
)


def test_no_exact_zero_is_printed_as_a_bound() -> None:
    """Printing "differ by at most 0" says less than the computation showed: a largest difference of
    exactly zero goes through ``max_diff``, which prints "exactly 0"."""
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    bad = []
    for page in sorted(DOCS.glob("**/*.md")):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"\{\{\s*(ch\d\d)\.(\w+)\s*\}\}", text):
            value = facts.get(m.group(1), {}).get(m.group(2), {}).get("value")
            if isinstance(value, int | float) and not isinstance(value, bool) and value == 0:
                before = " ".join(text[max(0, m.start() - 60) : m.start()].split())
                if BOUND_BEFORE.search(before):
                    bad.append(f"{page.name}: ...{before[-40:]} {m.group(0)}")
    assert not bad, bad
