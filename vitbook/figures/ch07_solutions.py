"""Chapter 7, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

from vitbook import calc
from vitbook.engine import facts
from vitbook.model import preset


@facts(chapter=7, id="solutions")
def solutions(rec):
    """Exercise 3: one ViT-L/16 block's parameters, from 12D^2 + 13D and from calc."""
    cfg = preset("vit-l/16")
    d = cfg.dim
    by_formula = 12 * d * d + 13 * d
    rec.fact("sol_ex3_l16_block", by_formula, "{:,}")
    rec.fact("sol_ex3_l16_block_calc", calc.param_breakdown(cfg)["block"], "{:,}")
    rec.fact("sol_ex3_l16_d2", 12 * d * d, "{:,}")
    return {"formula": by_formula}
