"""Chapter 3, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import torch

from vitbook import calc
from vitbook.engine import facts
from vitbook.figures.ch03_patch_embedding import embed_linear
from vitbook.model import preset


def unfold_embed(images: torch.Tensor, proj: torch.nn.Conv2d, patch: int, *, fixed: bool):
    """Exercise 2: a student's unfold-based embedding, as written and with the permute."""
    b = images.shape[0]
    cols = images.unfold(2, patch, patch).unfold(3, patch, patch)  # (B, C, gh, gw, P, P)
    if fixed:
        cols = cols.permute(0, 2, 3, 1, 4, 5)  # (B, gh, gw, C, P, P): channel first per patch
    flat = cols.reshape(b, -1, proj.in_channels * patch * patch)
    return flat @ proj.weight.reshape(proj.out_channels, -1).T + proj.bias


@facts(chapter=3, id="solutions")
def solutions(rec):
    """Exercise 1: shapes at 384 pixels; exercise 2: the unfold bug and its fix; exercise 3:
    the patch embedding's multiply-adds in ViT-B/16."""
    torch.manual_seed(0)
    proj = torch.nn.Conv2d(3, 192, kernel_size=16, stride=16)
    with torch.no_grad():
        out = proj(torch.zeros(2, 3, 384, 384))
        rec.fact("sol_ex1_conv", str(tuple(out.shape)))
        rec.fact("sol_ex1_tokens", str(tuple(out.flatten(2).transpose(1, 2).shape)))
        b16 = torch.nn.Conv2d(3, 768, kernel_size=16, stride=16)
        x = torch.randn(1, 3, 224, 224)
        ref = embed_linear(x, b16, 16)
        wrong = (unfold_embed(x, b16, 16, fixed=False) - ref).abs().max().item()
        right = (unfold_embed(x, b16, 16, fixed=True) - ref).abs().max().item()
    rec.fact("sol_ex2_wrong", wrong, "{:.2f}")
    rec.fact("sol_ex2_fixed", right, "{:.0e}")
    cfg = preset("vit-b/16")
    m = calc.macs(cfg)
    by_hand = cfg.num_patches * 3 * 16 * 16 * cfg.dim
    rec.fact("sol_ex3_macs", by_hand, "{:,}")
    rec.fact("sol_ex3_calc", m["patch_embed"], "{:,}")
    rec.fact("sol_ex3_share", m["patch_embed"] / m["total"], "{:.1%}")
    return {"wrong": wrong, "fixed": right}


@facts(chapter=3, id="quiz-traps")
def quiz_traps(rec):
    """The wrong answers quiz 2 must reject, from the calculator that gives the right one
    (``params_l_16`` in ``param_count``): ViT-L/16's patch embedding without its bias, and
    rounded to two significant figures."""
    cfg = preset("vit-l/16")
    right = calc.param_breakdown(cfg)["patch_embed"]
    rec.fact("params_l_16_no_bias", right - cfg.dim)  # the Conv2d weight alone
    rec.fact("params_l_16_rounded", int(float(f"{right:.2g}")))
    return {"right": right}
