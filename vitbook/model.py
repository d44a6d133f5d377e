"""The book's Vision Transformer (Dosovitskiy et al., ICLR 2021), in one readable file.

Layout and names follow timm's ``vision_transformer.py`` exactly (``patch_embed.proj``,
``cls_token``, ``pos_embed``, ``blocks.i.attn.qkv``, ``blocks.i.mlp.fc1``, ``norm``, ``head``), so
that pre-trained timm weights load with ``strict=True``. Like big_vision's ``vit.py``, the model
can hand back every intermediate stage in a dict, which is what the book's figures draw.

Equations refer to the ViT paper (arXiv 2010.11929, section 3.1):

    Eq. 1   z_0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos
    Eq. 2   z'_l = MSA(LN(z_{l-1})) + z_{l-1}
    Eq. 3   z_l = MLP(LN(z'_l)) + z'_l
    Eq. 4   y = LN(z_L^0)

and, for attention, to Vaswani et al. (2017): Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V.

Shapes: B batch, C channels, H x W image, P patch size, N = (H/P)(W/P) patches, T = N + 1
tokens, D width, Dh = D / heads.

This module imports torch, and ``vitbook.analysis`` (itself torch-only) for the sin-cos table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from vitbook.analysis import sincos_2d
from vitbook.patches import check_divisible

__all__ = [
    "PRESETS",
    "Attention",
    "Block",
    "LoadReport",
    "Mlp",
    "PatchEmbed",
    "ViTConfig",
    "VisionTransformer",
    "load_pretrained",
    "preset",
    "scaled_dot_product",
]


def _nearest_multiples(n: int, p: int) -> tuple[int, int]:
    """The multiples of ``p`` just below and just above ``n`` (below is at least ``p``)."""
    lo = max(p, (n // p) * p)
    hi = (n // p + 1) * p
    return lo, hi


# --8<-- [start:config]
@dataclass(frozen=True, kw_only=True)
class ViTConfig:
    """Everything that determines a ViT's shape. Frozen: build a variant with ``preset(..)``
    or ``dataclasses.replace``."""

    image_size: int | tuple[int, int] = 224  # input side, or (height, width) if not square
    patch_size: int = 16  # P: each patch is P x P pixels (Conv2d kernel = stride = P)
    in_chans: int = 3  # C: colour channels of the input
    dim: int = 768  # D: width of every token (the paper's "hidden size")
    depth: int = 12  # L: number of Transformer blocks
    heads: int = 12  # attention heads per block; each head has D / heads dims
    mlp_ratio: float = 4.0  # MLP hidden width = mlp_ratio * D (the paper's "MLP size")
    num_classes: int = 1000  # K: outputs of the head; 0 means no head (features only)
    pool: Literal["cls", "mean"] = "cls"  # read out the CLS token, or average the patch tokens
    pos_embed: Literal["learned", "sincos2d", "none"] = "learned"  # kind of position table
    qkv_bias: bool = True  # bias in the fused qkv Linear (timm and the paper: yes)
    fused_attn: bool = True  # use F.scaled_dot_product_attention unless weights are requested
    # Dropout, named and placed as in timm; all 0 by default (the book's runs use none). The
    # paper's JAX code has one rate for pos/proj/MLP dropout and one for the attention weights.
    pos_drop_rate: float = 0.0  # after the position table is added (timm ``pos_drop``)
    attn_drop_rate: float = 0.0  # on the attention weights, before A V (``attn.attn_drop``)
    proj_drop_rate: float = 0.0  # after attn.proj, GELU and fc2 (``proj_drop``, ``mlp.drop1/2``)
    drop_rate: float = 0.0  # on the pooled token before the head (timm ``head_drop``)
    # Pre-training head of the paper (section 3.1, "an MLP with one hidden layer"): a Linear
    # D -> representation_size and tanh before the classifier (the official code's ``pre_logits``).
    # 0 (the default, and what fine-tuning uses) means none, as in timm's current models.
    representation_size: int = 0
    # --8<-- [end:config]

    def __post_init__(self) -> None:
        h, w = self.image_hw
        p = self.patch_size
        if p < 1:
            raise ValueError(f"patch size {p} must be a positive integer; use e.g. 16")
        if h < 1 or w < 1:
            raise ValueError(f"image size {h}x{w} must be positive; use e.g. 224")
        check_divisible(h, w, p)  # names the nearest sizes that work
        if self.in_chans < 1:
            raise ValueError(f"in_chans {self.in_chans} must be at least 1; use 3 for RGB")
        if self.heads < 1:
            raise ValueError(f"heads {self.heads} must be at least 1")
        if self.dim < 1:
            raise ValueError(f"dim {self.dim} must be positive; use e.g. 768")
        if self.dim % self.heads:
            lo, hi = _nearest_multiples(self.dim, self.heads)
            raise ValueError(
                f"dim {self.dim} is not divisible by heads {self.heads}; use dim {lo} or {hi}"
            )
        if self.depth < 0:
            raise ValueError(f"depth {self.depth} must be 0 or more")
        if self.mlp_ratio <= 0 or self.mlp_dim < 1:
            raise ValueError(f"mlp_ratio {self.mlp_ratio} must give a positive width; use 4.0")
        if self.num_classes < 0:
            raise ValueError(f"num_classes {self.num_classes} must be 0 (no head) or more")
        for name in ("pos_drop_rate", "attn_drop_rate", "proj_drop_rate", "drop_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate < 1.0:
                raise ValueError(f"{name} {rate} must be in [0, 1); the paper uses 0.0 or 0.1")
        if self.representation_size < 0:
            raise ValueError(
                f"representation_size {self.representation_size} must be 0 (no pre-logits) or more"
            )
        if self.pool not in ("cls", "mean"):
            raise ValueError(f"pool {self.pool!r} is unknown; use 'cls' or 'mean'")
        if self.pos_embed not in ("learned", "sincos2d", "none"):
            raise ValueError(
                f"pos_embed {self.pos_embed!r} is unknown; use 'learned', 'sincos2d' or 'none'"
            )
        if self.pos_embed == "sincos2d" and self.dim % 4:
            lo, hi = _nearest_multiples(self.dim, 4)
            raise ValueError(
                f"pos_embed 'sincos2d' needs dim divisible by 4 (sin and cos of row and column);"
                f" dim {self.dim} is not: use dim {lo} or {hi}"
            )

    @property
    def image_hw(self) -> tuple[int, int]:
        """(H, W) in pixels."""
        s = self.image_size
        return (s, s) if isinstance(s, int) else (int(s[0]), int(s[1]))

    @property
    def grid(self) -> tuple[int, int]:
        """(H/P, W/P): patches per column and per row."""
        h, w = self.image_hw
        return h // self.patch_size, w // self.patch_size

    @property
    def num_patches(self) -> int:
        """N = (H/P)(W/P)."""
        gh, gw = self.grid
        return gh * gw

    @property
    def seq_len(self) -> int:
        """N + 1: the patch tokens plus the CLS token."""
        return self.num_patches + 1

    @property
    def head_dim(self) -> int:
        """Dh = D / heads."""
        return self.dim // self.heads

    @property
    def mlp_dim(self) -> int:
        """Hidden width of the MLP (3072 for ViT-B)."""
        return int(self.dim * self.mlp_ratio)


def _vit(dim: int, depth: int, heads: int, patch: int) -> ViTConfig:
    return ViTConfig(dim=dim, depth=depth, heads=heads, patch_size=patch)


PRESETS: dict[str, ViTConfig] = {
    # Chapter 0: a toy ViT on a 224x224 face photograph, 49 patches of 32x32, D = 8.
    "face": ViTConfig(patch_size=32, dim=8, depth=2, heads=2, num_classes=2),
    # The lesson's TinyViT8 on 8x8 digits: 4 patches of 4x4, D = 32. mlp_ratio 4 gives exactly
    # the 26,538 parameters the lesson reports (ratio 2 would give 22,410); the lesson's layout
    # (CLS token, learned positions, pre-norm, final norm, head) is the same as this one.
    "tinyvit8": ViTConfig(
        image_size=8, patch_size=4, in_chans=1, dim=32, depth=2, heads=2, num_classes=10
    ),
    # Table 1 of the paper, plus the Ti and S sizes from DeiT / timm ("/16" is the patch size).
    "vit-ti/16": _vit(192, 12, 3, 16),
    "vit-s/16": _vit(384, 12, 6, 16),
    "vit-b/16": _vit(768, 12, 12, 16),
    "vit-b/32": _vit(768, 12, 12, 32),
    "vit-l/16": _vit(1024, 24, 16, 16),
    "vit-l/32": _vit(1024, 24, 16, 32),
    "vit-h/14": _vit(1280, 32, 16, 14),
}


def preset(name: str, **overrides: Any) -> ViTConfig:
    """A named configuration, optionally with some fields changed.

    Args:
        name: one of ``PRESETS`` (case-insensitive), e.g. ``"vit-b/16"`` or ``"tinyvit8"``.
        **overrides: fields to replace, e.g. ``image_size=384`` or ``num_classes=10``.
    """
    key = name.lower()
    if key not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; use one of {', '.join(PRESETS)}")
    return dataclasses.replace(PRESETS[key], **overrides)


# --8<-- [start:scaled-dot-product]
def scaled_dot_product(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: bool = True,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Vaswani et al. 2017, Eq. 1).

    The explicit path of ``Attention.forward`` calls this function. The queries are scaled
    before the product, as in timm: (q / sqrt(d_k)) k^T equals q k^T / sqrt(d_k) up to rounding,
    and exactly when sqrt(d_k) is a power of two (d_k = 4, 16, 64, ...).

    Args:
        q: queries, shape (..., n, d_k).
        k: keys, shape (..., m, d_k).
        v: values, shape (..., m, d_v).
        scale: divide the scores by sqrt(d_k); ``False`` shows why the paper does.
        dropout_p: attention dropout on the weights before they multiply v (training only;
            the returned weights are those before dropout).

    Returns:
        (output (..., n, d_v), weights (..., n, m)); every row of weights sums to one.
    """
    if scale:
        q = q * q.shape[-1] ** -0.5  # (..., n, d_k)
    scores = q @ k.transpose(-2, -1)  # (..., n, m)
    weights = scores.softmax(dim=-1)  # (..., n, m)
    kept = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return kept @ v, weights  # (..., n, d_v), (..., n, m)
    # --8<-- [end:scaled-dot-product]


# --8<-- [start:patch-embed]
class PatchEmbed(nn.Module):
    """Cut the image into P x P patches and project each to D dims: x_p E in Eq. 1.

    A Conv2d with kernel = stride = P is exactly "flatten each patch, then one shared Linear".
    """

    def __init__(self, *, patch_size: int, in_chans: int, dim: int) -> None:
        """
        Args:
            patch_size: P.
            in_chans: C.
            dim: D.
        """
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x)  # (B, D, H/P, W/P)
        return x.flatten(2).transpose(1, 2)  # (B, N, D), patches in row-major order
        # --8<-- [end:patch-embed]


class Attention(nn.Module):
    """Multi-head self-attention, MSA in Eq. 2 (Vaswani et al. Eq. 1 per head)."""

    def __init__(
        self, *, dim: int, heads: int, qkv_bias: bool = True, fused: bool = True,
        attn_drop: float = 0.0, proj_drop: float = 0.0,
    ) -> None:  # fmt: skip
        """
        Args:
            dim: D, the token width.
            heads: number of heads; each works in Dh = D / heads dims.
            qkv_bias: bias in the qkv projection.
            fused: use ``F.scaled_dot_product_attention`` when the weights are not needed.
            attn_drop: dropout rate on the attention weights (training only).
            proj_drop: dropout rate after the output projection (training only).
        """
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim**-0.5
        self.fused = fused
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)  # U_qkv: W_Q, W_K, W_V of all heads
        self.attn_drop = nn.Dropout(attn_drop)  # no parameters: the state dict is unchanged
        self.proj = nn.Linear(dim, dim)  # U_msa (W_O): mixes the heads' outputs
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(
        self, x: torch.Tensor, *, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend: each token gathers the values of the tokens its query matches.

        Args:
            x: tokens (B, T, D).
            return_weights: take the explicit path and return the attention weights.

        Returns:
            (output (B, T, D), weights (B, heads, T, T) or None on the fast path).
        """
        B, T, D = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.heads, self.head_dim)  # (B, T, 3, heads, Dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, heads, T, Dh)
        p = self.attn_drop.p if self.training else 0.0
        if self.fused and not return_weights:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)  # (B, heads, T, Dh)
            weights = None
        else:
            # --8<-- [start:attention]
            # the chapter 5 function, batched over images and heads: Eq. 5-7 per head
            out, weights = scaled_dot_product(q, k, v, dropout_p=p)  # (B,h,T,Dh), (B,h,T,T)
            # --8<-- [end:attention]
        out = out.transpose(1, 2).reshape(B, T, D)  # (B, T, heads * Dh): concatenate the heads
        return self.proj_drop(self.proj(out)), weights


# --8<-- [start:mlp]
class Mlp(nn.Module):
    """The block's MLP: two Linear layers with exact (erf) GELU between them (Eq. 3)."""

    def __init__(self, *, dim: int, hidden: int, drop: float = 0.0) -> None:
        """
        Args:
            dim: D, input and output width.
            hidden: the hidden width (4D in every ViT of the paper).
            drop: dropout rate after the GELU and after fc2 (training only).
        """
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        # Exact erf form, as in timm. The paper's JAX code calls flax's nn.gelu, whose default
        # is the tanh approximation: nn.GELU(approximate="tanh") reproduces it (Chapter 7).
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop1(self.act(self.fc1(x)))  # (B, T, hidden)
        return self.drop2(self.fc2(x))  # (B, T, D)
        # --8<-- [end:mlp]


# --8<-- [start:block]
class Block(nn.Module):
    """One pre-norm Transformer encoder block (Eq. 2-3):

    z' = MSA(LN(z)) + z,    z_out = MLP(LN(z')) + z'.
    """

    def __init__(
        self, *, dim: int, heads: int, mlp_ratio: float = 4.0, qkv_bias: bool = True,
        fused: bool = True, attn_drop: float = 0.0, proj_drop: float = 0.0,
    ) -> None:  # fmt: skip
        """
        Args:
            dim: D.
            heads: attention heads.
            mlp_ratio: MLP hidden width over D.
            qkv_bias: bias in the qkv projection.
            fused: fast attention path when weights are not requested.
            attn_drop: dropout on the attention weights.
            proj_drop: dropout after attn.proj and inside the MLP.
        """
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(
            dim=dim, heads=heads, qkv_bias=qkv_bias, fused=fused, attn_drop=attn_drop,
            proj_drop=proj_drop,
        )  # fmt: skip
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim=dim, hidden=int(dim * mlp_ratio), drop=proj_drop)

    def forward(
        self, x: torch.Tensor, *, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        a, weights = self.attn(self.norm1(x), return_weights=return_weights)
        x = x + a  # Eq. 2, (B, T, D)
        x = x + self.mlp(self.norm2(x))  # Eq. 3, (B, T, D)
        return x, weights
        # --8<-- [end:block]


class VisionTransformer(nn.Module):
    """ViT (Eq. 1-4): patch embedding, CLS token, positions, L blocks, final norm, linear head.

    ``model(x)`` returns logits (B, K); ``model(x, return_intermediates=True)`` or
    ``model.forward_intermediates(x)`` returns a dict of every stage (see there).

    With ``pool="mean"`` the final ``norm`` acts on every token and the patch tokens are then
    averaged. timm's mean-pooling models (``global_pool="avg"``) average first and normalise
    after, in ``fc_norm``, with no ``norm``: their checkpoints do not load here
    (``load_pretrained`` names the keys); only the CLS-pooled layout is timm's.
    """

    def __init__(self, *, cfg: ViTConfig) -> None:
        """
        Args:
            cfg: the configuration; see ``ViTConfig`` and ``preset``.
        """
        super().__init__()
        self.cfg = cfg
        D = cfg.dim
        self.patch_embed = PatchEmbed(patch_size=cfg.patch_size, in_chans=cfg.in_chans, dim=D)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))  # x_class in Eq. 1
        if cfg.pos_embed == "learned":
            self.pos_embed = nn.Parameter(torch.zeros(1, cfg.seq_len, D))  # E_pos in Eq. 1
        elif cfg.pos_embed == "sincos2d":
            # A fixed table, kept as a *persistent buffer* under timm's key ``pos_embed``: the
            # state dict keeps timm's layout, but it is not a parameter and is never trained.
            # The CLS token's row is zero, as in MAE.
            table = sincos_2d(*cfg.grid, D)  # (N, D)
            table = torch.cat([torch.zeros(1, D), table])[None]  # (1, N+1, D)
            self.register_buffer("pos_embed", table, persistent=True)
        else:
            self.pos_embed = None  # "none": no table at all, tokens are a bag of patches
        self.pos_drop = nn.Dropout(cfg.pos_drop_rate)
        self.blocks = nn.ModuleList(
            Block(dim=D, heads=cfg.heads, mlp_ratio=cfg.mlp_ratio, qkv_bias=cfg.qkv_bias,
                  fused=cfg.fused_attn, attn_drop=cfg.attn_drop_rate,
                  proj_drop=cfg.proj_drop_rate)
            for _ in range(cfg.depth)
        )  # fmt: skip
        self.norm = nn.LayerNorm(D, eps=1e-6)  # LN in Eq. 4
        R = cfg.representation_size
        if R > 0:  # the paper's pre-training head: hidden layer with tanh (official pre_logits)
            self.pre_logits = nn.Sequential()
            self.pre_logits.add_module("fc", nn.Linear(D, R))
            self.pre_logits.add_module("act", nn.Tanh())
        else:
            self.pre_logits = nn.Identity()
        self.head_drop = nn.Dropout(cfg.drop_rate)
        width = R if R > 0 else D
        self.head = nn.Linear(width, cfg.num_classes) if cfg.num_classes > 0 else nn.Identity()
        self._init_weights()

    # --8<-- [start:init]
    @torch.no_grad()
    def _init_weights(self) -> None:
        """All initialisation happens here, following timm's default ("") scheme:
        pos_embed trunc-normal std 0.02, cls_token normal std 1e-6, every Linear trunc-normal
        std 0.02 with zero bias; LayerNorm (1, 0) and the patch Conv2d keep PyTorch's defaults.
        As in timm, the truncation bounds are trunc_normal_'s defaults, +-2 in absolute value,
        so at std 0.02 nothing is cut: in effect a plain normal.
        The paper's JAX code (``vit_jax/models_vit.py``) initialises differently: Dense kernels
        Xavier-uniform, MLP biases normal std 1e-6, position embeddings normal std 0.02, CLS
        token zeros, classifier head zeros. timm's ``weight_init="jax"`` reproduces its Dense
        kernels and biases and its zero head, but every timm mode keeps the position table and
        class token above (timm's ``init_weights``); torchvision starts them as the JAX code
        does. Chapter 4 computes what the differences do.
        (For fine-tuning the paper zero-initialises a fresh head: ``nn.init.zeros_`` on it.)"""
        if isinstance(self.pos_embed, nn.Parameter):
            nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        # --8<-- [end:init]

    def no_weight_decay(self) -> set[str]:
        """Parameters that weight decay should leave alone (timm's list for its ViT)."""
        return {"pos_embed", "cls_token"}

    def init_kwargs(self) -> dict[str, Any]:
        """The keyword arguments that rebuild this model (how a frozen run stores it)."""
        return {"cfg": self.cfg}

    def num_params(self, *, trainable_only: bool = False) -> int:
        """Number of parameters (a fixed sin-cos table is a buffer and does not count).

        Args:
            trainable_only: count only parameters with ``requires_grad``.
        """
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def set_fused_attn(self, fused: bool) -> None:
        """Switch every block between the fused SDPA path and the explicit path; ``cfg`` says
        which (``cfg.fused_attn``), so a model built from it takes the same path."""
        self.cfg = dataclasses.replace(self.cfg, fused_attn=fused)
        for blk in self.blocks:
            blk.attn.fused = fused

    def _check_input(self, x: torch.Tensor) -> None:
        """Fail early, with the fix, instead of deep inside a torch kernel."""
        cfg = self.cfg
        if x.ndim != 4:
            raise ValueError(
                f"expected a batch of images (B, C, H, W), got shape {tuple(x.shape)};"
                f" add a batch dimension with x[None] or x.unsqueeze(0)"
            )
        C, H, W = x.shape[1:]
        if C != cfg.in_chans:
            fix = (
                "convert grayscale to RGB, e.g. x.expand(-1, 3, -1, -1)"
                if C == 1 and cfg.in_chans == 3
                else f"build the model with in_chans={C}"
            )
            raise ValueError(f"image has {C} channels but the model expects {cfg.in_chans}; {fix}")
        if (H, W) != cfg.image_hw:
            h, w = cfg.image_hw
            p = cfg.patch_size
            if H % p or W % p:
                (h_lo, h_hi), (w_lo, w_hi) = _nearest_multiples(H, p), _nearest_multiples(W, p)
                raise ValueError(
                    f"image {H}x{W} is not divisible by patch size {p}; resize to {h}x{w}"
                    f" (the model's size), or to {h_lo}x{w_lo} / {h_hi}x{w_hi} with a new config"
                )
            raise ValueError(
                f"image {H}x{W} does not match the model's {h}x{w}; resize it to {h}x{w}, or build"
                f" a config with image_size=({H}, {W}) and resample the position table with"
                f" vitbook.analysis.interpolate_pos_embed"
            )

    # --8<-- [start:vit-forward]
    def forward_intermediates(
        self, x: torch.Tensor, *, attn: bool = True, use_pos_embed: bool = True
    ) -> dict[str, Any]:
        """Run the model and keep every stage, big_vision style (Eq. 1-4).

        Args:
            x: images (B, C, H, W).
            attn: also return each block's attention weights (uses the explicit path).
            use_pos_embed: add the position table (``False`` makes the tokens a bag of patches).

        Returns:
            dict with "patches" (B, N, D), "with_cls" (B, N+1, D), "with_pos" (B, N+1, D),
            "blocks" [(B, N+1, D)] * L, "attn" [(B, heads, N+1, N+1)] * L (empty if not
            requested), "encoded" (B, N+1, D) after the final norm, "pooled" (B, D), "logits".
        """
        out: dict[str, Any] = {"blocks": [], "attn": []}
        out["patches"], out["with_cls"], z = self._embed(x, use_pos_embed)  # Eq. 1
        out["with_pos"] = z
        for blk in self.blocks:
            z, w = blk(z, return_weights=attn)  # Eq. 2-3, (B, N+1, D)
            out["blocks"].append(z)
            if attn:
                out["attn"].append(w)  # (B, heads, N+1, N+1)
        z = out["encoded"] = self.norm(z)  # Eq. 4, (B, N+1, D)
        pooled = out["pooled"] = self._pool(z)  # (B, D)
        out["logits"] = self._head(pooled)  # (B, K)
        return out
        # --8<-- [end:vit-forward]

    def forward(
        self, x: torch.Tensor, *, return_intermediates: bool = False, use_pos_embed: bool = True
    ) -> torch.Tensor | dict[str, Any]:
        """Logits (B, K), or with ``return_intermediates=True`` the dict of
        ``forward_intermediates`` (attention weights included). Same embedding and pooling as
        ``forward_intermediates``; only the intermediates are not kept.

        Args:
            x: images (B, C, H, W).
            return_intermediates: return every stage instead of the logits.
            use_pos_embed: add the position table (``False`` for the permutation test).
        """
        if return_intermediates:
            return self.forward_intermediates(x, attn=True, use_pos_embed=use_pos_embed)
        _, _, z = self._embed(x, use_pos_embed)  # (B, N+1, D)
        for blk in self.blocks:
            z, _ = blk(z)  # (B, N+1, D)
        return self._head(self._pool(self.norm(z)))  # (B, K)

    def _embed(
        self, x: torch.Tensor, use_pos_embed: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Eq. 1, after checking the input: the patch tokens (B, N, D), the same with the CLS
        token in front (B, N+1, D), and that plus the position table (B, N+1, D)."""
        self._check_input(x)
        patches = self.patch_embed(x)  # (B, N, D)
        cls = self.cls_token.expand(patches.shape[0], -1, -1)  # (B, 1, D)
        with_cls = torch.cat([cls, patches], dim=1)  # (B, N+1, D)
        z = with_cls
        if self.pos_embed is not None and use_pos_embed:
            z = z + self.pos_embed  # (B, N+1, D), Eq. 1
        return patches, with_cls, self.pos_drop(z)

    def _pool(self, z: torch.Tensor) -> torch.Tensor:
        """(B, N+1, D) -> (B, D): the CLS token, or the mean of the patch tokens."""
        return z[:, 0] if self.cfg.pool == "cls" else z[:, 1:].mean(dim=1)

    def _head(self, pooled: torch.Tensor) -> torch.Tensor:
        """(B, D) -> (B, K): dropout (timm's ``drop_rate``), the pre-training head's hidden tanh
        layer when there is one, and the classifier."""
        return self.head(self.head_drop(self.pre_logits(pooled)))


@dataclass(frozen=True)
class LoadReport:
    """What ``load_pretrained`` did: keys the model wanted but the file lacked, keys the file
    had but the model does not, and keys present in both with different shapes."""

    missing: list[str]
    unexpected: list[str]
    mismatched: list[tuple[str, tuple[int, ...], tuple[int, ...]]]  # (key, file, model)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        try:
            from safetensors.torch import load_file
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "reading .safetensors needs the safetensors package; pip install safetensors"
            ) from e
        return load_file(str(path), device="cpu")
    obj = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("state_dict", "model"):  # common wrappers around a state dict
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    if not isinstance(obj, dict):
        raise ValueError(f"{path} does not hold a state dict (found {type(obj).__name__})")
    return obj


def load_pretrained(
    model: VisionTransformer, path: str | Path, *, strict: bool = True
) -> LoadReport:
    """Load a timm-layout checkpoint (``.safetensors``, or ``.pth``/``.pt``/``.bin``) into model.

    Args:
        model: the book's ViT, with a config matching the checkpoint.
        path: the file.
        strict: raise ``ValueError`` listing every missing, unexpected or mis-shaped key;
            with ``False``, load the keys that fit and return the report.

    Returns:
        a ``LoadReport``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    sd = _read_state_dict(path)
    own = model.state_dict()
    mismatched = [
        (k, tuple(v.shape), tuple(own[k].shape))
        for k, v in sd.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    ]
    report = LoadReport(
        missing=sorted(k for k in own if k not in sd),
        unexpected=sorted(k for k in sd if k not in own),
        mismatched=mismatched,
    )
    if strict and not report.ok:
        lines = [f"checkpoint {path.name} does not fit the model:"]
        if report.missing:
            lines.append(f"  missing in the file ({len(report.missing)}): {report.missing[:8]}")
        if report.unexpected:
            lines.append(f"  not in the model ({len(report.unexpected)}): {report.unexpected[:8]}")
        for k, fs, ms in mismatched:
            lines.append(f"  {k}: file {fs} vs model {ms}")
        if any(k == "pos_embed" for k, _, _ in mismatched):
            lines.append(
                "  fix for pos_embed: resample it to the model's grid with"
                " vitbook.analysis.interpolate_pos_embed before loading"
            )
        lines.append("  fix: build the model with the checkpoint's config, or pass strict=False")
        raise ValueError("\n".join(lines))
    bad = {k for k, _, _ in mismatched}
    model.load_state_dict({k: v for k, v in sd.items() if k in own and k not in bad}, strict=False)
    return report
