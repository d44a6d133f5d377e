"""Chapter 10's recorded measurements (figures/facts.json) and its computed cost model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vitbook.figures.ch10_inside import _chance, _peak_inside, attention_pairs

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"
DOC = Path(__file__).resolve().parents[1] / "docs" / "10-inside-a-trained-vit.md"


def fact(name: str):
    return json.loads(FACTS.read_text())["ch10"][name]["value"]


def test_rollout_localisation_against_raw_and_chance():
    roll, raw, chance = fact("loc_rollout"), fact("loc_raw"), fact("loc_chance")
    assert roll > 2 * chance  # the maps point at the object far more often than chance
    # The text states which map wins through this fact; it must match the measurement.
    assert fact("loc_rollout_beats_raw") == ("yes" if roll > raw else "no")
    assert "{{ ch10.loc_rollout_beats_raw }}" in DOC.read_text()


def test_peak_inside_and_chance():
    maps = np.zeros((2, 8, 8))
    maps[0, 1, 1] = 1  # patch centre (6, 6)
    maps[1, 7, 7] = 1  # patch centre (30, 30)
    boxes = np.array([[2, 2, 12, 12], [2, 2, 12, 12]])
    assert _peak_inside(maps, boxes, 4).tolist() == [True, False]
    # box 0..32 covers every patch centre; box 0..8 covers 2x2 of 8x8
    assert _chance(np.array([[0, 0, 32, 32]]), (8, 8), 4) == 1.0
    assert _chance(np.array([[0, 0, 8, 8]]), (8, 8), 4) == pytest.approx(4 / 64)


def test_window_cost():
    assert attention_pairs(224, 4, None) == 3136**2
    assert attention_pairs(224, 4, 7) == 3136 * 49
    assert fact("win_ratio_224") == pytest.approx(3136 / 49)
    assert fact("win_growth_global") == pytest.approx(16)
    assert fact("win_growth_window") == pytest.approx(4)


def test_after_vit_table_is_placed_whole_and_consistent():
    """The reported sizes and accuracies (typed from the papers, see REFERENCE-FACTS) all reach
    the chapter's table, are well-formed, and agree with what the table's rows say."""
    from vitbook.engine.registry import Recorder
    from vitbook.figures.ch10_inside import after_vit

    rows = after_vit(Recorder(10))
    text = DOC.read_text()
    for k in rows:
        assert f"{{{{ ch10.{k}_params }}}}" in text and f"{{{{ ch10.{k}_top1 }}}}" in text, k
    params = {k: float(p.removesuffix("M")) for k, (p, _) in rows.items()}
    top1 = {k: float(t) for k, (_, t) in rows.items()}
    assert all(50 < t < 100 for t in top1.values())
    # DeiT-B is ViT-B with a better ImageNet-1k recipe: same size, higher accuracy
    assert params["deitb"] == params["vitb"] and top1["deitb"] > top1["vitb"]
    for family in (("cvt13", "cvt21"), ("mvit_xxs", "mvit_xs", "mvit_s"),
                   ("swin_t", "swin_s", "swin_b")):  # fmt: skip
        sizes = [params[k] for k in family]
        accs = [top1[k] for k in family]
        assert sizes == sorted(sizes) and accs == sorted(accs), family  # bigger is better


def test_filters_and_positions():
    assert fact("filter_values") == 48  # the text's 3 x 4 x 4
    # "the first twelve explain pc12_var, and pcs_for_90 are needed for 90%": consistent
    assert (fact("pcs_for_90") <= 12) == (fact("pc12_var") >= 0.9)
    assert fact("sim_neighbour") > fact("sim_far")  # the grid was learned


def test_uniform_attention_gives_the_recorded_uniform_distance():
    """mean_attention_distance of uniform attention is the recorded dashed line, and of
    attention to oneself is zero."""
    import torch

    from vitbook.analysis import mean_attention_distance

    grid, patch = 8, 4
    t = 1 + grid * grid
    uniform = torch.full((1, 2, t, t), 1.0 / t, dtype=torch.float64)
    d = mean_attention_distance(uniform, grid, patch)
    assert d.tolist() == pytest.approx([fact("dist_uniform")] * 2, abs=1e-9)
    assert fact("image_px") == grid * patch
    self_only = torch.eye(t, dtype=torch.float64)[None, None]
    assert mean_attention_distance(self_only, grid, patch).item() == 0.0


def test_every_head_sits_close_to_uniform():
    """The text: "Every head of every block sits close to the uniform value"."""
    uniform = fact("dist_uniform")
    for name in ("dist_l1_min", "dist_l1_max", "dist_last_min", "dist_last_max"):
        assert abs(fact(name) - uniform) < 0.1 * uniform, name
