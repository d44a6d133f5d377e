"""Chapter 7: the block's equations, LayerNorm against BatchNorm, pre- vs post-norm, GELU, and
the parameters of one ViT-B/16 block."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from vitbook.engine import Recorder
from vitbook.figures.ch07_block import (
    STACK,
    block_equations,
    block_params,
    gelu_exact,
    gelu_minimum,
    gelu_vs_relu,
    gradient_profile,
    layernorm_vs_batchnorm,
    post_norm_forward,
    pre_vs_post_norm,
)
from vitbook.model import Block


def test_block_is_equations_2_and_3() -> None:
    rec = Recorder(7)
    block_equations(rec)
    assert rec.facts["eq_check_diff"]["value"] < 1e-6


def test_gelu_minimum_is_computed_and_matches_reference() -> None:
    x, y = gelu_minimum()
    assert abs(x - (-0.7518)) < 1e-3  # the seed documents: "near x = -0.75"
    assert abs(y - (-0.1700)) < 1e-3  # "about -0.17"
    # it is a minimum: the slope vanishes and both neighbours are higher
    t = torch.tensor([x], dtype=torch.float64, requires_grad=True)
    F.gelu(t).backward()
    assert abs(t.grad.item()) < 1e-6
    assert gelu_exact(x - 1e-3) > y and gelu_exact(x + 1e-3) > y
    # the erf form here is torch's exact GELU
    for v in (-3.0, -0.5, 0.0, 0.7, 2.5):
        assert abs(gelu_exact(v) - F.gelu(torch.tensor(v, dtype=torch.float64)).item()) < 1e-12


def test_gelu_facts() -> None:
    rec = Recorder(7)
    gelu_vs_relu(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["gelu_min_x"] == pytest.approx(-0.7518, abs=1e-3)
    assert f["gelu_min_y"] == pytest.approx(-0.1700, abs=1e-3)
    # slope at -1: Phi(-1) + (-1) phi(-1)
    phi = math.exp(-0.5) / math.sqrt(2 * math.pi)
    assert f["gelu_slope_m1"] == pytest.approx(0.5 * (1 + math.erf(-1 / math.sqrt(2))) - phi,
                                               abs=1e-9)  # fmt: skip
    assert 1e-4 < f["gelu_tanh_max_err"] < 1e-3


def test_layernorm_ignores_the_batch_and_batchnorm_does_not() -> None:
    rec = Recorder(7)
    d = layernorm_vs_batchnorm(rec)
    assert d["ln_change"] == 0.0
    assert d["bn_change"] > 0.1
    assert rec.facts["ln_row_mean_max"]["value"] < 1e-6
    assert rec.facts["bn_col_mean_max"]["value"] < 1e-6


def test_b16_block_parameters() -> None:
    rec = Recorder(7)
    parts = block_params(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["block_params"] == 7_087_872 == f["block_params_module"] == sum(parts.values())
    assert f["mlp_params"] == 4_722_432
    assert f["attn_params"] == 2_362_368
    assert f["norms_params"] == 3_072
    assert f["mlp_share"] == pytest.approx(4_722_432 / 7_087_872, abs=1e-12)
    assert 0.66 < f["mlp_share"] < 0.67
    # the query and key projections, with their biases: a sixth of the block, not a third
    assert f["qk_params"] == 2 * (768 * 768 + 768)
    assert f["qk_share"] == pytest.approx(1 / 6, abs=1e-3)
    assert f["qk_share"] + f["vo_share"] == pytest.approx(f["attn_share"], abs=1e-12)


def test_post_norm_reorders_the_same_modules() -> None:
    torch.manual_seed(0)
    blk = Block(dim=16, heads=2)
    z = torch.randn(2, 3, 16)
    out = post_norm_forward(blk, z)
    # post-norm ends in a LayerNorm with weight 1 and bias 0: every token has mean 0, variance 1
    assert out.mean(-1).abs().max().item() < 1e-6
    assert (out.var(-1, unbiased=False) - 1).abs().max().item() < 1e-3
    # and differs from the pre-norm block on the same input
    assert (out - blk(z)[0]).abs().max().item() > 1e-2


def test_gradient_profile_is_seeded() -> None:
    a = gradient_profile("timm", "pre", seed=3)
    b = gradient_profile("timm", "pre", seed=3)
    assert a == b
    assert len(a["grad"]) == STACK["depth"]
    assert gradient_profile("timm", "pre", seed=4)["grad"] != a["grad"]  # the seed matters


def test_final_layernorm_removed_scales_every_block_alike() -> None:
    """Exercise 2 on one seed: without the final LayerNorm every pre-norm block's gradient
    grows, by a factor close to the size the stream has reached (about 3 here)."""
    with_ln = gradient_profile("xavier", "pre", seed=2)
    without = gradient_profile("xavier", "pre", seed=2, final_norm=False)
    factors = [b / a for a, b in zip(with_ln["grad"], without["grad"], strict=True)]
    assert all(2 < f < 6 for f in factors)
    assert max(factors) / min(factors) < 1.6  # alike: the same LayerNorm for every block
    assert with_ln["rms"] == without["rms"]  # the forward pass up to the head is unchanged


@pytest.mark.slow
def test_pre_vs_post_norm_measurement() -> None:
    """Over seeds 0-9: the statements the chapter makes hold in the number of seeds it says,
    and the ones it no longer makes (post-norm's trend) do change sign between seeds."""
    rec = Recorder(7)
    runs = pre_vs_post_norm(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    seeds = f["norm_seeds"]
    assert seeds >= 10
    # post-norm: every block ends in a LayerNorm, so from block 2 on the stream has RMS one
    # (block 1 reads the random input itself), in every seed
    assert abs(runs["xavier-post"]["rms"][:, 1:] - 1).max() < 1e-3
    # pre-norm: the stream grows with depth, almost every block adding to its size
    assert (np.diff(runs["xavier-pre"]["rms"], axis=1) > 0).mean() > 0.9
    assert f["xavier_pre_rms_growth_lo"] > 2
    # Xavier: the post-norm top block gets more gradient than the pre-norm one in every seed,
    # and the pre-norm gradient falls with depth in every seed
    assert f["n_post_last_larger"] == f["n_pre_falls"] == seeds
    assert f["xavier_last_post_over_pre_lo"] > 1.5 and f["xavier_pre_first_over_last_lo"] > 1.5
    # post-norm's trend is not one: it falls in some seeds and rises in others
    assert f["n_post_falls"] + f["n_post_rises"] == seeds
    assert f["n_post_falls"] > 0 and f["n_post_rises"] > 0
    # std-0.02 init: the two orders are within 25% and flat over depth, in every seed
    assert 0.8 < f["timm_last_post_over_pre_lo"] <= f["timm_last_post_over_pre_hi"] < 1.25
    assert f["timm_pre_spread_hi"] < 1.25 and f["timm_post_spread_hi"] < 1.25
    # exercise 2: removing the final LayerNorm scales the gradients by a few times
    assert 2 < f["no_final_ln_factor_lo"] <= f["no_final_ln_factor_hi"] < 6
    # at ViT-B's 12 blocks post-norm leans: rising towards the output in most seeds, while
    # pre-norm still falls in every seed
    assert f["n_shallow_post_rises"] + f["n_shallow_post_falls"] == seeds
    assert f["n_shallow_post_rises"] >= 8 and f["n_shallow_pre_falls"] == seeds


def test_gradient_profile_takes_the_depth() -> None:
    short = gradient_profile("xavier", "post", seed=0, depth=12)
    assert len(short["grad"]) == len(short["rms"]) == 12
    assert gradient_profile("xavier", "post", seed=0, depth=12) == short  # seeded
    # post-norm: from block 2 on every block reads a LayerNorm's output
    assert all(abs(r - 1) < 1e-3 for r in short["rms"][1:])


def test_batchnorm1d_on_tokens_raises_or_is_silently_wrong() -> None:
    """Common mistakes box: BatchNorm1d(D) reads (B, T, D) as (B, channels=T, L=D)."""
    from torch import nn

    with pytest.raises(RuntimeError, match="running_mean should contain 197 elements not 768"):
        nn.BatchNorm1d(768)(torch.randn(2, 197, 768))
    torch.manual_seed(0)
    x = torch.randn(4, 8, 8)  # T = D = 8: runs without a word
    out = nn.BatchNorm1d(8)(x)
    per_position = (x - x.mean(dim=(0, 2), keepdim=True)) / torch.sqrt(
        x.var(dim=(0, 2), unbiased=False, keepdim=True) + 1e-5
    )
    per_feature = (x - x.mean(dim=(0, 1), keepdim=True)) / torch.sqrt(
        x.var(dim=(0, 1), unbiased=False, keepdim=True) + 1e-5
    )
    assert torch.allclose(out, per_position, atol=1e-5)  # what it does: per token position
    assert not torch.allclose(out, per_feature, atol=1e-2)  # not per feature


def test_gelu_tanh_gap_is_computed() -> None:
    from vitbook.figures.ch07_block import gelu_tanh_gap

    gap, at = gelu_tanh_gap()
    assert gap == pytest.approx(4.73e-4, abs=1e-6) and at == pytest.approx(2.70, abs=0.01)
    x = torch.tensor([at], dtype=torch.float64)
    assert (F.gelu(x, approximate="tanh") - F.gelu(x)).abs().item() == pytest.approx(gap)


def test_paper_dropout_sites_and_rates():
    from vitbook.figures.ch07_block import paper_dropout

    rec = Recorder(7)
    d = paper_dropout(rec)
    assert d["sites"] == ["attn.proj_drop", "mlp.drop1", "mlp.drop2"]
    assert d["table3"] == {"jft": 0.0, "in21k": 0.1, "in1k": 0.1}
