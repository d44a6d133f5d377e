"""Chapter 9's learning-rate sensitivity: the band arithmetic, and the recorded sweep
(figures/facts.json) against what the page says about it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vitbook.figures.ch09_lrsense import BAND, MODELS, RATES, SEEDS, band, seeds_at, width

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


def fact(name: str):
    return json.loads(FACTS.read_text())["ch09"][name]["value"]


def test_band_keeps_the_rates_within_the_margin_of_the_best():
    means = {1e-4: 0.90, 1e-3: 0.97, 1e-2: 0.955, 1e-1: 0.10}
    assert band(means, 0.02) == [1e-3, 1e-2]
    assert band(means, 0.10) == [1e-4, 1e-3, 1e-2]
    assert width(band(means, 0.02)) == pytest.approx(1.0)
    assert width([3e-4]) == 0.0  # one rate: no width


def test_the_sweep_spans_decades_with_five_seeds_each():
    assert math.log10(RATES[-1] / RATES[0]) >= 3.9
    assert len(RATES) >= 5 and SEEDS == tuple(range(5))
    assert fact("sense_seeds") == 5 and fact("sense_n_rates") == len(RATES)
    # the largest rate, where a run can fail, has ten seeds, 0 to 9
    assert seeds_at(RATES[-1]) == tuple(range(10)) and seeds_at(RATES[0]) == SEEDS
    assert fact(f"sense_vit_{len(RATES) - 1}_seeds") == 10


def test_both_models_reach_a_plateau_at_their_best_rate():
    # the question is only fair if both learn the task: each best rate ends far above chance
    for m in MODELS:
        assert fact(f"sense_{m}_best_test_lo") > 0.9, m


def test_band_widths_and_the_verdict_agree():
    for m in MODELS:
        rates = [float(r) for r in fact(f"sense_{m}_band2").split(", ")]
        assert fact(f"sense_{m}_band2_width") == pytest.approx(width(rates))
        assert fact(f"sense_{m}_best") in fact(f"sense_{m}_band2").split(", ")
        # a wider margin never narrows the band
        assert fact(f"sense_{m}_band5_width") >= fact(f"sense_{m}_band2_width")
    lo = {m: fact(f"sense_{m}_band2_seed_lo") for m in MODELS}
    hi = {m: fact(f"sense_{m}_band2_seed_hi") for m in MODELS}
    expected = ("lower" if hi["vit"] < lo["cnn"] else "higher" if lo["vit"] > hi["cnn"]
                else "indistinguishable")  # fmt: skip
    assert fact("sense_band2_verdict") == expected
    assert BAND[0] == fact("sense_band2_points") / 100


def test_failures_are_counted_per_rate():
    for m in MODELS:
        per = [fact(f"sense_{m}_{i}_failed") for i in range(len(RATES))]
        assert sum(per) == fact(f"sense_{m}_failed")
