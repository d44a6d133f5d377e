"""Worked solutions of the exercises (issue 17): every exercise of a chapter with solutions has
one, hidden by default, and the numbers they quote are computed and right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from vitbook import calc
from vitbook.figures import ch02_solutions, ch03_solutions, ch07_solutions, ch08_solutions
from vitbook.model import preset

DOCS = Path(__file__).resolve().parents[1] / "docs"
WITH_SOLUTIONS = [
    "00-see-it-in-action.md",
    "09-training.md",
    "02-patches.md",
    "03-patch-embedding.md",
    "07-encoder-block.md",
    "08-whole-model.md",
]


class Rec:
    """Collects ``rec.fact`` calls the way the engine does, without writing anything."""

    def __init__(self) -> None:
        self.facts: dict = {}

    def fact(self, name, value, fmt="{}", **_):
        self.facts[name] = value


def run(item) -> dict:
    rec = Rec()
    item.compute(rec)
    return rec.facts


@pytest.mark.parametrize("page", WITH_SOLUTIONS)
def test_each_exercise_has_a_collapsed_solution(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split("## Exercises", 1)[1].split("\n## ", 1)[0]
    exercises = re.findall(r"^\d+\. \*\*", section, re.M)
    solutions = re.findall(r'^    \?\?\? success "Solution"$', section, re.M)
    assert len(exercises) == len(solutions) > 0
    assert "!!! success" not in section  # collapsed (???), never open


def test_chapter2_solution_numbers():
    f = run(ch02_solutions.solutions)
    assert f["sol_ex1_shape"] == "(4, 16, 49)"
    assert f["sol_ex2_lost"] == 225**2 - 224**2 and f["sol_ex2_covered"] == 224
    assert f["sol_ex3_seq"] == (1024 // 16) ** 2 + 1
    assert f["sol_ex3_entries"] == f["sol_ex3_seq"] ** 2


def test_chapter3_solution_numbers():
    f = run(ch03_solutions.solutions)
    assert f["sol_ex1_tokens"] == "(2, 576, 192)"
    assert f["sol_ex2_wrong"] > 0.1 and f["sol_ex2_fixed"] < 1e-4  # the bug, then the fix
    assert f["sol_ex3_macs"] == f["sol_ex3_calc"] == 196 * 768 * 768


def test_unfold_fix_matches_the_convolution():
    torch.manual_seed(1)
    proj = torch.nn.Conv2d(3, 16, kernel_size=4, stride=4)
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        conv = proj(x).flatten(2).transpose(1, 2)
        fixed = ch03_solutions.unfold_embed(x, proj, 4, fixed=True)
        buggy = ch03_solutions.unfold_embed(x, proj, 4, fixed=False)
    assert torch.allclose(conv, fixed, atol=1e-5)
    assert not torch.allclose(conv, buggy, atol=1e-3)


def test_chapter7_and_8_solution_numbers():
    f7 = run(ch07_solutions.solutions)
    assert f7["sol_ex3_l16_block"] == f7["sol_ex3_l16_block_calc"]
    f8 = run(ch08_solutions.solutions)
    assert (f8["sol_ex1_grid"], f8["sol_ex1_seq"], f8["sol_ex1_heads"]) == (16, 257, 16)
    assert f8["sol_ex1_qkv"] == 3 * preset("vit-h/14").dim
    m = calc.macs(preset("vit-b/16", image_size=384))
    assert f8["sol_ex2_gmacs_384"] == m["total"] / 1e9
    assert f8["sol_ex2_attn_share"] > f8["sol_ex2_attn_share_224"]  # T^2 grows faster


def test_strict_false_does_not_forgive_a_position_table_of_another_shape():
    """Chapter 9, exercise 3's solution: ``strict=False`` ignores missing and unexpected keys,
    but a ``pos_embed`` of another grid still raises, so a model that "works" kept its own."""
    import dataclasses

    from vitbook.model import VisionTransformer
    from vitbook.runs import SHAPES_CFG

    small = VisionTransformer(cfg=SHAPES_CFG)
    large = VisionTransformer(cfg=dataclasses.replace(SHAPES_CFG, image_size=48))
    with pytest.raises(RuntimeError, match="size mismatch for pos_embed"):
        large.load_state_dict(small.state_dict(), strict=False)
    state = {k: v for k, v in small.state_dict().items() if k != "pos_embed"}
    before = large.pos_embed.detach().clone()
    result = large.load_state_dict(state, strict=False)
    assert result.missing_keys == ["pos_embed"]
    assert torch.equal(large.pos_embed, before)  # the fresh table, untouched
