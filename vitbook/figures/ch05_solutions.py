"""Chapter 5, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import math
import warnings

import torch

from vitbook import calc
from vitbook.engine import facts
from vitbook.figures.ch05_attention import WORKED_K, WORKED_Q, WORKED_V, four_tokens_attention
from vitbook.model import preset, scaled_dot_product


def student_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Exercise 3: the student's line, as written (``.T`` and ``shape[1]``)."""
    return q @ k.T / math.sqrt(q.shape[1])


@facts(chapter=5, id="solutions")
def solutions(rec):
    """Exercise 1: the worked example with the query doubled; exercise 2: softmax over the
    wrong axis; exercise 3: the student's scores; exercise 4: attention products against the
    qkv projection."""
    q, k, v = (torch.tensor(x, dtype=torch.float64) for x in (WORKED_Q, WORKED_K, WORKED_V))
    _, w1 = scaled_dot_product(q, k, v)
    out2, w2 = scaled_dot_product(2 * q, k, v)
    for i in range(3):
        rec.fact(f"sol_ex1_w{i + 1}", w2[0, i].item(), "{:.3f}")
        rec.fact(f"sol_ex1_before_w{i + 1}", w1[0, i].item(), "{:.3f}")
    rec.fact("sol_ex1_out1", out2[0, 0].item(), "{:.2f}")
    rec.fact("sol_ex1_out2", out2[0, 1].item(), "{:.2f}")

    d = four_tokens_attention()
    wrong = (d["q"] @ d["k"].T / math.sqrt(d["q"].shape[-1])).softmax(dim=-2)  # (4, 4)
    rows = wrong.sum(dim=-1)
    rec.fact("sol_ex2_row_min", rows.min().item(), "{:.2f}")
    rec.fact("sol_ex2_row_max", rows.max().item(), "{:.2f}")
    # float64 rounding: printed as the bound tol (the page's below()), never as the value
    rec.fact("sol_ex2_col_dev", (wrong.sum(dim=-2) - 1).abs().max().item(), "{:.0e}", tol=1e-14)

    g = torch.Generator().manual_seed(0)
    qs, ks = torch.randn(1, 4, 4, generator=g), torch.randn(1, 4, 4, generator=g)  # B=1, T=Dh
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns (once per process) that .T is deprecated
        s = student_scores(qs, ks)
    rec.fact("sol_ex3_shape", str(tuple(s.shape)))
    rec.fact("sol_ex3_small_shape", str(tuple(qs.shape)))
    rec.fact("sol_ex3_right_shape", str(tuple((qs @ ks.transpose(-2, -1)).shape)))
    b16 = (2, preset("vit-b/16").seq_len, preset("vit-b/16").head_dim)
    rec.fact("sol_ex3_b16_shape", str(b16))
    try:
        student_scores(torch.randn(b16), torch.randn(b16))
        fails = "no"
    except RuntimeError:
        fails = "yes"
    rec.fact("sol_ex3_b16_fails", fails)

    cfg = preset("vit-b/16")
    T, Dh, D = cfg.seq_len, cfg.head_dim, cfg.dim
    rec.fact("sol_ex4_t", T)
    rec.fact("sol_ex4_qk", T * T * Dh, "{:,}")
    rec.fact("sol_ex4_av", T * T * Dh, "{:,}")
    rec.fact("sol_ex4_proj_head", T * D * 3 * Dh, "{:,}")
    rec.fact("sol_ex4_equal_t", 3 * D // 2, "{:,}")
    m = calc.macs(cfg)
    rec.fact("sol_ex4_calc_ratio", (m["attn_qk"] + m["attn_av"]) / m["qkv"], "{:.2f}")
    return {"weights": w2.numpy(), "shape": tuple(s.shape)}
