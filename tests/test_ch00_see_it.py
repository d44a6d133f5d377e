"""Chapter 0: the hand-set face ViT and the facts its page quotes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from vitbook.data.face import face_tensor
from vitbook.engine.registry import Recorder
from vitbook.figures import ch00_see_it as ch00
from vitbook.handset import handset, patch_pca
from vitbook.model import VisionTransformer, preset
from vitbook.patches import patchify

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


@pytest.fixture(scope="module")
def run():
    return ch00.run_face_model()


def test_patch_embedding_is_the_pca_projection(run):
    model, out, basis = run
    x = patchify(face_tensor(224), 32)[0].double()  # (49, 3072)
    comps, mean = torch.from_numpy(basis["components"]).double(), torch.from_numpy(basis["mean"])
    scores = (x - mean.double()) @ comps.T  # (49, 8)
    assert out["patches"].shape == (1, 49, 8)
    assert torch.allclose(out["patches"][0].double(), scores, atol=1e-4)
    # components are orthonormal; the tokens are centred (mean of PCA scores is zero)
    assert torch.allclose(comps @ comps.T, torch.eye(8, dtype=torch.float64), atol=1e-5)
    assert out["patches"][0].mean(0).abs().max() < 1e-4
    # the 8 shares are sorted and sum to less than one
    share = basis["share"]
    assert np.all(np.diff(share) <= 0) and 0.8 < share.sum() < 1.0


def test_heads_read_their_own_features(run):
    model, _, _ = run
    w = model.blocks[0].attn.qkv.weight  # (24, 8): q, k, v rows
    head1_rows = torch.cat([w[0:4], w[8:12], w[16:20]])
    head2_rows = torch.cat([w[4:8], w[12:16], w[20:24]])
    assert head1_rows[:, 4:].abs().sum() == 0 and head1_rows[:, :4].abs().sum() == 12
    assert head2_rows[:, :4].abs().sum() == 0 and head2_rows[:, 4:].abs().sum() == 12


def test_shapes_and_attention_rows(run):
    _, out, _ = run
    assert out["with_cls"].shape == out["with_pos"].shape == (1, 50, 8)
    assert len(out["attn"]) == 2 and out["attn"][0].shape == (1, 2, 50, 50)
    for a in out["attn"]:
        assert torch.allclose(a.sum(-1), torch.ones(1, 2, 50), atol=1e-6)
    assert out["logits"].shape == (1, 2)
    # the class token is the fixed question e_1 - e_5, the same for every image
    assert out["with_cls"][0, 0].tolist() == [1, 0, 0, 0, -1, 0, 0, 0]


def test_deterministic_and_private_seed():
    torch.manual_seed(123)
    _, a, _ = ch00.run_face_model(seed=0)
    torch.manual_seed(999)  # the global seed must not matter: handset uses its own generator
    _, b, _ = ch00.run_face_model(seed=0)
    assert torch.equal(a["logits"], b["logits"])
    _, c, _ = ch00.run_face_model(seed=1)
    assert not torch.equal(a["logits"], c["logits"])


def test_handset_refuses_other_models():
    with pytest.raises(ValueError, match="preset\\('face'\\)"):
        handset(VisionTransformer(cfg=preset("tinyvit8")), torch.zeros(1, 1, 8, 8))


def test_patch_pca_rebuilds_exactly_with_all_components():
    x = patchify(face_tensor(224), 32)[0]
    comps, mean, share = patch_pca(x, 48)  # rank of 49 centred patches is 48
    rebuilt = mean + ((x.double() - mean) @ comps.T) @ comps
    assert torch.allclose(rebuilt, x.double(), atol=1e-6)
    assert abs(float(share.sum()) - 1.0) < 1e-9


def test_param_accounting():
    rec = Recorder(0)
    ch00.patches_and_basis(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["params_pca"] == 3 * 32 * 32 * 8 + 8 == 24_584
    assert f["params_fixed"] == 8 + 50 * 8 + 2 * (8 * 24 + 24) + 2 * (8 * 8 + 8) == 984
    assert f["params_seeded"] == 2 * (8 * 32 + 32 + 32 * 8 + 8) + (8 * 2 + 2) == 1_122
    assert f["params_default"] == 2 * 2 * 16 + 16 == 80
    assert (
        f["params_total"]
        == 26_770
        == sum(f[f"params_{k}"] for k in ("pca", "fixed", "seeded", "default"))
    )
    assert f["b16_params"] == 86_567_656


def test_recorded_facts():
    facts = json.loads(FACTS.read_text())["ch00"]
    v = {k: x["value"] for k, x in facts.items()}
    assert v["n_patches"] == 49 and v["seq_len"] == 50 and v["chosen"] == 24
    assert v["row_sum_err"] < 1e-6
    assert abs(v["prob_0"] + v["prob_1"] - 1) < 1e-6
    assert v["mlp_change_max"] < 0.1 < v["attn_change_chosen"]  # an untrained MLP is near silent
    assert v["cls_low_l1h1"] < v["uniform"] < v["cls_max_l1h1"]


def test_mlp_is_silent_only_at_small_width():
    """Ch 0 says the untrained MLP is nearly silent at D = 8 and not at ViT-B/16's width."""
    rec = Recorder(0)
    ch00.mlp_silence(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["mlp_gain_face"] < 0.01
    assert 0.2 < f["mlp_gain_b16"] < 0.6
    # the rough law 0.02^2 sqrt(D M) / 2 holds while hidden units are small (D = 8)
    assert abs(f["mlp_gain_face"] - 0.02**2 * (8 * 32) ** 0.5 / 2) < 0.002


def test_head_1_peaks_where_layernormed_feature_1_peaks():
    rec = Recorder(0)
    ch00.attention(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["cls_argmax_l1h1"] == f["ln_feature_1_max_patch"]
    rec2 = Recorder(0)
    ch00.feature_maps(rec2)
    assert rec2.facts["feature_1_max_patch"]["value"] != f["cls_argmax_l1h1"]


def test_overview_arrows_carry_the_models_shapes():
    rec = Recorder(0)
    d = ch00.overview(rec)
    shapes = [s for _, s, _, _ in d["stages"]]
    b16 = [s for _, _, s, _ in d["stages"]]
    assert shapes[0] == (1, 3, 224, 224) and shapes[1] == (1, 49, 8) and shapes[2] == (1, 50, 8)
    assert shapes[-2] == (1, 8) and shapes[-1] == (1, 2)
    assert b16[1] == (1, 196, 768) and b16[2] == (1, 197, 768) and b16[-1] == (1, 1000)
    # the model itself agrees, stage by stage
    model, out, _ = ch00.run_face_model()
    assert tuple(out["patches"].shape) == shapes[1] and tuple(out["logits"].shape) == shapes[-1]


def test_the_printed_token_is_the_product_plus_the_bias(run):
    """The page prints x_24 E (the product alone) and x_24 E + b (the token): both checked
    against the pixels of patch 24 and the hand-set weights."""
    model, out, _ = run
    rec = Recorder(0)
    ch00.feature_maps(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    x24 = patchify(face_tensor(224), 32)[0, ch00.CHOSEN].double()  # (3072,)
    E = model.patch_embed.proj.weight.reshape(8, -1).double().T  # (3072, 8)
    b = model.patch_embed.proj.bias.double()
    raw = [f[f"chosen_raw_{k + 1}"] for k in range(8)]
    token = [f[f"chosen_feature_{k + 1}"] for k in range(8)]
    assert torch.allclose(torch.tensor(raw, dtype=torch.float64), x24 @ E, atol=1e-3)
    assert torch.allclose(torch.tensor(token, dtype=torch.float64), x24 @ E + b, atol=1e-3)
    assert raw[0] > 5 * abs(token[0])  # the bias removes the brightness every patch shares
