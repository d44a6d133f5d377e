"""Chapter 2: where each pixel lands, the patch sizes that divide the image, and what
attention over pixels would cost."""

from __future__ import annotations

import pytest
import torch

from vitbook import calc
from vitbook.engine.registry import Recorder
from vitbook.figures import ch02_patches as ch02
from vitbook.model import preset
from vitbook.patches import patchify


@pytest.mark.parametrize(("c", "h", "w", "p"), [(3, 8, 12, 4), (1, 6, 6, 2), (2, 9, 6, 3)])
def test_every_pixel_is_where_the_index_formula_says(c, h, w, p):
    """Eq. 2.3 against patchify itself, for every pixel of small non-square images."""
    x = torch.arange(c * h * w, dtype=torch.float64).reshape(1, c, h, w)  # each value unique
    seq = patchify(x, p)[0]  # (N, C*P*P)
    seen = set()
    for ch in range(c):
        for row in range(h):
            for col in range(w):
                i, f = ch02.pixel_to_token(ch, row, col, p, w)
                assert seq[i, f] == x[0, ch, row, col], (ch, row, col)
                seen.add((i, f))
    assert len(seen) == seq.numel()  # one place per pixel, every place used once


def test_the_chapters_pixel_and_its_traps():
    rec = Recorder(2)
    ch02.pixel_index(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    c, row, col = ch02.PIXEL
    assert (f["px_patch"], f["px_pos"]) == ch02.pixel_to_token(c, row, col, 16, 224)
    assert f["px_patch"] == f["px_m"] * 14 + f["px_n"]
    assert f["px_pos"] == c * 256 + f["px_u"] * 16 + f["px_v"]
    # the wrong orders the quiz rejects are other pixels
    assert f["px_pos_channels_last"] != f["px_pos"] and f["px_pos_no_channel"] != f["px_pos"]


def test_the_token_plot_covers_every_divisor():
    assert ch02.divisors(224) == [1, 2, 4, 7, 8, 14, 16, 28, 32, 56, 112, 224]
    rec = Recorder(2)
    table = ch02.token_counts(rec)
    assert sorted(table) == ch02.divisors(224)
    assert rec.facts["n_divisors"]["value"] == 12
    assert table[1]["tokens"] == 224 * 224 and table[224]["tokens"] == 1


def test_attention_over_pixels_costs_what_the_chapter_says():
    rec = Recorder(2)
    ch02.why_patches(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["pix_tokens"] == 50_176
    assert f["pix_entries"] == 50_177**2
    assert f["pix_gb_head"] == pytest.approx(4 * 50_177**2 / 1e9)
    # QK^T and AV over 12 layers of width 768: 2 L T^2 D multiply-adds
    assert f["pix_attn_tmacs"] * 1e12 == pytest.approx(2 * 12 * 50_177**2 * 768)
    assert f["pix_attn_over_b16"] == pytest.approx(
        2 * 12 * 50_177**2 * 768 / calc.macs(preset("vit-b/16"))["total"]
    )
    assert f["cifar_tokens"] == 256  # 2 x 2 patches of a 32 x 32 image
    assert f["p2_tokens_224"] == 112 * 112


def test_patchify_equals_a_plain_loop_over_the_grid_and_inverts():
    """What the chapter says the test suite checks: patchify against slicing the patches one
    by one in raster order, and unpatchify(patchify(x)) == x."""
    from vitbook.patches import unpatchify

    g = torch.Generator().manual_seed(0)
    x = torch.rand(2, 3, 12, 8, generator=g)  # a batch, non-square
    p = 4
    seq = patchify(x, p)
    loop = [
        x[:, :, top : top + p, left : left + p].reshape(2, -1)  # (B, C*P*P), channel first
        for top in range(0, 12, p)
        for left in range(0, 8, p)
    ]
    assert torch.equal(seq, torch.stack(loop, dim=1))
    assert torch.equal(unpatchify(seq, p, 3, (3, 2)), x)
    with pytest.raises(ValueError, match="not divisible by patch size 5"):
        patchify(x, 5)
