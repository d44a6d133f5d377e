"""Chapter 10, "What came next": one computed number for each of four later directions, all from
a config and the calculator (``vitbook.calc``), no training.

- Registers (Darcet et al., ICLR 2024): extra learned tokens with no patch behind them. The
  released DINOv2 models with registers use four (facebookresearch/dinov2 at b8931f7,
  ``dinov2/hub/backbones.py``: ``num_register_tokens=4``); ``prepare_tokens_with_masks`` puts
  them after the class token, after the position table has been added (they get no position),
  and the output keeps them apart (``x_norm_regtokens``).
- MLP-Mixer (Tolstikhin et al., NeurIPS 2021): the official code (google-research/
  vision_transformer at c6de1e5, ``vit_jax/models_mixer.py``, ``configs/models.py``): Mixer-B/16
  has hidden width 768, 12 blocks, a token-mixing MLP of width 384 and a channel-mixing MLP of
  width 3072; the token-mixing MLP is one ``Dense`` pair applied to every channel's column of
  196 numbers (swapaxes, MlpBlock, swapaxes), no class token, mean pooling before the head.
- MoCo v3 (Chen, Xie and He, ICCV 2021): facebookresearch/moco-v3 at c349e6e, ``vits.py``:
  ``stop_grad_conv1`` sets ``requires_grad = False`` on ``patch_embed.proj.weight`` and ``.bias``
  after a Xavier-uniform initialisation (bound sqrt(6 / (3 P^2 + D))); the position table is a
  fixed 2D sin-cos table; its ViT-B recipe passes ``--stop-grad-conv1``.
- Scaling (the ViT paper's section 5: "further scaling of ViT would likely lead to improved
  performance"; Zhai et al., CVPR 2022, trained a two-billion-parameter ViT-G/14): ViT-G's
  width 1664, depth 48, MLP 8192 and 16 heads are big_vision's (google-research/big_vision at
  0127fb6, ``big_vision/models/vit.py``, ``decode_variant``, citing Table 2 of that paper).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from vitbook.calc import macs, param_breakdown
from vitbook.engine import facts
from vitbook.model import ViTConfig, preset

#: Registers in the released DINOv2 models (and in all of Darcet et al.'s experiments, section
#: 3.2, "Number of register tokens": "In all our experiments, we kept 4 register tokens").
REGISTERS = 4

#: What Darcet et al. (section 1 and 2.1, Fig. 4) say of the artifacts: tokens with roughly 10x
#: the norm of the others at the output, around 2% of the sequence; in DINOv2, of six model
#: sizes (Tiny to giant) only the three largest have them, and in ViT-g (the model whose
#: training Fig. 4b follows) they appear only after about a third of training. Section 2.2 adds
#: that DeiT-III and OpenCLIP have them at both size B and L.
ARTIFACTS = {"norm_ratio": 10, "share": 0.02, "largest": 3, "sizes": 6}

#: MLP-Mixer's paper: Table 1 (Mixer-B/16: 59M parameters at 224 pixels, head excluded);
#: Table 3 (ImageNet-1k from scratch with extra regularisation, 224 pixels: Mixer-B/16 76.44,
#: ViT-B/16 79.67); Table 2 and section 3.1 (JFT-300M: Mixer-H/14 87.94, ViT-H/14 88.55;
#: "Mixer-H/14 runs 2.5 times faster than ViT-H/14"); section 3 "Fine-tuning": at a higher
#: resolution the token-mixing MLP is grown block-diagonally, which "only allows for
#: S' = K^2 S" for a whole number K.
MIXER_PAPER = {"b16_params_m": 59, "b16_in1k": 76.44, "vit_b16_in1k": 79.67,
               "h14_jft": 87.94, "vit_h14_jft": 88.55, "speedup": 2.5}  # fmt: skip

#: MoCo v3's paper, section 4.2: with the patch projection frozen at random, ViT-B/16 (100
#: epochs, AdamW, batch 4096, lr 1.5e-4) gains 1.7 points of linear-probe accuracy, to 73.4%;
#: "the patch projection matrix is complete (768-d output for a 3-channel 16x16 patch)".
MOCO_PAPER = {"gain": 1.7, "acc": 73.4, "lr": "1.5e-4"}

#: Mixer-B/16 in the official code: hidden width (C), blocks, token-mixing MLP width (D_S),
#: channel-mixing MLP width (D_C), patch size; image 224 pixels, a 1000-class head.
MIXER_B16 = {"dim": 768, "depth": 12, "tokens_mlp": 384, "channels_mlp": 3072, "patch": 16}

#: ViT-G/14 as big_vision defines it (Zhai et al. 2022, Table 2).
VIT_G14 = {"dim": 1664, "depth": 48, "mlp": 8192, "heads": 16, "patch": 14}

#: The top-1 accuracy on ImageNet that Zhai et al. report for it (their abstract).
VIT_G14_TOP1 = 90.45


def encoder_macs(cfg: ViTConfig, tokens: int) -> int:
    """MACs of all the blocks for ``tokens`` tokens instead of the config's own T: the
    calculator's projections and MLP grow with the tokens, its two attention matmuls with
    their square (the patch embedding and the head do not change)."""
    m = macs(cfg)
    t = cfg.seq_len
    linear = m["qkv"] + m["proj"] + m["mlp"]
    square = m["attn_qk"] + m["attn_av"]
    return (linear * tokens) // t + (square * tokens * tokens) // (t * t)


def attention_macs_per_block(cfg: ViTConfig, tokens: int) -> int:
    """One block's attention (qkv, Q K^T, A V, output projection) for ``tokens`` tokens."""
    m = macs(cfg)
    t, layers = cfg.seq_len, cfg.depth
    linear = (m["qkv"] + m["proj"]) // layers
    square = (m["attn_qk"] + m["attn_av"]) // layers
    return (linear * tokens) // t + (square * tokens * tokens) // (t * t)


def token_mixing_params(tokens: int, width: int) -> int:
    """A token-mixing MLP: Linear(tokens, width) then Linear(width, tokens), with biases,
    shared by every channel."""
    return tokens * width + width + width * tokens + tokens


def token_mixing_macs(tokens: int, width: int, channels: int) -> int:
    """Its multiply-adds for one image: two products per channel's column of ``tokens``."""
    return 2 * tokens * width * channels


def mixer_params(*, image: int = 224, classes: int = 1000, **cfg: int) -> int:
    """Trainable parameters of an MLP-Mixer (the official layout): the patch projection, per
    block two LayerNorms, the token-mixing and the channel-mixing MLP, the final LayerNorm and
    the head."""
    c, p = cfg["dim"], cfg["patch"]
    s = (image // p) ** 2
    stem = 3 * p * p * c + c
    channel = c * cfg["channels_mlp"] + cfg["channels_mlp"] + cfg["channels_mlp"] * c + c
    block = 2 * 2 * c + token_mixing_params(s, cfg["tokens_mlp"]) + channel
    return stem + cfg["depth"] * block + 2 * c + c * classes + classes


def is_square_multiple(n: int, s: int) -> bool:
    """Whether ``n`` tokens are K^2 times ``s`` for a whole K: the only patch counts to which
    the Mixer paper's block-diagonal fine-tuning scheme can grow a token-mixing MLP."""
    if n % s:
        return False
    k = math.isqrt(n // s)
    return k * k == n // s


def random_patch_projection(cfg: ViTConfig, seed: int = 0) -> torch.Tensor:
    """MoCo v3's frozen patch projection for ``cfg``: a (D, C P^2) matrix drawn Xavier-uniform
    with bound sqrt(6 / (C P^2 + D)), as ``vits.py`` draws it, from a seeded generator."""
    fan = cfg.in_chans * cfg.patch_size**2
    bound = math.sqrt(6.0 / (fan + cfg.dim))
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(cfg.dim, fan, generator=g, dtype=torch.float64) * 2 - 1) * bound


@facts(chapter=10, id="what-came-next")
def what_came_next(rec):
    """Registers' extra tokens and attention entries on ViT-B/16; Mixer-B/16's token-mixing MLP
    against a ViT-B/16 block's attention; what MoCo v3 freezes; ViT-G/14 against ViT-H/14."""
    b16 = preset("vit-b/16")
    p = param_breakdown(b16)

    # Registers
    t, t_reg = b16.seq_len, b16.seq_len + REGISTERS
    rec.fact("reg_n", REGISTERS)
    rec.fact("reg_tokens", t)
    rec.fact("reg_tokens_with", t_reg)
    rec.fact("reg_entries", t * t, "{:,}")
    rec.fact("reg_entries_with", t_reg * t_reg, "{:,}")
    rec.fact("reg_entries_growth", t_reg * t_reg / (t * t) - 1, "{:.1%}")
    rec.fact("reg_params", REGISTERS * b16.dim, "{:,}")
    rec.fact("reg_params_share", REGISTERS * b16.dim / p["total"], "{:.3%}")
    grow = encoder_macs(b16, t_reg) / encoder_macs(b16, t) - 1
    rec.fact("reg_macs_growth", grow, "{:.1%}")
    rec.fact("reg_norm_ratio", ARTIFACTS["norm_ratio"])
    rec.fact("reg_outlier_share", ARTIFACTS["share"], "{:.0%}")
    rec.fact("reg_largest", ARTIFACTS["largest"])
    rec.fact("reg_sizes", ARTIFACTS["sizes"])

    # MLP-Mixer
    mx = MIXER_B16
    s = b16.num_patches  # 196 patches at 224 pixels: Mixer-B/16 has no class token
    tok_params = token_mixing_params(s, mx["tokens_mlp"])
    tok_macs = token_mixing_macs(s, mx["tokens_mlp"], mx["dim"])
    att_macs = attention_macs_per_block(b16, s)
    rec.fact("mixer_tokens", s)
    rec.fact("mixer_tokens_mlp", mx["tokens_mlp"])
    rec.fact("mixer_tok_params", tok_params, "{:,}")
    rec.fact("mixer_attn_params", p["attn"], "{:,}")
    rec.fact("mixer_params_ratio", p["attn"] / tok_params, "{:.1f}")
    rec.fact("mixer_tok_mmacs", tok_macs / 1e6, "{:,.0f}")
    rec.fact("mixer_attn_mmacs", att_macs / 1e6, "{:,.0f}")
    rec.fact("mixer_macs_ratio", att_macs / tok_macs, "{:.1f}")
    head = mx["dim"] * 1000 + 1000
    rec.fact("mixer_backbone_m", (mixer_params(**mx) - head) / 1e6, "{:.1f}")
    rec.fact("mixer_paper_params_m", MIXER_PAPER["b16_params_m"])
    for px in (384, 448):  # the patch counts a Mixer fine-tuned at these sizes would read
        n = dataclasses.replace(b16, image_size=px).num_patches
        rec.fact(f"mixer_px_{px}", px)
        rec.fact(f"mixer_tokens_{px}", n)
        rec.fact(f"mixer_growth_{px}", n / s, "{:.2f}")
        rec.fact(f"mixer_square_{px}", is_square_multiple(n, s))
    rec.fact("mixer_b16_in1k", MIXER_PAPER["b16_in1k"], "{:.2f}%")
    rec.fact("mixer_vit_b16_in1k", MIXER_PAPER["vit_b16_in1k"], "{:.2f}%")
    rec.fact("mixer_h14_jft", MIXER_PAPER["h14_jft"], "{:.2f}%")
    rec.fact("mixer_vit_h14_jft", MIXER_PAPER["vit_h14_jft"], "{:.2f}%")
    rec.fact("mixer_speedup", MIXER_PAPER["speedup"], "{:g}")

    # MoCo v3: the frozen random patch projection
    backbone = dataclasses.replace(b16, num_classes=0, pos_embed="sincos2d")
    pb = param_breakdown(backbone)
    w = random_patch_projection(b16)
    rec.fact("moco_frozen", pb["patch_embed"], "{:,}")
    rec.fact("moco_backbone", pb["total"], "{:,}")
    rec.fact("moco_frozen_share", pb["patch_embed"] / pb["total"], "{:.2%}")
    rec.fact("moco_patch_numbers", w.shape[1])
    rec.fact("moco_dim", w.shape[0])
    rank = int(torch.linalg.matrix_rank(w))
    rec.fact("moco_rank", rank)
    rec.fact("moco_gain", MOCO_PAPER["gain"], "{:.1f}")
    rec.fact("moco_acc", MOCO_PAPER["acc"], "{:.1f}%")
    rec.fact("moco_lr", MOCO_PAPER["lr"])

    # Scaling: ViT-G/14 in the book's layout against ViT-H/14
    g = VIT_G14
    g14 = ViTConfig(patch_size=g["patch"], dim=g["dim"], depth=g["depth"], heads=g["heads"],
                    mlp_ratio=g["mlp"] / g["dim"])  # fmt: skip
    h14 = preset("vit-h/14")
    pg, ph = param_breakdown(g14)["total"], param_breakdown(h14)["total"]
    mg, mh = macs(g14)["total"], macs(h14)["total"]
    rec.fact("g14_dim", g["dim"], "{:,}")
    rec.fact("g14_depth", g["depth"])
    rec.fact("g14_mlp", g["mlp"], "{:,}")
    rec.fact("g14_heads", g["heads"])
    rec.fact("g14_params", pg, "{:,}")
    rec.fact("g14_gmacs", mg / 1e9, "{:,.0f}")
    rec.fact("h14_params_next", ph, "{:,}")
    rec.fact("h14_gmacs_next", mh / 1e9, "{:,.0f}")
    rec.fact("g14_params_ratio", pg / ph, "{:.1f}")
    rec.fact("g14_macs_ratio", mg / mh, "{:.1f}")
    rec.fact("g14_top1", VIT_G14_TOP1, "{:.2f}%")
    return {"g14_params": pg, "mixer_params": mixer_params(**mx), "moco_rank": rank}
