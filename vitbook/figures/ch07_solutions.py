"""Chapter 7, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import numpy as np
import torch

from vitbook import calc
from vitbook.engine import facts
from vitbook.figures.ch07_block import NORM_SEEDS, STACK, _stack_blocks
from vitbook.model import Block, preset
from vitbook.quoted import quote


def buggy_pre_norm_forward(block: Block, x: torch.Tensor) -> torch.Tensor:
    """Exercise 1's student block: the stream itself is normalised before each sub-layer."""
    x = block.norm1(x)  # the bug: the identity path now carries LN(z)
    x = x + block.attn(x)[0]
    x = block.norm2(x)
    return x + block.mlp(x)


@torch.no_grad()
def stream_sizes(buggy: bool, seed: int = 0) -> list[float]:
    """RMS of the residual stream entering each block of the Xavier stack of
    ``gradient_profile`` (same weights and batch for ``seed``), with the student's block or the
    book's."""
    blocks = _stack_blocks("xavier", seed)
    torch.manual_seed(1000 + seed)
    z = torch.randn(STACK["batch"], STACK["tokens"], STACK["dim"])
    sizes = []
    for blk in blocks:
        sizes.append(z.pow(2).mean().sqrt().item())
        z = buggy_pre_norm_forward(blk, z) if buggy else blk(z)[0]
    sizes.append(z.pow(2).mean().sqrt().item())  # what leaves the last block
    return sizes


@facts(chapter=7, id="solutions")
def solutions(rec):
    """Exercise 3: one ViT-L/16 block's parameters, from 12D^2 + 13D and from calc."""
    cfg = preset("vit-l/16")
    d = cfg.dim
    by_formula = 12 * d * d + 13 * d
    rec.fact("sol_ex3_l16_block", by_formula, "{:,}")
    rec.fact("sol_ex3_l16_block_calc", calc.param_breakdown(cfg)["block"], "{:,}")
    rec.fact("sol_ex3_l16_d2", 12 * d * d, "{:,}")
    # exercise 1: the stream's size after the last block, over the seeds of gradient_profile
    out = {}
    for name, buggy in (("right", False), ("buggy", True)):
        sizes = np.array([stream_sizes(buggy, s) for s in range(NORM_SEEDS)])  # (seeds, depth+1)
        growth = sizes[:, -1] / sizes[:, 0]
        rec.fact(f"sol_ex1_growth_{name}", growth.mean(), "{:.1f}", seeds=NORM_SEEDS)
        rec.fact(f"sol_ex1_growth_{name}_lo", growth.min(), "{:.1f}")
        rec.fact(f"sol_ex1_growth_{name}_hi", growth.max(), "{:.1f}")
        # after the first block: how far the buggy stream stays from growing
        rec.fact(f"sol_ex1_max_{name}", sizes[:, 1:].max(), "{:.1f}")
        out[name] = sizes
    rec.fact("sol_ex1_seeds", NORM_SEEDS)
    return {"formula": by_formula, **out}


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
