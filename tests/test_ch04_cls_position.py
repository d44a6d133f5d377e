"""Chapter 4: Eq. 1, permutation equivariance, sin-cos similarity, parameter counts, traps."""

from __future__ import annotations

import pytest
import torch

from vitbook.engine import Recorder
from vitbook.figures.ch04_cls_position import (
    permutation,
    pos_params,
    shuffle_patches,
    sincos_similarity,
    traps,
    z0_assembly,
)


def _facts(item):
    rec = Recorder(4)
    item(rec)
    return {k: v["value"] for k, v in rec.facts.items()}


def test_shuffle_patches_moves_whole_tiles():
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    assert torch.equal(shuffle_patches(x, torch.arange(4), 4), x)
    perm = torch.tensor([3, 0, 2, 1])
    y = shuffle_patches(x, perm, 4)
    assert torch.equal(y[..., :4, :4], x[..., 4:, 4:])  # place 0 holds tile 3
    assert torch.equal(y[..., :4, 4:], x[..., :4, :4])  # place 1 holds tile 0
    assert torch.equal(shuffle_patches(y, torch.argsort(perm), 4), x)


def test_z0_assembly_matches_the_model():
    f = _facts(z0_assembly)
    assert f["z0_rows"] == 50 and f["z0_cols"] == 8
    assert f["z0_match"] == 0.0


def test_pos_params_b16():
    f = _facts(pos_params)
    assert f["pos_params_b16"] == 151_296
    assert f["seq_b16"] == 197
    assert f["cls_params_b16"] == 768
    assert f["pos_params_b16_384"] == 577 * 768
    assert f["sincos_params_b16"] == 0
    assert abs(f["pos_share_b16"] - 151_296 / 86_567_656) < 1e-12


def test_sincos_similarity_1d_knows_only_the_index():
    f = _facts(sincos_similarity)
    # in 1D the wrap-around pair (6, 13)-(7, 0) is exactly as similar as true neighbours
    assert abs(f["sim1d_wrap"] - f["sim1d_right"]) < 1e-6
    assert f["sim1d_below"] < f["sim1d_right"] - 0.2
    # in 2D right and below are alike, and the wrap-around pair is far apart
    assert abs(f["sim2d_right"] - f["sim2d_below"]) < 1e-6
    assert f["sim2d_wrap"] < f["sim1d_wrap"] - 0.1


@pytest.mark.slow
def test_permutation_equivariance_on_vit_ti():
    f = _facts(permutation)
    assert f["cls_diff_none"] < 1e-6  # float64: round-off only
    assert f["cls_diff_none"] < 1e-12
    assert f["patch_diff_none"] < 1e-12  # patch outputs are permuted, otherwise unchanged
    assert f["gap_diff_none"] < 1e-12
    assert f["cls_diff_none_f32"] < 1e-5
    assert f["cls_diff_learned"] > 1e-3  # any position table breaks the symmetry
    assert f["cls_diff_sincos"] > 1e-3
    assert f["ti_params"] == 5_717_416


@pytest.mark.slow
def test_traps():
    f = _facts(traps)
    # reading a patch as if it were the CLS token, over seeds 0-9: never zero, and the size
    # depends on the seed (one draw would not be a property of the trap)
    assert f["wrong_cls_seeds"] >= 5
    assert 1e-2 < f["wrong_cls_diff_lo"] < f["wrong_cls_diff"] < f["wrong_cls_diff_hi"]
    assert f["wrong_cls_diff_hi"] / f["wrong_cls_diff_lo"] > 5
    assert "197" in f["torch_table_error"] and "196" in f["torch_table_error"]
    assert "196 rows" in f["vitbook_table_error"]
    assert "prepend a class-token row" in f["vitbook_table_error"]
    assert f["load_table_error"] == "pos_embed: file (1, 196, 192) vs model (1, 197, 192)"


def test_paper_position_ablation_facts():
    from vitbook.engine import Recorder
    from vitbook.figures.ch04_cls_position import paper_pos_ablation

    rec = Recorder(4)
    t = paper_pos_ablation(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert t["none"] == 0.61382 and t["1d"] == 0.64206  # the paper's Table 8
    # no positions costs points; the kind of position table hardly matters
    assert f["t8_gain_1d_over_none"] > 2 and f["t8_spread_with_pos"] < 0.3  # percentage points


def test_the_sincos_floor_is_the_slow_columns():
    """On a 14-wide axis, 90 of the 192 frequencies of a D = 768 table hardly turn, so no pair
    of patches falls below about 0.66; the face model's D = 8 table has 4 near-constant
    columns (Fig. 4.1)."""
    import math

    from vitbook.analysis import sincos_2d

    f = _facts(sincos_similarity)
    assert f["axis_freqs"] == 192 and f["axis_span"] == 13
    assert f["slow_freqs"] == 90
    # the similarity of the two farthest positions on one axis is the mean of cos(13 w_f),
    # and the 2D table's least similar pair (opposite corners) has that on both axes
    omega = [10000 ** (-k / 192) for k in range(192)]
    far = sum(math.cos(13 * w) for w in omega) / 192
    assert f["sim2d_min"] == pytest.approx(far, abs=1e-5)
    assert f["far_slow_part"] + f["far_rest_part"] == pytest.approx(far, abs=1e-9)
    assert 0.6 < f["sim2d_min"] < 0.7 and f["sim1d_min"] < f["sim2d_min"]
    assert f["far_slow_part"] > 90 * math.cos(0.1) / 192 - 1e-12
    z = _facts(z0_assembly)
    assert z["z0_const_list"] == [1, 3, 5, 7]  # the sine and cosine of frequency 1/100
    table = sincos_2d(7, 7, 8)
    spread = table.max(0).values - table.min(0).values
    assert spread[[1, 3, 5, 7]].max() < 0.1 < spread[[0, 2, 4, 6]].min()


@pytest.mark.slow
def test_initialisations_compared():
    """The sources' class-token and position-table initialisations, and what they do."""
    from vitbook.figures.ch04_cls_position import init_sources

    f = _facts(init_sources)
    assert f["trunc_sigmas"] == 100 and f["trunc_tail_log10"] < -2000
    assert abs(f["trunc_drawn_std"] - 0.02) < 5e-4 and f["trunc_drawn_max"] < 6
    assert f["tf_cut_share"] == pytest.approx(0.0455, abs=1e-4)
    assert f["tf_std_factor"] == pytest.approx(0.8796, abs=1e-4)
    # timm's 1e-6 class token is a rounding error next to its std-0.02 position row
    assert f["cls_over_pos0"] < 1e-4 and f["cls_zero_logit_change"] < 1e-3
    assert f["cls_zero_logit_change"] > 0  # but not nothing: the two are different numbers
    assert f["randn_row_norm"] == pytest.approx(768**0.5)
    assert f["randn_over_token"] > 1 > f["pos_share_of_token"]
    assert f["randn_over_init_std"] == pytest.approx(50)  # vit-pytorch's std 1 against 0.02


def test_the_right_readout_does_not_move_where_the_trap_does():
    """The trap's baseline: with the class token first, shuffling the patches of the same
    position-free model leaves the CLS output unchanged (float64 rounding), at every seed the
    trap is measured at."""
    from vitbook.figures.ch04_cls_position import (
        GRID,
        IMAGE,
        face_tensor,
        shuffle_patches,
        wrong_cls_shift,
    )
    from vitbook.model import VisionTransformer, preset

    def right_readout(m, img):  # the class token first, read at index 0
        z = m.patch_embed(img)
        z = torch.cat([m.cls_token.expand(img.shape[0], -1, -1), z], dim=1)
        for blk in m.blocks:
            z, _ = blk(z)
        return m.norm(z)[:, 0]

    for seed in (0, 3):
        torch.manual_seed(seed)
        m = VisionTransformer(cfg=preset("vit-ti/16", depth=4, pos_embed="none")).double().eval()
        x = face_tensor(IMAGE).double()
        perm = torch.randperm(GRID * GRID, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            a, b = right_readout(m, x), right_readout(m, shuffle_patches(x, perm, 16))
        assert (a - b).abs().max() < 1e-10
        assert wrong_cls_shift(seed) > 1e-2
