"""Shapes, parameter counts and compute of a ViT, from its config alone (no tensors).

Conventions: one MAC is one multiply-add; FLOPs = 2 x MACs. Counts are for one image (batch 1)
and cover the matrix products only (patch embedding, qkv, the two attention matmuls Q K^T and
A V, output projection, MLP, head): softmax, GELU, LayerNorm, biases and residual additions are
a fraction of a percent and are left out, as is usual (fvcore, the papers' GFLOPs columns).
"""

from __future__ import annotations

import dataclasses

from vitbook.model import ViTConfig

__all__ = [
    "activation_floats",
    "flops",
    "macs",
    "param_breakdown",
    "shape_trace",
    "token_pairs",
    "token_pairs_ratio",
]


def shape_trace(cfg: ViTConfig, *, batch: int = 1) -> list[tuple[str, tuple[int, ...]]]:
    """The tensor shape after every stage of the forward pass (one block shown, all alike).

    Args:
        cfg: the model's config.
        batch: B.

    Returns:
        [(stage name, shape)], in order.
    """
    B, C, D, T, N = batch, cfg.in_chans, cfg.dim, cfg.seq_len, cfg.num_patches
    (H, W), (gh, gw), h, Dh = cfg.image_hw, cfg.grid, cfg.heads, cfg.head_dim
    trace: list[tuple[str, tuple[int, ...]]] = [
        ("image", (B, C, H, W)),
        ("patch_embed.proj", (B, D, gh, gw)),
        ("patches", (B, N, D)),
        ("with_cls", (B, T, D)),
        ("with_pos", (B, T, D)),
    ]
    if cfg.depth > 0:
        trace += [
            ("blocks.i.norm1", (B, T, D)),
            ("blocks.i.attn.qkv", (B, T, 3 * D)),
            ("blocks.i.attn.q/k/v", (B, h, T, Dh)),
            ("blocks.i.attn.weights", (B, h, T, T)),
            ("blocks.i.attn.heads_out", (B, h, T, Dh)),
            ("blocks.i.attn.proj", (B, T, D)),
            ("blocks.i.mlp.fc1", (B, T, cfg.mlp_dim)),
            ("blocks.i.mlp.fc2", (B, T, D)),
            ("blocks.i", (B, T, D)),
        ]
    trace += [("encoded", (B, T, D)), ("pooled", (B, D))]
    if cfg.num_classes > 0:
        trace.append(("logits", (B, cfg.num_classes)))
    return trace


# --8<-- [start:params]
def param_breakdown(cfg: ViTConfig) -> dict[str, int]:
    """Trainable parameters by component; equals ``VisionTransformer(cfg=cfg).num_params()``.

    Keys: "patch_embed", "cls_token", "pos_embed" (0 for a fixed sin-cos table or none);
    per block: "qkv", "proj", "attn" (= qkv + proj), "mlp", "norms" (its two LayerNorms),
    "block"; over all blocks: "blocks", "attn_all", "mlp_all", "norms_all";
    then "norm" (final LayerNorm), "pre_logits" (the pre-training head's hidden layer, 0 if
    none), "head", "total".
    """
    D, C, P, M, K = cfg.dim, cfg.in_chans, cfg.patch_size, cfg.mlp_dim, cfg.num_classes
    p = {
        "patch_embed": C * P * P * D + D,  # Conv2d weight (D, C, P, P) + bias
        "cls_token": D,
        "pos_embed": cfg.seq_len * D if cfg.pos_embed == "learned" else 0,
        "qkv": D * 3 * D + (3 * D if cfg.qkv_bias else 0),  # Linear(D, 3D)
        "proj": D * D + D,  # Linear(D, D)
        "mlp": (D * M + M) + (M * D + D),  # fc1 Linear(D, M) + fc2 Linear(M, D)
        "norms": 2 * 2 * D,  # norm1, norm2: weight + bias each
    }
    p["attn"] = p["qkv"] + p["proj"]
    p["block"] = p["attn"] + p["mlp"] + p["norms"]
    L = cfg.depth
    p |= {"blocks": L * p["block"], "attn_all": L * p["attn"], "mlp_all": L * p["mlp"]}
    p["norms_all"] = L * p["norms"]
    p["norm"] = 2 * D
    R = cfg.representation_size
    p["pre_logits"] = D * R + R if R > 0 else 0  # Linear(D, R), then tanh
    p["head"] = (R if R > 0 else D) * K + K if K > 0 else 0
    p["total"] = (
        p["patch_embed"] + p["cls_token"] + p["pos_embed"] + p["blocks"] + p["norm"]
        + p["pre_logits"] + p["head"]
    )  # fmt: skip
    return p
    # --8<-- [end:params]


# --8<-- [start:macs]
def macs(cfg: ViTConfig, *, attn_matmuls: bool = True) -> dict[str, int]:
    """Multiply-accumulates for one image, by component, all blocks included.

    Args:
        cfg: the model's config.
        attn_matmuls: count Q K^T and A V (they grow with T^2); some tables leave them out.

    Returns:
        dict with "patch_embed", "qkv", "attn_qk", "attn_av" (only if attn_matmuls), "proj",
        "mlp", "head", "total".
    """
    D, T, N, L, M = cfg.dim, cfg.seq_len, cfg.num_patches, cfg.depth, cfg.mlp_dim
    P, C = cfg.patch_size, cfg.in_chans
    m = {
        "patch_embed": N * (C * P * P) * D,  # each patch: a (C*P*P) -> D projection
        "qkv": L * T * D * 3 * D,
    }
    if attn_matmuls:
        m["attn_qk"] = L * T * T * D  # per head T x T x Dh, times heads
        m["attn_av"] = L * T * T * D
    m["proj"] = L * T * D * D
    m["mlp"] = L * T * 2 * D * M  # fc1 and fc2
    m["head"] = D * cfg.num_classes
    m["total"] = sum(m.values())
    return m
    # --8<-- [end:macs]


def flops(cfg: ViTConfig, *, attn_matmuls: bool = True) -> int:
    """FLOPs for one image: 2 x total MACs (a multiply and an add)."""
    return 2 * macs(cfg, attn_matmuls=attn_matmuls)["total"]


def token_pairs(cfg: ViTConfig) -> int:
    """(N+1)^2: entries of one head's attention matrix."""
    return cfg.seq_len**2


def token_pairs_ratio(cfg: ViTConfig, new_size: int | tuple[int, int]) -> float:
    """How many times more token pairs attention handles at ``new_size`` than at the
    config's size, same patch size: ((N'+1) / (N+1))^2. ViT-B/16, 224 -> 384: 8.58.

    Args:
        cfg: the model's config.
        new_size: the new image size, int or (H, W); must divide by the patch size.
    """
    new = dataclasses.replace(cfg, image_size=new_size)  # validates divisibility
    return (new.seq_len / cfg.seq_len) ** 2


# --8<-- [start:activations]
def activation_floats(cfg: ViTConfig) -> dict[str, int]:
    """Numbers one block's forward pass leaves for the backward pass, for one image: what
    PyTorch's autograd saves on the model's explicit attention path (no fused kernels, no
    recomputation). A test records the tensors autograd saves and checks this count.

    Per token autograd keeps the inputs of the two LayerNorms (D each) with their mean and
    1/std (2 each), the inputs of qkv, proj and fc1 (D each), the whole qkv output (3D: the
    keys and values are views of it), the scaled queries (D), and the inputs of GELU and fc2
    (M each): 9D + 2M + 4 numbers, a constant. The softmax keeps only its output, the
    attention weights: heads x T per token, which grows with the sequence.

    Returns:
        dict with "per_token_fixed" (9D + 2M + 4), "per_token_attn" (heads T), "per_token",
        "per_block" (T x per_token), "total" (depth x per_block), all in numbers (floats).
    """
    D, M, T, h = cfg.dim, cfg.mlp_dim, cfg.seq_len, cfg.heads
    fixed = 9 * D + 2 * M + 4
    attn = h * T  # the softmax weights, one row per token and head
    per_block = T * (fixed + attn)
    return {
        "per_token_fixed": fixed,
        "per_token_attn": attn,
        "per_token": fixed + attn,
        "per_block": per_block,
        "total": cfg.depth * per_block,
    }
    # --8<-- [end:activations]
