"""Chapter 1: receptive fields measured by gradients, the long-range task, the paper's table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vitbook.data.longrange import mirror_strips, pair_distance
from vitbook.engine import Recorder
from vitbook.figures.ch01_why import (
    local_reach_px,
    paper_data,
    plain_stack_footprints,
    small_cnn_footprint,
)

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


def test_plain_stack_receptive_field_is_2k_plus_1():
    widths, _ = plain_stack_footprints(12, size=41)
    assert widths == [2 * k + 1 for k in range(1, 13)]


def test_small_cnn_receptive_field():
    width, grad = small_cnn_footprint(128)
    assert width == 32
    assert grad.shape == (128, 128)


def test_local_reach_counts_the_tokens_own_cell():
    """After its blocks a token of vit_local has heard from the cells the windowed attention
    masks chain together: LOCAL_RADIUS more on either side per block, plus its own cell."""
    from vitbook.experiments import longrange

    cols, blocks, radius = 16, longrange.task_config().depth, longrange.LOCAL_RADIUS
    attn = longrange.WindowedAttention(dim=8, heads=2, cols=cols, radius=radius)
    step = attn.allowed[1:, 1:].int()  # which patch tokens each one attends to, one block
    reach = step
    for _ in range(blocks - 1):
        reach = (reach @ step).clamp(max=1)
    cells = int(reach[cols // 2].sum())  # a token away from the ends of the strip
    cell = longrange.TASK["cell"]
    assert cells == 2 * blocks * radius + 1
    assert local_reach_px() == (2 * blocks * radius + 1) * cell == cells * cell


def test_mirror_strips_symmetry_and_labels():
    x, y, d = mirror_strips(400, noise=0.0, seed=3)
    assert x.shape == (400, 1, 4, 64)
    img = x[:, 0].numpy()
    symmetric = np.all(img == img[:, :, ::-1], axis=(1, 2))
    assert np.array_equal(symmetric, y.numpy() == 0)  # intact exactly when mirror-symmetric
    assert 150 < int(y.sum()) < 250
    allowed = {pair_distance(c) for c in range(8)}
    assert set(d[y == 1].tolist()) <= allowed and set(d[y == 0].tolist()) == {0}
    assert pair_distance(0) == 60 and pair_distance(7) == 4


def test_mirror_strips_is_seeded():
    a, b = mirror_strips(50, seed=5), mirror_strips(50, seed=5)
    assert all(np.array_equal(u.numpy(), v.numpy()) for u, v in zip(a, b, strict=True))
    assert not np.array_equal(a[0].numpy(), mirror_strips(50, seed=6)[0].numpy())


def test_paper_table5():
    rec = Recorder(1)
    paper_data(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["t5_in1k_b16"] == 77.91 and f["t5_in1k_l16"] == 76.53
    assert f["t5_in1k_l16"] < f["t5_in1k_b16"]  # bigger is worse on ImageNet-1k alone
    assert f["t5_jft_h14"] == 88.04 and f["t5_jft_l16"] > f["t5_jft_b16"]


@pytest.mark.slow
def test_longrange_facts():
    f = {k: v["value"] for k, v in json.loads(FACTS.read_text())["ch01"].items()}
    assert abs(f["vit_params"] - f["cnn_params"]) / f["vit_params"] < 0.1  # similar size
    assert f["seeds"] >= 3
    for name in ("vit", "vit_mean", "cnn", "cnn_narrow"):
        assert f[f"{name}_acc_lo"] <= f[f"{name}_acc"] <= f[f"{name}_acc_hi"]
        # accuracy is the mean of the intact and the defective halves (about half each)
        assert min(f[f"{name}_intact_acc"], f[f"{name}_defects_acc"]) <= f[f"{name}_acc"] + 0.05

    def verdict(a, b):
        return ("higher" if f[f"{a}_lo"] > f[f"{b}_hi"] else
                "lower" if f[f"{a}_hi"] < f[f"{b}_lo"] else "indistinguishable")  # fmt: skip

    assert f["vit_vs_cnn"] == verdict("vit_acc", "cnn_acc")
    assert f["cnn_narrow_vs_wide"] == verdict("cnn_narrow_acc", "cnn_acc")
    assert f["vit_far_vs_cnn_far"] == verdict("vit_far_acc", "cnn_far_acc")
    assert f["mean_vs_local"] == verdict("vit_mean_acc", "vit_local_acc")  # the read-out control
    assert f["mean_vs_vit"] == verdict("vit_mean_acc", "vit_acc")
    assert f["vit_mean_solved"] + f["vit_mean_failed"] <= f["seeds"]
    assert f["rf_closed_form_ok"] == "yes" and f["cnn_rf"] == 32
    assert f["cnn_short_vs_plateau"] == verdict("cnn_short_acc", "cnn_acc")
    # the baselines of the curves by distance: intact parts flagged, in the runs that trained
    if f["cnn_failed"] == 0:
        assert f["cnn_intact_flagged"] == pytest.approx(1 - f["cnn_intact_acc"])
    # leaving out the failed runs can only raise the ViT's share of intact parts passed
    assert f["vit_ok_intact_acc"] >= f["vit_intact_acc"]
    assert f["vit_ok_intact_acc_lo"] >= f["vit_intact_acc_lo"]
    # a failed run that answers one class scores one class's share or the other's; the
    # shares are taken in pairs (y, 1 - y), so the lowest and the highest add up to one
    assert f["vit_failed_one_class"] <= f["vit_plateau_failed"]
    assert f["vit_failed_val_lo"] + f["vit_failed_val_hi"] == pytest.approx(1)


def test_paper_table2_and_deit_facts():
    rec = Recorder(1)
    paper_data(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["t2_h14_jft"] == 88.55 and f["t2_h14_jft_days"] == 2.5
    assert f["t2_bit_l"] == 87.54 and f["t2_bit_l_days"] == 9.9
    # the headline: ViT-H/14 beats BiT-L with about a quarter of the compute
    assert f["t2_h14_jft"] > f["t2_bit_l"] and f["t2_bit_over_h14_days"] == pytest.approx(3.96)
    # DeiT at 224 beats ViT-B/16 on ImageNet-1k fine-tuned at 384, same 300 epochs
    assert f["deit_b"] > f["t5_in1k_b16"] and f["deit_res"] < f["finetune_res"]
    # Table 2's "88.4/88.5*": 88.4 carries the core-days, the starred 88.5 is FixRes's
    assert (f["t2_noisy_student"], f["t2_noisy_student_fixres"]) == (88.4, 88.5)
    q = {k: v.get("quoted", "") for k, v in rec.facts.items()}
    assert q["t2_noisy_student_fixres"].startswith("Table 2 (its footnote")
    assert q["t2_noisy_student"] == "Table 2, Dosovitskiy et al. 2021"
    assert q["t2_bit_over_h14_days"] == ""  # computed from two quoted numbers: not quoted


def test_receptive_field_example_is_read_from_the_measured_widths():
    """The distance the text and quiz 2 use, the width it needs and the layers that give it."""
    from vitbook.figures.ch01_why import receptive_field

    rec = Recorder(1)
    receptive_field(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    d = f["rf_example_d"]
    assert f["rf_example_span"] == d + 1
    assert 2 * f["layers_for_d16"] + 1 >= d + 1 > 2 * (f["layers_for_d16"] - 1) + 1
    assert f["rf_shown"] == "1, 4 and 16" and f["rf_crop"] % 2 == 1


def test_self_supervision_facts():
    rec = Recorder(1)
    paper_data(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["ssl_b16"] == 79.9 and f["ssl_mask_share"] == 0.5 and f["mae_mask_share"] == 0.75
    # the masked-patch result sits between from-scratch and supervised pre-training
    assert f["ssl_gain_over_scratch"] > 0 and f["ssl_gap_to_supervised"] > 0


def test_longrange_scores_count_intact_parts():
    """A model that flags every part finds every defect but passes no intact part."""
    from vitbook.figures.ch01_why import scores

    dist = np.array([0, 0, 8, 40, 0, 60])
    flag_all = {"hit": dist > 0, "distance": dist, "val_acc": [0.5, 0.5]}
    sc = scores(flag_all, far=32)
    assert sc["defects"] == 1.0 and sc["intact"] == 0.0 and sc["acc"] == 0.5
    assert sc["near"] == 1.0 and sc["far"] == 1.0 and sc["failed"]


def test_vit_mean_differs_from_vit_local_only_in_the_window(monkeypatch):
    """The read-out control is vit_local with a window over the whole strip: the same
    parameters and initial weights, the same masks for the class token, and the same outputs
    as vit_local once vit_local's window is widened to the whole strip."""
    import torch

    from vitbook.experiments import longrange
    from vitbook.experiments.longrange_readout import build_mean, windowed_vit

    cols = 16
    x = torch.rand(3, 1, longrange.TASK["cell"], cols * longrange.TASK["cell"])
    torch.manual_seed(0)
    local = longrange.build("vit_local", cols).eval()
    torch.manual_seed(0)
    mean = build_mean(cols).eval()
    torch.manual_seed(0)
    same = windowed_vit(cols, longrange.LOCAL_RADIUS).eval()  # vit_local, built here
    a, b = local.state_dict(), mean.state_dict()
    assert list(a) == list(b) and all(a[k].shape == b[k].shape for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)  # same initial weights for one seed
    torch.manual_seed(0)
    full = longrange.build("vit", cols).state_dict()  # the full ViT starts there too
    assert list(full) == list(b) and all(torch.equal(full[k], b[k]) for k in b)
    assert mean.cfg.pool == local.cfg.pool == "mean"
    with torch.no_grad():
        assert torch.equal(same(x), local(x))
        assert not torch.allclose(mean(x), local(x))  # the windows differ, and so do outputs
    for lb, mb in zip(local.blocks, mean.blocks, strict=True):
        la, ma = lb.attn.allowed, mb.attn.allowed
        assert torch.equal(la[0], ma[0]) and torch.equal(la[:, 0], ma[:, 0])  # class token alike
        assert int(la[0].sum()) == 1 and int(la[:, 0].sum()) == 1  # it sees only itself
        assert bool(ma[1:, 1:].all()) and not bool(la[1:, 1:].all())  # global vs windowed
    monkeypatch.setattr(longrange, "LOCAL_RADIUS", cols - 1)  # a window over the whole strip
    torch.manual_seed(0)
    wide = longrange.build("vit_local", cols).eval()
    with torch.no_grad():
        assert torch.equal(wide(x), mean(x))


def test_strip_run_trains_as_longrange_run(monkeypatch):
    """The control's training is longrange_run's, model aside: on a tiny budget the two give the
    same record for vit_local."""
    from vitbook.experiments import longrange
    from vitbook.experiments.longrange_readout import strip_run

    for name, value in (("N_TRAIN", 64), ("N_VAL", 32), ("N_TEST", 32), ("MAX_EPOCHS", 2)):
        monkeypatch.setattr(longrange, name, value)
    ours = strip_run(lambda: longrange.build("vit_local", 16), seed=1)
    theirs = longrange.longrange_run("vit_local", seed=1)
    for key in ("params", "val_acc", "train_acc", "best_epoch", "test_acc"):
        assert ours[key] == theirs[key], key
    for key in ("hit", "flagged", "distance"):
        assert np.array_equal(ours[key], theirs[key]), key


def test_far_margin_is_zero_for_a_run_that_ignores_the_marks():
    """The local variant's far defects are scored against its intact parts: a run that flags
    every part (or a fixed share of each) has no margin; one that flags only far defects, 1."""
    from vitbook.figures.ch01_why import far_margin

    dist = np.array([0, 0, 0, 0, 8, 36, 44, 52, 60])
    assert far_margin({"flagged": np.ones(9, bool), "distance": dist}) == 0.0
    half = np.array([1, 0, 1, 0, 0, 1, 0, 1, 0], bool)  # half the intact, half the far defects
    assert far_margin({"flagged": half, "distance": dist}) == 0.0
    assert far_margin({"flagged": dist >= 32, "distance": dist}) == 1.0
    only_near = {"flagged": (dist > 0) & (dist < 32), "distance": dist}
    assert far_margin(only_near) == 0.0  # near defects do not count as far ones


def test_fisher_p_two_sided():
    """Known values of the two-sided Fisher exact test (hypergeometric tables summed)."""
    from vitbook.figures.ch01_why import fisher_p

    assert fisher_p(1, 10, 0, 10) == pytest.approx(1.0)  # one failure against none
    assert fisher_p(3, 3, 0, 3) == pytest.approx(0.1)  # 2 of the 20 tables, each 1/20
    assert fisher_p(10, 10, 0, 10) == pytest.approx(2 / 184756)  # C(20, 10) tables
    assert fisher_p(8, 10, 1, 6) == pytest.approx(0.034965, abs=1e-5)  # scipy's value


def test_exercise_2_narrow_strip_prediction_holds_over_the_seeds():
    """Exercise 2's worked solution predicts that the narrow strip helps the CNN and leaves the
    ViT where it was; the frozen runs (10 seeds each, plateau budget) must bear that out."""
    import json
    from pathlib import Path

    facts = json.loads((Path(__file__).resolve().parents[1] / "figures" / "facts.json")
                       .read_text(encoding="utf-8"))["ch01"]  # fmt: skip
    f = {k: v["value"] for k, v in facts.items()}
    assert f["sol_ex2_seeds"] == f["seeds"] >= 5
    assert f["sol_ex2_cnn_narrow_vs_wide"] == "higher"
    assert f["sol_ex2_vit_narrow_vs_wide"] != "lower"
    acc = [f[f"sol_ex2_vit_narrow_acc{s}"] for s in ("_lo", "", "_hi")]
    assert acc == sorted(acc)
    assert 0 <= f["sol_ex2_vit_narrow_failed"] <= f["sol_ex2_seeds"]
