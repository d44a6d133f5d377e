"""Chapter 8, worked solutions of the exercises: the numbers they quote, computed."""

from __future__ import annotations

from vitbook import calc
from vitbook.engine import facts
from vitbook.model import preset


@facts(chapter=8, id="solutions")
def solutions(rec):
    """Exercise 1: ViT-H/14's shape trace; exercise 2: ViT-B/16's MACs at 384 pixels."""
    h14 = preset("vit-h/14")
    trace = dict(calc.shape_trace(h14))
    rec.fact("sol_ex1_grid", trace["patch_embed.proj"][-1])
    rec.fact("sol_ex1_seq", trace["with_cls"][1])
    rec.fact("sol_ex1_qkv", trace["blocks.i.attn.qkv"][-1], "{:,}")
    rec.fact("sol_ex1_heads", trace["blocks.i.attn.weights"][1])
    rec.fact("sol_ex1_mlp", trace["blocks.i.mlp.fc1"][-1], "{:,}")
    m = calc.macs(preset("vit-b/16", image_size=384))
    rec.fact("sol_ex2_gmacs_384", m["total"] / 1e9, "{:.1f}")
    rec.fact("sol_ex2_attn_share", (m["attn_qk"] + m["attn_av"]) / m["total"], "{:.0%}")
    base = calc.macs(preset("vit-b/16"))
    rec.fact("sol_ex2_ratio", m["total"] / base["total"], "{:.2f}")
    rec.fact(
        "sol_ex2_attn_share_224", (base["attn_qk"] + base["attn_av"]) / base["total"], "{:.0%}"
    )
    return {"h14": trace}
