"""The calculator: parameters, MACs and shapes from a config, checked against the model."""

from __future__ import annotations

import pytest
import torch

from vitbook.calc import flops, macs, param_breakdown, shape_trace, token_pairs_ratio
from vitbook.model import PRESETS, VisionTransformer, ViTConfig, preset


def test_b16_param_breakdown_matches_reference() -> None:
    p = param_breakdown(preset("vit-b/16"))
    assert p["patch_embed"] == 590_592
    assert p["pos_embed"] == 151_296
    assert p["cls_token"] == 768
    assert (p["qkv"], p["proj"], p["attn"]) == (1_771_776, 590_592, 2_362_368)
    assert p["mlp"] == 4_722_432
    assert p["norms"] == 3_072
    assert p["block"] == 7_087_872
    assert p["blocks"] == 12 * 7_087_872
    assert p["norm"] == 1_536
    assert p["head"] == 769_000
    assert p["total"] == 86_567_656


@pytest.mark.parametrize("name", list(PRESETS))
def test_calculator_equals_model_count(name: str) -> None:
    cfg = preset(name)
    with torch.device("meta"):
        m = VisionTransformer(cfg=cfg)
    assert param_breakdown(cfg)["total"] == m.num_params()


@pytest.mark.parametrize("pos", ["learned", "sincos2d", "none"])
def test_calculator_equals_model_count_variants(pos: str) -> None:
    cfg = ViTConfig(image_size=(32, 48), patch_size=8, dim=24, depth=3, heads=3, mlp_ratio=2.5,
                    num_classes=0, pos_embed=pos, qkv_bias=False)  # fmt: skip
    assert param_breakdown(cfg)["total"] == VisionTransformer(cfg=cfg).num_params()


def test_b16_macs() -> None:
    cfg = preset("vit-b/16")
    with_attn, without = macs(cfg), macs(cfg, attn_matmuls=False)
    assert round(with_attn["total"] / 1e9, 1) == 17.6
    assert round(without["total"] / 1e9, 1) == 16.8  # 16.85: "about 16.9" in the facts file
    assert abs(without["total"] / 1e9 - 16.9) < 0.06
    diff = with_attn["total"] - without["total"]
    assert diff == with_attn["attn_qk"] + with_attn["attn_av"]
    assert round(diff / 1e9, 2) == 0.72
    assert "attn_qk" not in without
    assert with_attn["patch_embed"] == 196 * 768 * 768
    assert flops(cfg) == 2 * with_attn["total"]
    assert flops(cfg, attn_matmuls=False) == 2 * without["total"]


def test_token_pairs_ratio() -> None:
    cfg = preset("vit-b/16")
    assert round(token_pairs_ratio(cfg, 384), 2) == 8.58
    assert round(token_pairs_ratio(cfg, 512)) == 27
    assert token_pairs_ratio(cfg, 224) == 1.0
    with pytest.raises(ValueError, match="resize to 384 or 400"):
        token_pairs_ratio(cfg, 390)


def test_shape_trace_matches_the_model() -> None:
    cfg = ViTConfig(image_size=(16, 32), patch_size=8, dim=12, depth=2, heads=3, num_classes=4)
    trace = dict(shape_trace(cfg, batch=2))
    m = VisionTransformer(cfg=cfg).eval()
    with torch.no_grad():
        out = m.forward_intermediates(torch.randn(2, 3, 16, 32))
    assert trace["image"] == (2, 3, 16, 32)
    assert trace["patch_embed.proj"] == (2, 12, 2, 4)
    for key in ("patches", "with_cls", "with_pos", "encoded", "pooled", "logits"):
        assert trace[key] == tuple(out[key].shape), key
    assert trace["blocks.i"] == tuple(out["blocks"][0].shape)
    assert trace["blocks.i.attn.weights"] == tuple(out["attn"][0].shape)
    assert trace["blocks.i.attn.q/k/v"] == (2, 3, 9, 4)
    assert trace["blocks.i.mlp.fc1"] == (2, 9, 48)
