"""Chapter 7, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

from vitbook import calc
from vitbook.engine import facts
from vitbook.model import preset
from vitbook.quoted import quote


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


@facts(chapter=7, id="in-prose")
def in_prose(rec):
    """Numbers the prose and the quiz quote: the official JAX code's position-embedding std
    (``vit_jax/models_vit.py``, ``nn.initializers.normal(stddev=0.02)``, "from BERT"), and the
    shapes in quiz 1 (a batch of 8 through one ViT-B/16 block), from the preset."""
    quote(rec, "jax_pos_std", 0.02, "{:g}")  # google-research/vision_transformer, models_vit.py
    cfg = preset("vit-b/16")
    tokens = dict(calc.shape_trace(cfg))["with_cls"][1]
    batch = 8  # the quiz's own input
    rec.fact("q1_fc1", str((batch, tokens, cfg.mlp_dim)))
    rec.fact("q1_out", str((batch, tokens, cfg.dim)))
    rec.fact("q1_fc1_pooled", str((batch, cfg.mlp_dim)))
    rec.fact("q1_out_pooled", str((batch, cfg.dim)))
    return {"tokens": tokens}
