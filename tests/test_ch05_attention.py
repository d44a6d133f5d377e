"""Chapter 5: the worked example, the four-token calculation and the sqrt(Dh) experiment."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from vitbook.engine import Recorder
from vitbook.figures.ch05_attention import (
    four_tokens,
    four_tokens_attention,
    four_tokens_through_module,
    scale_experiment,
    worked_attention,
    worked_example,
)

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


def test_worked_example_scaled_matches_reference() -> None:
    r = worked_attention(scale=True)
    assert r["scores"][0].tolist() == [2.0, 0.0, 1.0]
    assert r["scaled"][0].tolist() == [1.0, 0.0, 0.5]
    assert [round(w, 4) for w in r["weights"][0].tolist()] == [0.5065, 0.1863, 0.3072]
    assert [round(o, 3) for o in r["output"][0].tolist()] == [6.601, 3.399]
    assert abs(r["weights"].sum() - 1.0) < 1e-12


def test_worked_example_unscaled_matches_reference() -> None:
    r = worked_attention(scale=False)
    w = r["weights"][0].tolist()
    # exact values: e^s / (e^2 + e^0 + e^1)
    z = math.e**2 + 1 + math.e
    assert w == pytest.approx([math.e**2 / z, 1 / z, math.e / z], abs=1e-12)
    # REFERENCE-FACTS quotes 0.6653 / 0.0900 / 0.2447; the first is 0.66524 (rounds to 0.6652)
    assert [round(x, 4) for x in w] == [0.6652, 0.0900, 0.2447]
    assert w == pytest.approx([0.6653, 0.0900, 0.2447], abs=1e-4)


def test_worked_example_facts() -> None:
    rec = Recorder(5)
    worked_example(rec)
    f = {k: v["text"] for k, v in rec.facts.items()}
    assert (f["weight_1"], f["weight_2"], f["weight_3"]) == ("0.5065", "0.1863", "0.3072")
    assert (f["out_1"], f["out_2"]) == ("6.601", "3.399")
    assert (f["unscaled_weight_2"], f["unscaled_weight_3"]) == ("0.0900", "0.2447")
    assert f["ratio_w1_w3"] == f"{math.exp(0.5):.3f}"
    assert f["unscaled_ratio_w1_w3"] == f"{math.e:.3f}"


def test_four_tokens_by_hand_and_by_module() -> None:
    d = four_tokens_attention()
    # S = Q K^T / sqrt(2): check one entry by hand. CLS query [1, 1], patch-3 key [2, 2].
    assert d["s"][0, 3].item() == pytest.approx(4 / math.sqrt(2), abs=1e-12)
    assert torch.allclose(d["a"].sum(-1), torch.ones(4, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(d["o"], d["a"] @ d["v"], atol=1e-12)
    module_a = four_tokens_through_module(d)
    assert (module_a - d["a"]).abs().max().item() < 1e-12
    # Row 1 (patch 1): keys CLS, p1 and p3 tie, p2 scores zero.
    assert d["a"][1, 0].item() == pytest.approx(d["a"][1, 3].item(), abs=1e-12)
    assert d["a"][1, 2].item() < 0.01


def test_four_tokens_facts_and_wrong_axis() -> None:
    rec = Recorder(5)
    four_tokens(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["four_row_sum_max_dev"] < 1e-12
    assert f["four_max_diff_module"] < 1e-12
    # softmax over the wrong axis: rows no longer sum to one
    assert f["wrong_axis_row_sum_min"] < 0.5 and f["wrong_axis_row_sum_max"] > 1.5


def test_scale_experiment_small() -> None:
    r = scale_experiment(head_dims=(4, 64, 512), trials=200)
    s, u = r["scaled"], r["unscaled"]
    # spread: about 1 when scaled, about sqrt(Dh) when not
    for i, dh in enumerate((4, 64, 512)):
        assert 0.85 < s["std"][i] < 1.1
        assert 0.8 * math.sqrt(dh) < u["std"][i] < 1.1 * math.sqrt(dh)
    assert u["max_weight"][2] > 0.85 and s["max_weight"][2] < 0.2
    assert u["grad_norm"][2] < 0.01 < 0.1 < s["grad_norm"][2]
    assert s["flat_share"][2] == 0.0 and u["flat_share"][2] > 0.4


def test_softmax_jacobian_formula_matches_autograd() -> None:
    g = torch.Generator().manual_seed(1)
    s = torch.randn(7, generator=g, dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda x: x.softmax(-1), s)
    a = s.softmax(-1)
    assert torch.allclose(jac, torch.diag(a) - torch.outer(a, a), atol=1e-12)


def test_facts_file_has_chapter_5() -> None:
    facts = json.loads(FACTS.read_text())["ch05"]
    assert facts["weight_1"]["text"] == "0.5065"
    assert facts["out_1"]["text"] == "6.601" and facts["out_2"]["text"] == "3.399"
    assert facts["maxw_u_max"]["value"] > 0.85
    assert facts["grad_ratio_max"]["value"] > 10


def test_why_scale_collapse_is_read_from_the_data() -> None:
    """Fig. 5.3: at Dh = 64 the unscaled median gradient is still about the scaled one; the
    collapse (below half the scaled value) starts at 128."""
    from vitbook.figures.ch05_attention import why_scale

    rec = Recorder(5)
    why_scale(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["grad_collapse_dh"] == 128
    assert f["grad_u_64"] > 0.5 * f["grad_s_64"]
    assert f["grad_u_collapse"] < 0.5 * f["grad_s_64"]
    assert f["maxw_u_64"] > 0.75  # but the weights are already peaked at 64
