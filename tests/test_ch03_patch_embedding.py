"""Chapter 3: patch embedding as Conv2d and as Linear, its parameter count, and the PCA view."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from vitbook.data.face import face_tensor
from vitbook.engine.registry import Recorder
from vitbook.figures import ch03_patch_embedding as ch03
from vitbook.handset import patch_pca, pca_reconstruct
from vitbook.patches import patchify

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


def test_conv_equals_linear_and_loop():
    rec = Recorder(3)
    ch03.conv_equals_linear(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["max_diff"] < 1e-5
    assert f["max_diff_naive"] < 1e-5
    assert f["max_diff_wrong"] > 0.1  # the (P, P, C) order is a different map
    assert f["tokens"] == 196 and f["dim"] == 768


def test_equivalence_on_random_images_and_other_sizes():
    torch.manual_seed(0)
    for p, c, d in ((4, 1, 8), (8, 3, 16), (16, 3, 32)):
        x = torch.rand(2, c, 32, 32)
        conv = torch.nn.Conv2d(c, d, kernel_size=p, stride=p)
        with torch.no_grad():
            a = conv(x).flatten(2).transpose(1, 2)
            b = ch03.embed_linear(x, conv, p)
            n = ch03.embed_naive(x, conv.weight.reshape(d, -1), conv.bias, p)
        assert a.shape == (2, (32 // p) ** 2, d)
        assert (a - b).abs().max() < 1e-5 and (a - n).abs().max() < 1e-5


def test_param_count():
    rec = Recorder(3)
    ch03.param_count(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["params_b_16"] == f["params_b16_model"] == 16 * 16 * 3 * 768 + 768 == 590_592
    assert f["b16_weight"] + f["b16_bias"] == 590_592
    assert f["params_b_32"] == 4 * 16 * 16 * 3 * 768 + 768
    assert f["params_face"] == 24_584


def test_pca_reconstruction_error_falls_to_zero():
    x = patchify(face_tensor(224), 16)[0]
    comps, mean, share = patch_pca(x, 195)
    errs = [
        float(
            (pca_reconstruct(x[ch03.CHOSEN], comps, mean, k) - x[ch03.CHOSEN].double())
            .pow(2)
            .mean()
            .sqrt()
        )
        for k in (1, 8, 64, 195)
    ]
    assert errs[-1] < 1e-6
    assert errs[0] > errs[1] > errs[2] > errs[3]


def test_patch_pca_components_and_shares():
    """The components are orthonormal, largest variance first, with the stated sign rule, and
    each share is the variance of the patches' scores along it over the total variance."""
    x = patchify(face_tensor(224), 16)[0].double()
    comps, mean, share = patch_pca(x, 16)
    assert torch.allclose(comps @ comps.T, torch.eye(16, dtype=torch.float64), atol=1e-10)
    assert (comps.sum(dim=1) > 0).all()
    scores = (x - mean) @ comps.T  # (196, 16)
    total = (x - mean).pow(2).sum()
    assert torch.allclose(share, scores.pow(2).sum(0) / total, atol=1e-12)
    assert (share[:-1] >= share[1:]).all() and share[0] > 2 * share[-1]


def test_recorded_facts():
    facts = json.loads(FACTS.read_text())["ch03"]
    v = {k: x["value"] for k, x in facts.items()}
    assert v["max_diff"] < 1e-5
    assert v["params_b_16"] == 590_592
    assert v["rms_mean_k8"] > v["rms_mean_k16"] > v["rms_mean_k64"] > v["rms_mean_full"]
    assert v["rms_mean_full"] < 1e-6  # every component: the patches come back exactly
    assert v["rms_mean_k0"] > v["rms_mean_k8"]  # the mean patch alone is the worst


def test_pca_loses_nothing_only_on_its_own_patches():
    from vitbook.engine import Recorder
    from vitbook.figures.ch03_patch_embedding import pca_rebuild

    rec = Recorder(3)
    pca_rebuild(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["rms_mean_full"] < 1e-10  # fitted patches: exact
    assert f["rms_heldout_full"] > 0.01  # held-out photographs: clearly not
    assert f["rms_heldout_k8"] > f["rms_mean_k8"] and f["rms_heldout_k64"] > f["rms_mean_k64"]


def test_the_timing_helper_times_every_form_at_every_batch():
    """What the timing figure measures (shapes and signs only: no wall-clock assertion)."""
    from vitbook.figures.ch03_patch_embedding import time_embeddings

    ms = time_embeddings(32, 8, batches=(1, 2), repeats=1)
    assert set(ms) == {"naive", "linear", "conv"}
    assert all(v.shape == (2,) and (v > 0).all() for v in ms.values())
