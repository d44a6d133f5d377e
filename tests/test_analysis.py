"""Geometry and inspection tools: interpolation, sin-cos tables, rollout, distances."""

from __future__ import annotations

import math

import pytest
import torch

from vitbook.analysis import (
    attention_rollout,
    cosine_similarity_map,
    interpolate_pos_embed,
    mean_attention_distance,
    pca,
    rollout_cls_map,
    sincos_1d,
    sincos_2d,
)


def table(gh: int, gw: int, D: int = 8, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, 1 + gh * gw, D, generator=g)


# ---------------------------------------------------------------- interpolation


def test_interpolate_same_grid_is_identity() -> None:
    pe = table(14, 14)
    out = interpolate_pos_embed(pe, 14, (14, 14))
    assert torch.equal(out, pe)


@pytest.mark.parametrize("mode", ["bicubic", "bilinear", "linear"])
def test_interpolate_keeps_cls_and_shapes(mode: str) -> None:
    pe = table(14, 14)
    out = interpolate_pos_embed(pe, 14, 24, mode=mode)
    assert out.shape == (1, 1 + 576, 8)
    assert torch.equal(out[:, 0], pe[:, 0])
    small = interpolate_pos_embed(pe, 14, 7, mode=mode)  # shrinking (antialias for bicubic)
    assert small.shape == (1, 50, 8) and torch.equal(small[:, 0], pe[:, 0])


def test_interpolate_non_square_and_2d_input() -> None:
    pe = table(3, 5)[0]  # (1 + 15, D)
    out = interpolate_pos_embed(pe, (3, 5), (6, 4))
    assert out.shape == (1 + 24, 8)
    # A table that varies only along columns keeps varying only along columns.
    cols = torch.arange(5.0)[None, :, None].expand(3, 5, 8).reshape(15, 8)
    pe = torch.cat([torch.zeros(1, 8), cols])
    out = interpolate_pos_embed(pe, (3, 5), (6, 10), mode="linear")[1:].reshape(6, 10, 8)
    assert torch.allclose(out, out[:1].expand(6, 10, 8))


def test_interpolate_constant_table_stays_constant() -> None:
    pe = torch.full((1, 1 + 16, 4), 0.7)
    for mode in ("bicubic", "linear"):
        out = interpolate_pos_embed(pe, 4, (9, 3), mode=mode)
        assert torch.allclose(out, torch.full_like(out, 0.7), atol=1e-6)


def test_error_interpolate_to_zero_or_negative_grid() -> None:
    with pytest.raises(ValueError, match="at least one patch per side; use a positive grid"):
        interpolate_pos_embed(table(4, 4), 4, 0)
    with pytest.raises(ValueError, match="at least one patch per side"):
        interpolate_pos_embed(table(4, 4), 4, (-2, 3))


def test_error_pos_table_length_does_not_match_grid() -> None:
    with pytest.raises(ValueError, match=r"has 197 tokens but grid 16x16.*needs 257.*14x14 grid"):
        interpolate_pos_embed(table(14, 14), 16, 24)
    with pytest.raises(ValueError, match="use 'bicubic', 'bilinear' or 'linear'"):
        interpolate_pos_embed(table(2, 2), 2, 3, mode="nearest")


# ---------------------------------------------------------------- sin-cos


def test_sincos_1d_values() -> None:
    t = sincos_1d(6, 8)
    assert t.shape == (6, 8)
    assert torch.equal(t[0], torch.tensor([0.0, 0, 0, 0, 1, 1, 1, 1]))
    # column i is sin(pos / 10000^(2i/d)); column d/2 + i the cosine
    assert math.isclose(t[3, 1].item(), math.sin(3 / 10000 ** (2 / 8)), rel_tol=1e-6)
    assert math.isclose(t[5, 6].item(), math.cos(5 / 10000 ** (4 / 8)), rel_tol=1e-6)
    with pytest.raises(ValueError, match="use 6 or 8"):
        sincos_1d(3, 7)


def test_sincos_2d_layout() -> None:
    h, w, D = 3, 4, 16
    t = sincos_2d(h, w, D).reshape(h, w, D)
    rows, cols = sincos_1d(h, D // 2), sincos_1d(w, D // 2)
    assert torch.equal(t[2, 1, : D // 2], rows[2]) and torch.equal(t[2, 1, D // 2 :], cols[1])
    assert torch.equal(t[:, 0, : D // 2], t[:, 3, : D // 2])  # same row, same first half
    with pytest.raises(ValueError, match="divisible by 4; use 8 or 12"):
        sincos_2d(2, 2, 10)


# ---------------------------------------------------------------- rollout


def random_attn(B: int, H: int, T: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, H, T, T, generator=g).softmax(-1)


def test_rollout_rows_sum_to_one() -> None:
    attns = [random_attn(2, 3, 10, s) for s in range(4)]
    r = attention_rollout(attns)
    assert r.shape == (2, 10, 10)
    torch.testing.assert_close(r.sum(-1), torch.ones(2, 10))


def test_rollout_order_and_formula() -> None:
    a1, a2 = random_attn(1, 2, 5, 0), random_attn(1, 2, 5, 1)
    eye = torch.eye(5)
    m1, m2 = 0.5 * a1.mean(1) + 0.5 * eye, 0.5 * a2.mean(1) + 0.5 * eye
    m1, m2 = m1 / m1.sum(-1, keepdim=True), m2 / m2.sum(-1, keepdim=True)
    torch.testing.assert_close(attention_rollout([a1, a2]), m2 @ m1)
    # alpha = 1: attention ignored, the identity flows through
    torch.testing.assert_close(attention_rollout([a1, a2], residual_alpha=1.0)[0], eye)


def test_rollout_cls_map() -> None:
    r = attention_rollout([random_attn(2, 2, 1 + 6, 3)])
    m = rollout_cls_map(r, (2, 3))
    assert m.shape == (2, 2, 3)
    torch.testing.assert_close(m.reshape(2, 6), r[:, 0, 1:])


# ---------------------------------------------------------------- attention distance


def test_mean_attention_distance_known_cases() -> None:
    gh = gw = 4
    N, T = gh * gw, 1 + gh * gw
    P = 16
    attn = torch.zeros(1, 3, T, T)
    attn[0, 0, :, 0] = 0.5  # head 0: half on CLS, half on itself -> distance 0
    attn[0, 0, 1:, 1:] += 0.5 * torch.eye(N)
    attn[0, 0, 0, 1] = 0.5
    # head 1: every patch attends to its right-hand neighbour (or left at the edge): one patch
    for i in range(N):
        r, c = divmod(i, gw)
        j = r * gw + (c + 1 if c + 1 < gw else c - 1)
        attn[0, 1, 1 + i, 1 + j] = 1.0
    attn[0, 1, 0, 0] = 1.0
    attn[0, 2] = 1.0 / T  # head 2: uniform
    d = mean_attention_distance(attn, (gh, gw), P)
    assert d.shape == (3,)
    assert d[0].item() == 0.0
    assert math.isclose(d[1].item(), 16.0, rel_tol=1e-6)
    ys, xs = torch.meshgrid(torch.arange(4.0), torch.arange(4.0), indexing="ij")
    c = torch.stack([ys.flatten(), xs.flatten()], -1) * P
    assert math.isclose(d[2].item(), torch.cdist(c, c).mean().item(), rel_tol=1e-6)


def test_mean_attention_distance_accepts_3d() -> None:
    a = random_attn(1, 2, 10, 0)
    d3 = mean_attention_distance(a[0], 3, 16)
    torch.testing.assert_close(d3, mean_attention_distance(a, (3, 3), 16))


# ---------------------------------------------------------------- cosine similarity


def test_cosine_similarity_map() -> None:
    pe = table(3, 4, D=16)
    s = cosine_similarity_map(pe, (3, 4))
    assert s.shape == (3, 4, 3, 4)
    for i in range(3):
        for j in range(4):
            assert math.isclose(s[i, j, i, j].item(), 1.0, rel_tol=1e-5)
    torch.testing.assert_close(s, s.permute(2, 3, 0, 1))
    with pytest.raises(ValueError, match="needs 17"):
        cosine_similarity_map(pe, 4)


# ---------------------------------------------------------------- PCA


def test_pca_finds_a_planted_direction_and_its_share() -> None:
    """Points spread mostly along one known direction: the first component is that direction
    (sign rule: entries sum positive), its share is the variance along it over the total."""
    g = torch.Generator().manual_seed(0)
    direction = torch.tensor([3.0, -1.0, 2.0, 0.5])
    direction = direction / direction.norm()
    x = 5 * torch.randn(400, 1, generator=g) * direction + 0.1 * torch.randn(400, 4, generator=g)
    x = x + torch.tensor([1.0, 2.0, 3.0, 4.0])  # an offset the mean must remove
    comps, mean, share = pca(x)
    assert comps.dtype == torch.float64 and comps.shape == (4, 4) and share.shape == (4,)
    torch.testing.assert_close(comps @ comps.T, torch.eye(4, dtype=torch.float64))
    assert (comps.sum(dim=1) > 0).all()
    assert abs(comps[0] @ direction.double()) > 0.999
    centred = x.double() - mean
    torch.testing.assert_close(mean, x.double().mean(0))
    torch.testing.assert_close(share, (centred @ comps.T).pow(2).sum(0) / centred.pow(2).sum())
    assert share[0] > 0.99 and (share[:-1] >= share[1:]).all()
    top2, _, share2 = pca(x, 2)
    assert torch.equal(top2, comps[:2]) and torch.equal(share2, share[:2])
    raw, _, _ = pca(x, sign=None)  # the SVD's own signs: the same lines, maybe flipped
    torch.testing.assert_close(raw.abs(), comps.abs())
