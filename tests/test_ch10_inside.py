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


def test_after_vit_table_matches_reference_facts():
    assert fact("swin_t_top1") == "81.3" and fact("swin_b_params") == "88M"
    assert fact("cvt21_top1") == "82.5" and fact("mvit_s_params") == "5.6M"
    assert fact("vitb_top1") == "77.9" and fact("deitb_top1") == "81.8"


def test_filters_and_positions():
    assert 0 < fact("pc1_var") <= 1
    assert fact("pc12_var") >= fact("pc1_var")
    assert fact("filter_values") == 48
    assert fact("sim_neighbour") > fact("sim_far")  # the grid was learned


def test_attention_distance_in_range():
    image = fact("image_px")
    for name in ("dist_l1_min", "dist_l1_max", "dist_last_min", "dist_last_max"):
        assert 0 <= fact(name) <= image * np.sqrt(2)
    assert fact("dist_l1_min") <= fact("dist_l1_max")
