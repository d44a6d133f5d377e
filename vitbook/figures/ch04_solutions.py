"""Chapter 4, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import inspect

import torch

from vitbook.analysis import sincos_1d
from vitbook.calc import param_breakdown
from vitbook.engine import facts
from vitbook.figures.ch04_cls_position import F32_ROUNDING, shuffle_test
from vitbook.model import VisionTransformer, preset


def _shape(t) -> str:
    return str(tuple(t.shape))


@facts(chapter=4, id="solutions")
def solutions(rec):
    """Exercise 1: the shapes of tinyvit8; exercise 3: shuffling a bag of patches, on the
    fused and the explicit path, and changing one patch; exercise 4: ViT-L/16 at 512."""
    torch.manual_seed(0)
    m = VisionTransformer(cfg=preset("tinyvit8")).eval()
    with torch.no_grad():
        out = m.forward_intermediates(torch.rand(2, 1, 8, 8))
    rec.fact("sol_ex1_grid", m.cfg.grid[0])
    rec.fact("sol_ex1_batch", out["patches"].shape[0])
    rec.fact("sol_ex1_cls", _shape(m.cls_token))
    rec.fact("sol_ex1_pos", _shape(m.pos_embed))
    rec.fact("sol_ex1_patches", _shape(out["patches"]))
    rec.fact("sol_ex1_z0", _shape(out["with_pos"]))

    torch.manual_seed(0)
    cfg = preset("vit-ti/16", depth=4, pos_embed="none", pool="mean")
    bag = VisionTransformer(cfg=cfg).eval()
    rec.fact("sol_ex3_depth", cfg.depth)
    x = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    perm = torch.randperm(cfg.num_patches, generator=torch.Generator().manual_seed(2))
    fused = shuffle_test(bag, x, perm)
    bag.set_fused_attn(False)
    explicit = shuffle_test(bag, x, perm)
    rec.fact("sol_ex3_cls_fused", fused["cls"], "{:.0e}", tol=F32_ROUNDING)
    rec.fact("sol_ex3_cls_explicit", explicit["cls"], "{:.0e}", tol=F32_ROUNDING)
    rec.fact("sol_ex3_logits_fused", fused["logits"], "{:.0e}", tol=F32_ROUNDING)
    changed = x.clone()
    changed[..., :16, :16] = 1.0 - changed[..., :16, :16]  # one patch, new pixels
    with torch.no_grad():
        move = (bag(changed) - bag(x)).abs().max().item()
    rec.fact("sol_ex3_one_patch", move, "{:.2f}")

    big = preset("vit-l/16", image_size=512)
    rec.fact("sol_ex4_grid", big.grid[0])
    rec.fact("sol_ex4_rows", big.seq_len, "{:,}")
    rec.fact("sol_ex4_dim", big.dim, "{:,}")
    rec.fact("sol_ex4_params", param_breakdown(big)["pos_embed"])
    return {"fused": fused, "explicit": explicit, "one_patch": move}


@facts(chapter=4, id="in-prose")
def in_prose(rec):
    """Numbers the chapter's prose quotes from the book's code: the base of the sin-cos
    frequencies, read from ``sincos_1d``'s signature (Vaswani et al.'s 10000)."""
    base = inspect.signature(sincos_1d).parameters["temperature"].default
    rec.fact("sincos_base", int(base), "{}")
    return {"sincos_base": base}


@facts(chapter=4, id="quiz-traps")
def quiz_traps(rec):
    """The wrong answers quiz 2 must reject, from the calculator that gives the right one
    (``pos_params_b16`` in ``pos_params``): ViT-B/16's position table without the class
    token's row, and rounded to two significant figures."""
    cfg = preset("vit-b/16")
    right = param_breakdown(cfg)["pos_embed"]
    rec.fact("pos_params_b16_no_cls", right - cfg.dim)  # one row of D numbers fewer
    rec.fact("pos_params_b16_rounded", int(float(f"{right:.2g}")))
    return {"right": right}
