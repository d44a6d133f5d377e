"""Chapter 10, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import torch

from vitbook.analysis import mean_attention_distance
from vitbook.engine import facts
from vitbook.figures.ch10_inside import attention_pairs

#: The image sizes the window-cost facts of ch10_inside.py quote (``win_*_224``,
#: ``win_ratio_896``); a test recomputes those facts from these sizes.
WIN_IMAGE, WIN_IMAGE_BIG = 224, 896


@facts(chapter=10, id="solutions")
def solutions(rec):
    """Exercise 1: mean attention distance of uniform attention on an 8x8 grid of 4-pixel
    patches; exercise 3: query-key pairs of a 1024-pixel image with 4x4 tokens."""
    grid, patch = 8, 4
    n = grid * grid
    uniform = torch.full((1, 1, n + 1, n + 1), 1.0 / (n + 1), dtype=torch.float64)
    dist = mean_attention_distance(uniform, grid, patch)[0].item()
    rec.fact("sol_ex1_grid", grid)
    rec.fact("sol_ex1_patch", patch)
    rec.fact("sol_ex1_dist", dist, "{:.1f}")
    rec.fact("sol_ex1_dist_patches", dist / patch, "{:.2f}")
    rec.fact("sol_ex1_max", ((grid - 1) * patch) * 2**0.5, "{:.1f}")
    tokens = (1024 // 4) ** 2
    glob = attention_pairs(1024, 4, None)
    win = attention_pairs(1024, 4, 7)
    rec.fact("sol_ex3_tokens", tokens, "{:,}")
    rec.fact("sol_ex3_global", glob, "{:,}")
    rec.fact("sol_ex3_window", win, "{:,}")
    rec.fact("sol_ex3_window_tokens", 7 * 7)
    rec.fact("sol_ex3_ratio", glob / win, "{:,.0f}")
    rec.fact("sol_ex3_gb", glob * 4 / 1e9, "{:.0f}")  # float32 weights of one head, in GB
    return {"dist": dist, "global": glob, "window": win}


@facts(chapter=10, id="in-prose")
def in_prose(rec):
    """The two image sizes the window-cost prose quotes."""
    rec.fact("win_image", WIN_IMAGE)
    rec.fact("win_image_big", WIN_IMAGE_BIG)
    return {"win_image": WIN_IMAGE, "win_image_big": WIN_IMAGE_BIG}


@facts(chapter=10, id="quiz-traps")
def quiz_traps(rec):
    """The wrong answer quiz 4 must reject when it divides the global pairs by the window's
    pairs (``win_ratio_224`` in ``ch10_inside.py``): N tokens divided by the window's side
    (7) instead of its area."""
    tokens, window = (WIN_IMAGE // 4) ** 2, 7  # N tokens of 4x4 pixels, 7x7 windows
    rec.fact("win_ratio_224_side", tokens // window)  # N / M: a multiple of 49, so exact
    return {"tokens": tokens}
