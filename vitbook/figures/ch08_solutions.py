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
    # exercise 3: ViT-S/16's predictions from 224 to 384 pixels, to compare a measurement with
    s16, s16_384 = preset("vit-s/16"), preset("vit-s/16", image_size=384)
    rec.fact("sol_ex3_s16_macs_ratio", calc.macs(s16_384)["total"] / calc.macs(s16)["total"],
             "{:.2f}")  # fmt: skip
    rec.fact("sol_ex3_s16_pairs_ratio", calc.token_pairs_ratio(s16, 384), "{:.2f}")
    # exercise 4: the FLOPs figure halved is the MACs figure, both with the attention matmuls
    b16 = calc.macs(preset("vit-b/16"))["total"]
    rec.fact("sol_ex4_halved", 2 * b16 / 2 / 1e9, "{:.1f}")
    return {"h14": trace}


@facts(chapter=8, id="in-prose")
def in_prose(rec):
    """Numbers the prose and the quiz quote: ViT-S/16's patches (quiz 1), and the width of the
    pre-training hidden layer in the chapter's ViT-B/16 example, which is D (the ``pre-logits``
    count in ch08_whole_model.py builds it with ``representation_size=768``; a test checks that
    its parameter count is D·D + D)."""
    s16 = dict(calc.shape_trace(preset("vit-s/16")))
    rec.fact("s16_patches", s16["with_cls"][1] - 1)
    rec.fact("pre_logits_width_b16", preset("vit-b/16").dim)
    return {"s16": s16}
