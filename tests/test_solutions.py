"""Worked solutions of the exercises (issue 17): every exercise of a chapter with solutions has
one, hidden by default, and the numbers they quote are computed and right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from vitbook import calc
from vitbook.figures import (
    ch01_solutions,
    ch02_solutions,
    ch03_solutions,
    ch04_solutions,
    ch05_solutions,
    ch06_solutions,
    ch07_solutions,
    ch08_solutions,
    ch10_solutions,
)
from vitbook.model import preset

DOCS = Path(__file__).resolve().parents[1] / "docs"
WITH_SOLUTIONS = [
    "00-see-it-in-action.md",
    "09-training.md",
    "02-patches.md",
    "03-patch-embedding.md",
    "07-encoder-block.md",
    "08-whole-model.md",
    "01-why-transformers.md",
    "04-cls-and-position.md",
    "05-self-attention.md",
    "06-multi-head-attention.md",
    "10-inside-a-trained-vit.md",
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
    # exercise 1: the book's pre-norm stream grows; the student's is reset at every block
    assert f7["sol_ex1_growth_right_lo"] > 2 and f7["sol_ex1_max_buggy"] < 1.5
    assert f7["sol_ex1_growth_buggy_hi"] < f7["sol_ex1_growth_right_lo"]
    f8 = run(ch08_solutions.solutions)
    assert (f8["sol_ex1_grid"], f8["sol_ex1_seq"], f8["sol_ex1_heads"]) == (16, 257, 16)
    assert f8["sol_ex1_qkv"] == 3 * preset("vit-h/14").dim
    m = calc.macs(preset("vit-b/16", image_size=384))
    assert f8["sol_ex2_gmacs_384"] == m["total"] / 1e9
    assert f8["sol_ex2_attn_share"] > f8["sol_ex2_attn_share_224"]  # T^2 grows faster
    # exercise 3: S/16's MAC ratio lies between Ti/16's and B/16's, far below the pairs'
    ratios = [calc.macs(preset(n, image_size=384))["total"] / calc.macs(preset(n))["total"]
              for n in ("vit-ti/16", "vit-b/16")]  # fmt: skip
    assert min(ratios) < f8["sol_ex3_s16_macs_ratio"] < max(ratios)
    assert f8["sol_ex3_s16_macs_ratio"] < f8["sol_ex3_s16_pairs_ratio"] / 2
    # exercise 4: the FLOPs figure halved is the MACs figure
    assert f8["sol_ex4_halved"] == calc.macs(preset("vit-b/16"))["total"] / 1e9


def test_strict_false_does_not_forgive_a_position_table_of_another_shape():
    """Chapter 9, exercise 3's solution: ``strict=False`` ignores missing and unexpected keys,
    but a ``pos_embed`` of another grid still raises, so a model that "works" kept its own."""
    import dataclasses

    from vitbook.experiments.pretrain import SHAPES_CFG
    from vitbook.model import VisionTransformer

    small = VisionTransformer(cfg=SHAPES_CFG)
    large = VisionTransformer(cfg=dataclasses.replace(SHAPES_CFG, image_size=48))
    with pytest.raises(RuntimeError, match="size mismatch for pos_embed"):
        large.load_state_dict(small.state_dict(), strict=False)
    state = {k: v for k, v in small.state_dict().items() if k != "pos_embed"}
    before = large.pos_embed.detach().clone()
    result = large.load_state_dict(state, strict=False)
    assert result.missing_keys == ["pos_embed"]
    assert torch.equal(large.pos_embed, before)  # the fresh table, untouched


def test_chapter1_solution_numbers():
    f = run(ch01_solutions.solutions)
    assert f["sol_ex1_rf_nopool"] < f["sol_ex1_rf"]  # less pooling, a smaller field
    assert f["sol_ex3_layers"] == calc_layers(f["sol_ex3_d"]) == 256
    assert f["sol_ex3_vit_depth"] == preset("vit-b/16").depth


def calc_layers(d: int) -> int:
    """Smallest k with 2k + 1 >= d + 1: the receptive field of k stacked 3x3 layers."""
    return next(k for k in range(1, d + 1) if 2 * k + 1 >= d + 1)


def test_chapter4_solution_numbers():
    f = run(ch04_solutions.solutions)
    assert (f["sol_ex1_cls"], f["sol_ex1_pos"]) == ("(1, 1, 32)", "(1, 5, 32)")
    assert f["sol_ex1_z0"] == "(2, 5, 32)"
    assert f["sol_ex3_cls_fused"] < 1e-4 and f["sol_ex3_cls_explicit"] < 1e-4
    assert f["sol_ex3_one_patch"] > 100 * f["sol_ex3_logits_fused"]  # content still counts
    assert (
        f["sol_ex4_params"]
        == calc.param_breakdown(preset("vit-l/16", image_size=512))["pos_embed"]
        == 1025 * 1024
    )


def test_chapter5_solution_numbers():
    f = run(ch05_solutions.solutions)
    assert f["sol_ex1_w1"] > f["sol_ex1_before_w1"] and f["sol_ex1_w2"] < f["sol_ex1_before_w2"]
    assert abs(f["sol_ex1_w1"] + f["sol_ex1_w2"] + f["sol_ex1_w3"] - 1) < 1e-9
    assert f["sol_ex2_row_min"] < 0.9 and f["sol_ex2_row_max"] > 1.1
    assert f["sol_ex3_shape"] == "(4, 4, 1)" and f["sol_ex3_right_shape"] == "(1, 4, 4)"
    assert f["sol_ex3_b16_fails"] == "yes"
    m = calc.macs(preset("vit-b/16"))
    assert f["sol_ex4_qk"] * preset("vit-b/16").heads * preset("vit-b/16").depth == m["attn_qk"]
    t = f["sol_ex4_equal_t"]  # products and projection cost the same there
    assert 2 * t * t * 64 == t * 768 * 3 * 64


def test_student_transpose_reverses_every_axis():
    """Chapter 5, exercise 3: ``.T`` on a 3-D tensor reverses all axes (PyTorch warns about it
    once per process, so the warning itself is not asserted here)."""
    k = torch.zeros(2, 3, 5)
    assert k.T.shape == (5, 3, 2)


def test_chapter6_solution_numbers():
    f = run(ch06_solutions.solutions)
    assert f["sol_ex1_step3"] == "(3, 3, 2, 50, 4)" and f["sol_ex1_step5"] == "(3, 2, 50, 50)"
    assert f["sol_ex2_same_shape"] == "yes"
    assert f["sol_ex2_diff"] > 0.1 and f["sol_ex2_right_diff"] < 1e-5  # the swap is caught
    assert f["sol_ex3_dist3"] > f["sol_ex3_dist1"]
    m = calc.macs(preset("vit-b/16"))
    assert f["sol_ex4_products"] * 12 == m["attn_qk"] + m["attn_av"]
    assert f["sol_ex4_proj"] * 12 == m["qkv"] + m["proj"]


def test_chapter10_solution_numbers():
    f = run(ch10_solutions.solutions)
    import numpy as np

    ys, xs = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    c = np.stack([ys.ravel(), xs.ravel()], -1) * 4.0
    assert abs(f["sol_ex1_dist"] - np.linalg.norm(c[:, None] - c[None], axis=-1).mean()) < 1e-9
    assert f["sol_ex3_global"] == (1024 // 4) ** 4
    assert f["sol_ex3_window"] == (1024 // 4) ** 2 * 49


@pytest.mark.slow
def test_chapter10_exercise_2_rollout_without_the_identity() -> None:
    """Without the identity the rows of rollout become alike and the map lands in the box less
    often, on every pre-trained model (the facts the solution prints)."""
    f = run(ch10_solutions.solutions_rollout)
    assert f["sol_ex2_tv_a0_hi"] < 0.1 * f["sol_ex2_tv_a05_lo"]  # the rows collapse
    assert f["sol_ex2_n_a0_lower"] == f["sol_ex2_models"] == 5
    assert f["sol_ex2_hit_a0_lo"] > f["sol_ex2_chance"]  # still above chance
