"""Chapter 8: exact parameter counts of the family, the shape trace, the FLOP conventions, the
resolution ratios and the attention/MLP crossover."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from vitbook.calc import macs
from vitbook.engine import Recorder
from vitbook.figures.ch08_scaling import scaling_rows, scaling_study, small_images
from vitbook.figures.ch08_whole_model import (
    b16_equations,
    b16_shape_trace,
    block_mac_parts,
    crossover,
    median_latencies,
    params_and_macs,
    resolution_ratios,
    variants,
)
from vitbook.model import VisionTransformer, ViTConfig, preset

REFERENCE = {  # REFERENCE-FACTS.md: timm and the official vit_jax tests
    "ti16": 5_717_416,
    "s16": 22_050_664,
    "b16": 86_567_656,
    "l16": 304_326_632,
    "h14": 632_045_800,
    "l32": 306_535_400,
}


def _facts(item) -> dict:
    rec = Recorder(8)
    item(rec)
    return {k: v["value"] for k, v in rec.facts.items()}


def test_family_parameter_counts() -> None:
    f = _facts(variants)
    for name, count in REFERENCE.items():
        assert f[f"{name}_params"] == count, name
    assert f["h14_params_no_head"] == 630_764_800
    assert f["l32_minus_l16"] == 306_535_400 - 304_326_632
    # the paper's 307M is L/32, not L/16
    assert f["l32_matches_paper"] is True and f["l16_matches_paper"] is False
    assert (f["b16_layers"], f["b16_dim"], f["b16_mlp"], f["b16_heads"]) == (12, 768, 3072, 12)
    assert (f["l16_layers"], f["l16_dim"], f["l16_mlp"], f["l16_heads"]) == (24, 1024, 4096, 16)
    assert (f["h14_layers"], f["h14_dim"], f["h14_mlp"], f["h14_heads"]) == (32, 1280, 5120, 16)


def test_shape_trace_matches_model() -> None:
    rec = Recorder(8)
    trace = dict(b16_shape_trace(rec))
    assert rec.facts["trace_checked"]["value"] == 8
    assert trace["blocks.i.attn.weights"] == (1, 12, 197, 197)
    assert trace["blocks.i.mlp.fc1"] == (1, 197, 3072)
    assert rec.facts["shape_logits"]["text"] == "(1, 1000)"


def test_b16_conventions() -> None:
    f = _facts(params_and_macs)
    assert f["b16_macs_exact"] == 17_563_828_224
    assert round(f["b16_gmacs_total"], 1) == 17.6
    assert abs(f["b16_gmacs_without"] - 16.9) < 0.06  # 16.85: timm prints "16.9"
    assert round(f["b16_matmul_gmacs"], 2) == 0.72
    assert f["b16_gflops_total"] == pytest.approx(2 * f["b16_gmacs_total"], abs=1e-9)
    assert f["matches_timm"] is True
    assert 0.6 < f["b16_mlp_mac_share"] < 0.7


def test_resolution_ratios() -> None:
    f = _facts(resolution_ratios)
    assert (f["tokens_384"], f["tokens_512"]) == (577, 1025)
    assert f["pairs_ratio_384"] == pytest.approx((577 / 197) ** 2, abs=1e-12)
    assert round(f["pairs_ratio_384"], 2) == 8.58
    assert round(f["pairs_ratio_512"]) == 27
    # the whole model grows by more than the tokens and much less than the pairs
    assert f["tokens_ratio_384"] < f["macs_ratio_384"] < f["pairs_ratio_384"]
    assert f["tokens_ratio_512"] < f["macs_ratio_512"] < f["pairs_ratio_512"]


def test_block_mac_parts_agree_with_formula() -> None:
    for dim, t in ((768, 197), (192, 577), (64, 2)):
        b = block_mac_parts(dim, t)
        assert b["projections"] == 4 * t * dim**2
        assert b["matmuls"] == 2 * t * t * dim
        assert b["mlp"] == 8 * t * dim**2


@pytest.mark.parametrize("dim", [192, 384, 768, 1024])
def test_crossover_is_2d_and_4d(dim: int) -> None:
    assert crossover(dim, ("projections", "matmuls")) == 2 * dim
    assert crossover(dim, ("matmuls",)) == 4 * dim


def _counted_flops(cfg: ViTConfig, batch: int = 1) -> dict[str, int]:
    """FLOPs that torch's own counter sees in one forward pass of a real model, by aten op.

    ``FlopCounterMode`` counts matrix products only: ``aten.convolution`` (the patch
    embedding), ``aten.addmm`` (every Linear: qkv, proj, fc1, fc2, head; the bias add is not
    counted) and ``aten.bmm`` (Q K^T and A V on the explicit attention path), each as 2 FLOPs
    per multiply-add. LayerNorm, softmax, GELU and the residual additions are not counted,
    the same convention as ``vitbook.calc``. The fused CPU attention kernel is not counted
    by torch, so the model runs the explicit path (``fused_attn=False``)."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = VisionTransformer(cfg=dataclasses.replace(cfg, fused_attn=False)).eval()
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(torch.randn(batch, cfg.in_chans, *cfg.image_hw))
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


@pytest.mark.parametrize(
    "cfg",
    [
        preset("vit-ti/16", image_size=64, depth=2),  # ViT-Ti's width at a small image size
        ViTConfig(
            image_size=(32, 48),
            patch_size=8,
            dim=64,
            depth=3,
            heads=4,
            num_classes=0,
            pool="mean",
            mlp_ratio=2.0,
        ),  # fmt: skip
    ],
    ids=["ti16-64px", "non-square-no-head"],
)
def test_calc_macs_match_torch_flop_counter(cfg: ViTConfig) -> None:
    """calc.macs against torch.utils.flop_counter on the book's model: FLOPs = 2 x MACs."""
    m = macs(cfg)
    counted = _counted_flops(cfg)
    assert counted["aten.convolution"] == 2 * m["patch_embed"]
    assert counted["aten.bmm"] == 2 * (m["attn_qk"] + m["attn_av"])
    assert counted["aten.addmm"] == 2 * (m["qkv"] + m["proj"] + m["mlp"] + m["head"])
    assert sum(counted.values()) == 2 * m["total"]
    # per image: a batch of 3 costs three times as much
    assert sum(_counted_flops(cfg, batch=3).values()) == 3 * 2 * m["total"]


def test_block_mac_parts_match_torch_flop_counter() -> None:
    """The chapter's per-block split, against what torch counts in a one-block model."""
    cfg = ViTConfig(image_size=32, patch_size=8, dim=32, depth=1, heads=4, num_classes=0)
    counted = _counted_flops(cfg)
    b = block_mac_parts(32, cfg.seq_len)
    assert counted["aten.bmm"] == 2 * b["matmuls"]
    assert counted["aten.addmm"] == 2 * (b["projections"] + b["mlp"])  # no head


def test_median_latencies_runs_every_size() -> None:
    torch.manual_seed(0)
    models = {
        s: VisionTransformer(cfg=preset("vit-ti/16", image_size=s, depth=1)).eval()
        for s in (32, 64)
    }
    t = median_latencies(models, warmup=1, rounds=3)
    assert set(t) == {32, 64}
    assert all(v > 0 for v in t.values())


def test_median_latencies_takes_a_batch() -> None:
    """Exercise 3 asks for a batch of 8: the function feeds (batch, 3, H, W) to every model."""
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(tuple(x.shape))
            return x.sum()

    t = median_latencies({32: Probe()}, warmup=1, rounds=2, batch=8)
    assert set(t) == {32} and seen and set(seen) == {(8, 3, 32, 32)}


def test_equations_with_b16_numbers() -> None:
    """Eq. 8.1 and 8.3 term by term for ViT-B/16 add up to the exact counts (REFERENCE-FACTS:
    86,567,656 parameters; about 17.6 GMACs with the attention matmuls)."""
    f = _facts(b16_equations)
    assert f["eq_params_total"] == REFERENCE["b16"]
    assert f["eq_params_pe"] == 590_592 and f["eq_params_pos"] == 151_296
    assert f["eq_params_blocks"] == 12 * 7_087_872 and f["eq_params_head"] == 769_000
    assert f["eq_macs_total"] == macs(preset("vit-b/16"))["total"]
    assert round(f["eq_macs_total"] / 1e9, 1) == 17.6
    assert f["eq_macs_quad"] == 2 * 197**2 * 768


def test_narrow_models_grow_faster_with_resolution() -> None:
    """Why the timed Ti/16 has a larger 384-pixel ratio than B/16: the quadratic part weighs
    T / (6D), four times more at D = 192 than at D = 768."""
    f = _facts(resolution_ratios)
    assert f["ti16_macs_ratio_384"] > f["macs_ratio_384"]
    assert f["ti16_quad_weight_384"] == pytest.approx(4 * f["b16_quad_weight_384"])
    for name in ("b16", "ti16"):  # 12 T D^2 (1 + T/6D): the ratio from the weights alone
        w224, w384 = f[f"{name}_quad_weight_224"], f[f"{name}_quad_weight_384"]
        ratio = f["ti16_macs_ratio_384" if name == "ti16" else "macs_ratio_384"]
        approx = (577 / 197) * (1 + w384) / (1 + w224)
        assert ratio == pytest.approx(approx, rel=0.01)  # the patch embedding and head aside


def test_scaling_study_compute_reproduced_and_more_predictive() -> None:
    """Table 6: 6 x MACs x 303M images x epochs gives the paper's exaFLOPs within a few
    percent only when the attention matmuls are counted; accuracy ranks with compute better
    than with parameters; L/16 at 7 and 14 epochs has one parameter count and two computes."""
    rows = scaling_rows()
    assert len(rows) == 6
    for r in rows:
        assert abs(r["estimate"] / r["exaflops"] - 1) < 0.025
    assert max(abs(r["estimate_bare"] / r["exaflops"] - 1) for r in rows) > 0.03
    assert (
        rows[3]["params"] == rows[4]["params"] and rows[4]["exaflops"] > 1.9 * rows[3]["exaflops"]
    )
    f = _facts(scaling_study)
    assert f["rho_compute"] > 0.9 > f["rho_params"]
    assert f["d2_half_macs_ratio"] > 3.5 and abs(f["d2_half_params_change"]) < 0.05


def test_small_images_sizes_match_the_model() -> None:
    """The UvA tutorial's sizes in the book's model: the calculator's counts are the module's."""
    f = _facts(small_images)
    for p in (2, 4, 8):
        cfg = ViTConfig(image_size=32, patch_size=p, dim=256, depth=6, heads=8, mlp_ratio=2.0,
                        num_classes=10)  # fmt: skip
        with torch.device("meta"):
            model = VisionTransformer(cfg=cfg)
        assert f[f"uva_p{p}_params"] == model.num_params()
        assert f[f"uva_p{p}_tokens"] == (32 // p) ** 2 + 1
    assert f["uva_head_dim"] == 32 and f["uva_p4_patches"] == 64
    assert f["uva_p2_matmul_share"] > f["uva_p4_matmul_share"] > f["uva_p8_matmul_share"]


def test_mean_pooling_keeps_the_class_token_in_the_sequence() -> None:
    """The difference from the official GAP model the chapter states: with pool="mean" the
    class token is still in the sequence (N + 1 tokens) and changes the pooled output through
    attention, although the average leaves its own row out."""
    torch.manual_seed(0)
    cfg = ViTConfig(image_size=32, patch_size=8, dim=32, depth=2, heads=4, num_classes=5,
                    pool="mean")  # fmt: skip
    model = VisionTransformer(cfg=cfg).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        out = model.forward_intermediates(x, attn=False)
        assert out["with_pos"].shape[1] == cfg.num_patches + 1
        assert torch.allclose(out["pooled"], out["encoded"][:, 1:].mean(dim=1))
        before = model(x)
        model.cls_token.add_(torch.randn(cfg.dim))  # not a constant: LayerNorm removes those
        after = model(x)
    assert (after - before).abs().max().item() > 1e-4


def test_pretraining_head_and_activation_memory():
    from vitbook.engine import Recorder
    from vitbook.figures.ch08_whole_model import activation_memory, pretraining_head
    from vitbook.model import VisionTransformer, preset

    rec = Recorder(8)
    d = pretraining_head(rec)
    assert d["pre"]["pre_logits"] == 768 * 768 + 768
    assert d["pre"]["head"] == 768 * 21843 + 21843 and d["fine"]["head"] == 769_000
    with torch.device("meta"):
        m = VisionTransformer(cfg=preset("vit-b/16", representation_size=768, num_classes=21843))
    assert m.num_params() == d["pre"]["total"]
    rec = Recorder(8)
    activation_memory(rec)
    assert rec.facts["act_ratio_384"]["value"] > (577 / 197)  # grows faster than the tokens


@pytest.mark.parametrize(
    "dim, heads, image, patch", [(64, 4, 16, 4), (96, 3, 28, 4), (48, 6, 24, 8)]
)
def test_activation_floats_is_what_autograd_saves(dim, heads, image, patch):
    """Record every tensor autograd saves in one training forward pass of a block (explicit
    attention path) and count the numbers in their storages, parameters left out: the count
    equals calc.activation_floats per block."""
    from vitbook.calc import activation_floats
    from vitbook.model import Block, ViTConfig

    cfg = ViTConfig(image_size=image, patch_size=patch, in_chans=3, dim=dim, depth=1, heads=heads,
                    num_classes=2)  # fmt: skip
    torch.manual_seed(0)
    block = Block(dim=dim, heads=heads, fused=False).train()
    weights = {p.untyped_storage().data_ptr() for p in block.parameters()}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in weights:
            kept[s.data_ptr()] = s.nbytes() // t.element_size()
        return t

    x = torch.randn(1, cfg.seq_len, dim, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x)[0].sum().backward()
    assert sum(kept.values()) == activation_floats(cfg)["per_block"]


def test_eq_8_1_takes_the_mlp_width_and_the_shorthand_overcounts_the_small_models() -> None:
    """Eq. 8.1 with M as a parameter gives the calculator's count for any MLP width; the
    shorthand 12 D^2 + 13 D per block (M = 4D) overcounts the chapter's models with M = 2D
    by about half."""
    import dataclasses

    from vitbook.calc import param_breakdown
    from vitbook.engine import Recorder
    from vitbook.figures.ch08_scaling import cfg_of, d2_base, params_by_equation, small_images
    from vitbook.model import preset

    for cfg in (cfg_of(4), d2_base(), preset("vit-b/16")):
        for ratio in (1.0, 2.0, 3.0, 4.0):
            c = dataclasses.replace(cfg, mlp_ratio=ratio)
            assert params_by_equation(c) == param_breakdown(c)["total"], (cfg, ratio)
    uva = cfg_of(4)
    assert uva.mlp_dim == 2 * uva.dim
    assert params_by_equation(uva, mlp=4 * uva.dim) > 1.4 * params_by_equation(uva)
    rec = Recorder(8)
    small_images(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert 0.45 < f["overcount_4d_lo"] <= f["overcount_4d_hi"] < 0.5
    assert f["small_models"] == 4


def test_table_6_check_reports_every_row_and_its_rank_correlations_null() -> None:
    from vitbook.engine import Recorder
    from vitbook.figures.ch08_scaling import scaling_study

    rec = Recorder(8)
    scaling_study(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    # without the attention matmuls the estimate is short on five rows; B/32's is above
    assert f["t6_bare_short_rows"] == f["t6_rows"] - 1 == 5
    assert 0 < f["t6_bare_gap_b32"] < 0.02
    # six rows: the exact permutation null of a rank correlation
    assert f["rho_orders"] == 720
    assert 0 < f["rho_compute_p"] < f["rho_params_p"] < 0.1
