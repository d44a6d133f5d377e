"""Chapter 6, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vitbook import calc
from vitbook.analysis import mean_attention_distance
from vitbook.engine import facts
from vitbook.figures.ch06_multi_head import (
    GRID,
    PATCH,
    QUERY,
    diff_text,
    face_tokens,
    hand_set_heads,
    shape_text,
    split_heads_trace,
)
from vitbook.model import Attention, preset, scaled_dot_product


def swapped_layout(attn: Attention, x: torch.Tensor) -> torch.Tensor:
    """Exercise 2: ``Attention.forward`` with (heads, 3) instead of (3, heads) in the reshape."""
    B, T, D = x.shape
    qkv = attn.qkv(x).reshape(B, T, attn.heads, 3, attn.head_dim)  # the wrong split
    q, k, v = qkv.permute(3, 0, 2, 1, 4).unbind(0)  # still 3 x (B, heads, T, Dh)
    out = F.scaled_dot_product_attention(q, k, v)  # (B, heads, T, Dh)
    return attn.proj(out.transpose(1, 2).reshape(B, T, D))  # (B, T, D)


def per_head_loop(attn: Attention, x: torch.Tensor) -> torch.Tensor:
    """Eq. 8 written out: q, k, v are the three D-wide slices of qkv; head h uses columns
    h*Dh to (h+1)*Dh of each; the heads are concatenated and projected."""
    D, Dh = x.shape[-1], attn.head_dim
    q, k, v = attn.qkv(x).split(D, dim=-1)  # 3 x (B, T, D)
    heads = []
    for h in range(attn.heads):
        sl = slice(h * Dh, (h + 1) * Dh)
        heads.append(scaled_dot_product(q[..., sl], k[..., sl], v[..., sl])[0])  # (B, T, Dh)
    return attn.proj(torch.cat(heads, dim=-1))  # (B, T, D)


@facts(chapter=6, id="solutions")
def solutions(rec):
    """Exercise 1: the shapes of the split for D = 8, 2 heads, 50 tokens, batch 3; exercise 2:
    the swapped reshape; exercise 3: a wider local head; exercise 4: one block's costs."""
    steps, diff = split_heads_trace(B=3, T=50, D=8, heads=2)
    for i, (_, t) in enumerate(steps):
        rec.fact(f"sol_ex1_step{i}", shape_text(t))
    rec.fact("sol_ex1_steps", len(steps))
    rec.fact("sol_ex1_diff", diff, text=diff_text(diff))  # the same operations: exactly 0

    g = torch.Generator().manual_seed(0)
    attn = Attention(dim=48, heads=4, fused=True).eval()
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        x = torch.randn(2, 9, 48, generator=g)
        wrong = swapped_layout(attn, x)
        ref = per_head_loop(attn, x)
        module, _ = attn(x)
    rec.fact("sol_ex2_dim", attn.qkv.in_features)
    rec.fact("sol_ex2_heads", attn.heads)
    rec.fact("sol_ex2_same_shape", "yes" if wrong.shape == module.shape else "no")
    rec.fact("sol_ex2_diff", (wrong - ref).abs().max().item(), "{:.2f}")
    # float32 rounding between the fused kernel and the loop: printed as the bound tol
    rec.fact("sol_ex2_right_diff", (module - ref).abs().max().item(), "{:.0e}", tol=1e-6)

    tokens, _ = face_tokens()
    dists = {}
    for sigma in (1.0, 3.0):
        with torch.no_grad():
            _, w = hand_set_heads(sigma_local=sigma)(tokens[None], return_weights=True)
        dists[sigma] = mean_attention_distance(w, GRID, PATCH, num_prefix_tokens=0)[2].item()
        if sigma == 3.0:
            rec.fact("sol_ex3_peak", w[0, 2, QUERY].max().item(), "{:.3f}")
    rec.fact("sol_ex3_dist1", dists[1.0], "{:.0f}")
    rec.fact("sol_ex3_dist3", dists[3.0], "{:.0f}")
    rec.fact("sol_ex3_ratio", dists[3.0] / dists[1.0], "{:.1f}")
    rec.fact("sol_ex3_sigma_px", 3 * PATCH)

    cfg = preset("vit-b/16")
    m = calc.macs(cfg)
    L = cfg.depth
    rec.fact("sol_ex4_proj", (m["qkv"] + m["proj"]) // L, "{:,}")
    rec.fact("sol_ex4_products", (m["attn_qk"] + m["attn_av"]) // L, "{:,}")
    rec.fact("sol_ex4_ratio", (m["attn_qk"] + m["attn_av"]) / (m["qkv"] + m["proj"]), "{:.2f}")
    rec.fact("sol_ex4_equal_t", 2 * cfg.dim, "{:,}")
    return {"dists": dists}


@facts(chapter=6, id="quiz-traps")
def quiz_traps(rec):
    """The wrong answers quizzes 1 and 2 must reject, from the calculator that gives the right
    ones (``l16_head_dim`` and ``params_attn_l16`` in ``fused_qkv``): the MLP's width split by
    the heads; ViT-L's attention parameters without the biases, without the output
    projection, and counted once per head."""
    large = preset("vit-l/16")
    p = calc.param_breakdown(large)
    D = large.dim
    rec.fact("l16_mlp_per_head", large.mlp_dim // large.heads)
    rec.fact("params_attn_l16_no_bias", p["attn"] - 4 * D)  # four biases of D numbers
    rec.fact("params_attn_l16_no_proj", p["qkv"])  # queries, keys and values only
    rec.fact("params_attn_l16_per_head", p["attn"] * large.heads)
    return {"attn": p["attn"]}
