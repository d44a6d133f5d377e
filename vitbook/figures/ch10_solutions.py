"""Chapter 10, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import numpy as np
import torch

from vitbook import runs
from vitbook.analysis import attention_rollout, mean_attention_distance, rollout_cls_map
from vitbook.engine import facts
from vitbook.figures.ch10_attention import _attn, _chance, _model, _peak_inside, _test_set
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


def rollout_hits(model, s, x, alpha: float) -> tuple[float, float]:
    """Exercise 2: how often the class token's rollout map (``residual_alpha=alpha``) peaks in
    the object's box, and how far the class token's row lies from the patch queries' rows (the
    largest total-variation distance over the patch columns, mean over images): near zero when
    the product of the attention matrices has made every row the same."""
    hits, spread = [], []
    for i in range(0, len(x), 250):
        attns, _ = _attn(model, x[i : i + 250])
        roll = attention_rollout([a.double() for a in attns], residual_alpha=alpha)  # (B, T, T)
        maps = rollout_cls_map(roll, model.cfg.grid).numpy()
        hits.append(_peak_inside(maps, s.boxes[i : i + 250], model.cfg.patch_size))
        patches = roll[:, :, 1:] / roll[:, :, 1:].sum(-1, keepdim=True)
        tv = 0.5 * (patches[:, 1:] - patches[:, :1]).abs().sum(-1)  # (B, N)
        spread.append(tv.max(-1).values.numpy())
    return float(np.concatenate(hits).mean()), float(np.concatenate(spread).mean())


@facts(chapter=10, id="solutions-rollout", trained=True)
def solutions_rollout(rec):
    """Exercise 2: rollout without the identity (``residual_alpha=0``) against the book's
    (0.5), on every pre-trained model: the box hit rate and how alike the rows become."""
    s, x = _test_set()
    rows = {}
    for seed in runs.PRE_SEEDS:
        model = _model(seed)
        rows[seed] = {a: rollout_hits(model, s, x, a) for a in (0.0, 0.5)}
    for a, name in ((0.0, "a0"), (0.5, "a05")):
        hit = np.array([rows[k][a][0] for k in rows])
        tv = np.array([rows[k][a][1] for k in rows])
        rec.fact(f"sol_ex2_hit_{name}_lo", hit.min(), "{:.0%}", tol=0.05)
        rec.fact(f"sol_ex2_hit_{name}_hi", hit.max(), "{:.0%}", tol=0.05)
        rec.fact(f"sol_ex2_tv_{name}_lo", tv.min(), "{:.3f}", tol=0.05)
        rec.fact(f"sol_ex2_tv_{name}_hi", tv.max(), "{:.3f}", tol=0.05)
    diff = np.array([rows[k][0.0][0] - rows[k][0.5][0] for k in rows])
    rec.fact("sol_ex2_n_a0_lower", int((diff < 0).sum()))
    rec.fact("sol_ex2_models", len(rows))
    rec.fact("sol_ex2_chance", _chance(s.boxes, _model().cfg.grid, _model().cfg.patch_size),
             "{:.0%}")  # fmt: skip
    return rows


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
