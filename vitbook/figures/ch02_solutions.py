"""Chapter 2, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import torch

from vitbook.engine import facts
from vitbook.figures.ch02_patches import IMAGE, PIXEL, pixel_to_token, token_table
from vitbook.patches import check_divisible, patchify


@facts(chapter=2, id="solutions")
def solutions(rec):
    """Exercise 1: a shape; exercise 2: the pixels a strided convolution drops at 225 pixels;
    exercise 3: tokens and attention entries of a 1024-pixel image at P = 16."""
    shape = tuple(patchify(torch.zeros(4, 1, 28, 28), 7).shape)
    rec.fact("sol_ex1_shape", str(shape))
    conv = torch.nn.Conv2d(3, 8, 16, stride=16)
    grid = tuple(conv(torch.zeros(1, 3, 225, 225)).shape[-2:])
    rec.fact("sol_ex2_grid", f"{grid[0]}×{grid[1]}")
    covered = grid[0] * 16
    rec.fact("sol_ex2_covered", covered)
    rec.fact("sol_ex2_lost", 225 * 225 - covered * covered, "{:,}")
    big = token_table(1024, sizes=(16,))[16]
    rec.fact("sol_ex3_tokens", big["tokens"], "{:,}")
    rec.fact("sol_ex3_seq", big["tokens"] + 1, "{:,}")
    rec.fact("sol_ex3_entries", big["entries"], "{:,}")
    ratio = big["entries"] / token_table(224, sizes=(16,))[16]["entries"]
    rec.fact("sol_ex3_ratio", ratio, "{:.0f}")
    # float32 attention weights of one image, one layer, 12 heads (ViT-B), in megabytes
    rec.fact("sol_ex3_mb_per_layer", big["entries"] * 12 * 4 / 1e6, "{:,.0f}")
    return {"shape": shape, "grid": grid}


@facts(chapter=2, id="quiz-traps")
def quiz_traps(rec):
    """The wrong answers the typed quiz questions must reject, computed as the right answers
    are (``seq_384`` in ``vit_h_patch``, ``px_pos`` in ``pixel_index``), each with the slip
    that makes it: the patches along one side at 384 pixels, the sequence at 224 pixels, and
    the pixel's position counted from 1."""
    p = 16
    rows, _ = check_divisible(384, 384, p)
    rec.fact("grid_384", rows)
    rec.fact("seq_224", token_table(IMAGE, sizes=(p,))[p]["tokens"] + 1)
    _, pos = pixel_to_token(*PIXEL, p, IMAGE)
    rec.fact("px_pos_from_one", pos + 1)
    return {"grid_384": rows, "px_pos": pos}
