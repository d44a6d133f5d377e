"""Geometry and inspection tools for ViTs: pure functions of tensors (torch only).

- ``interpolate_pos_embed``: resample a learned position table to a new patch grid (fine-tuning
  at a higher resolution, ViT paper section 3.2).
- ``sincos_1d`` / ``sincos_2d``: fixed sin-cos position tables (Vaswani et al.; 2D as in MAE).
- ``attention_rollout`` / ``rollout_cls_map``: Abnar & Zuidema (2020).
- ``mean_attention_distance``: ViT appendix D.7 and Fig. 7 (right).
- ``cosine_similarity_map``: ViT Fig. 7 (centre).
- ``pca``: principal components of a set of vectors (patches, filters), the book's one PCA.

Token order everywhere: ``num_prefix_tokens`` prefix tokens (the CLS token) first, then the
patches in row-major order, as the model produces them.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

__all__ = [
    "attention_rollout",
    "cosine_similarity_map",
    "interpolate_pos_embed",
    "mean_attention_distance",
    "pca",
    "rollout_cls_map",
    "sincos_1d",
    "sincos_2d",
]

Grid = int | tuple[int, int]


def _as_grid(grid: Grid, name: str) -> tuple[int, int]:
    """(gh, gw) from an int or a pair, refusing zero or negative sizes with the fix."""
    gh, gw = (grid, grid) if isinstance(grid, int) else (int(grid[0]), int(grid[1]))
    if gh < 1 or gw < 1:
        raise ValueError(
            f"{name} {gh}x{gw} must have at least one patch per side; use a positive grid such"
            f" as (24, 24) (image size / patch size)"
        )
    return gh, gw


def _check_table(length: int, grid: tuple[int, int], num_prefix_tokens: int, what: str) -> None:
    gh, gw = grid
    if length == gh * gw and num_prefix_tokens:
        raise ValueError(
            f"{what} has {length} rows, one per patch of the {gh}x{gw} grid and none for the"
            f" {num_prefix_tokens} prefix token(s); prepend a class-token row, or pass"
            f" num_prefix_tokens=0"
        )
    if length != num_prefix_tokens + gh * gw:
        n = length - num_prefix_tokens
        side = math.isqrt(max(n, 0))
        hint = f" (a {side}x{side} grid)" if side * side == n else ""
        raise ValueError(
            f"{what} has {length} tokens but grid {gh}x{gw} with {num_prefix_tokens} prefix"
            f" token(s) needs {num_prefix_tokens + gh * gw}; pass the grid the table was made"
            f" for: {n} patch positions{hint}"
        )


# --8<-- [start:interpolate]
def interpolate_pos_embed(
    pos_embed: torch.Tensor,
    old_grid: Grid,
    new_grid: Grid,
    *,
    mode: Literal["bicubic", "bilinear", "linear"] = "bicubic",
    num_prefix_tokens: int = 1,
    antialias: bool | None = None,
) -> torch.Tensor:
    """Resample a position table to a new patch grid, as when fine-tuning at a higher
    resolution (ViT section 3.2: "2D interpolation ... according to their location").

    The CLS row is copied untouched; the patch rows are laid out as an image (D, gh, gw),
    resized, and flattened back. Same grid: the input is returned unchanged.

    Args:
        pos_embed: (1, P+N, D) or (P+N, D), P = num_prefix_tokens.
        old_grid: the table's grid, int or (gh, gw).
        new_grid: the target grid, int or (gh, gw); non-square is fine.
        mode: "bicubic" (timm, DeiT) or "bilinear"/"linear" (big_vision, the original JAX code).
        num_prefix_tokens: rows before the patches (1 for the CLS token).
        antialias: low-pass when shrinking; default True for bicubic (timm), False for linear.

    Returns:
        (1, P + gh'*gw', D) or (P + gh'*gw', D), same dtype as the input.
    """
    old, new = _as_grid(old_grid, "old grid"), _as_grid(new_grid, "new grid")
    if mode not in ("bicubic", "bilinear", "linear"):
        raise ValueError(f"mode {mode!r} is unknown; use 'bicubic', 'bilinear' or 'linear'")
    table = pos_embed if pos_embed.ndim == 3 else pos_embed[None]  # (1, P+N, D)
    _check_table(table.shape[1], old, num_prefix_tokens, "position table")
    if old == new:
        return pos_embed
    prefix, patches = table[:, :num_prefix_tokens], table[:, num_prefix_tokens:]
    D = table.shape[-1]
    img = patches.reshape(1, *old, D).permute(0, 3, 1, 2)  # (1, D, gh, gw)
    torch_mode = "bilinear" if mode == "linear" else mode
    aa = (mode == "bicubic") if antialias is None else antialias
    img = F.interpolate(img.float(), size=new, mode=torch_mode, align_corners=False, antialias=aa)
    patches = img.permute(0, 2, 3, 1).reshape(1, new[0] * new[1], D)  # (1, gh'*gw', D)
    out = torch.cat([prefix, patches.to(table.dtype)], dim=1)  # (1, P + gh'*gw', D)
    return out if pos_embed.ndim == 3 else out[0]
    # --8<-- [end:interpolate]


def sincos_1d(n: int, dim: int, *, temperature: float = 10000.0) -> torch.Tensor:
    """Fixed 1D sin-cos table for positions 0..n-1 (Vaswani et al., section 3.5).

    Column i < dim/2 is sin(pos * w_i), column dim/2 + i is cos(pos * w_i), with
    w_i = 1 / temperature^(2i / dim). (Same frequencies as the Transformer paper; sines and
    cosines are concatenated, not interleaved, as in MAE and big_vision.)

    Args:
        n: number of positions.
        dim: width, even.
        temperature: the base of the geometric progression of wavelengths.

    Returns:
        (n, dim) float32.
    """
    if dim % 2:
        raise ValueError(f"sin-cos width {dim} must be even; use {dim - 1} or {dim + 1}")
    omega = 1.0 / temperature ** (torch.arange(dim // 2, dtype=torch.float64) / (dim / 2))
    angles = torch.arange(n, dtype=torch.float64)[:, None] * omega[None, :]  # (n, dim/2)
    return torch.cat([angles.sin(), angles.cos()], dim=1).float()  # (n, dim)


# --8<-- [start:sincos-2d]
def sincos_2d(h: int, w: int, dim: int, *, temperature: float = 10000.0) -> torch.Tensor:
    """Fixed 2D sin-cos table for an h x w patch grid (MAE / big_vision style).

    Half of the width encodes the row, half the column, each with ``sincos_1d``; rows of the
    result follow the patches' row-major order.

    Args:
        h: grid rows.
        w: grid columns.
        dim: width, divisible by 4.
        temperature: as in ``sincos_1d``.

    Returns:
        (h*w, dim) float32: [sin(row), cos(row), sin(col), cos(col)] blocks of dim/4.
    """
    if dim % 4:
        lo, hi = dim - dim % 4, dim - dim % 4 + 4
        raise ValueError(f"2D sin-cos width {dim} must be divisible by 4; use {lo} or {hi}")
    rows = sincos_1d(h, dim // 2, temperature=temperature)  # (h, dim/2)
    cols = sincos_1d(w, dim // 2, temperature=temperature)  # (w, dim/2)
    rows = rows[:, None, :].expand(h, w, dim // 2)  # (h, w, dim/2)
    cols = cols[None, :, :].expand(h, w, dim // 2)  # (h, w, dim/2)
    return torch.cat([rows, cols], dim=-1).reshape(h * w, dim)  # (h*w, dim)
    # --8<-- [end:sincos-2d]


# --8<-- [start:rollout]
def attention_rollout(
    attns: list[torch.Tensor] | tuple[torch.Tensor, ...], *, residual_alpha: float = 0.5
) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): how much each input token flows into each
    output token, through all layers.

    Per layer: average over heads, A = alpha I + (1 - alpha) W for the residual path,
    renormalise rows; then multiply the layers from first to last: R = A_L ... A_2 A_1.

    Args:
        attns: per layer, weights (B, heads, T, T) (or (heads, T, T)), first layer first.
        residual_alpha: weight of the identity (0.5 in the paper).

    Returns:
        (B, T, T) (or (T, T)); every row sums to one.
    """
    if len(attns) == 0:
        raise ValueError("attention_rollout needs at least one layer's attention weights")
    rollout = None
    for w in attns:
        a = w.double().mean(dim=-3)  # (B, T, T): average the heads
        eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        a = residual_alpha * eye + (1.0 - residual_alpha) * a  # the residual connection
        a = a / a.sum(dim=-1, keepdim=True)  # rows sum to one again
        rollout = a if rollout is None else a @ rollout  # (B, T, T)
    return rollout.to(attns[0].dtype)
    # --8<-- [end:rollout]


def rollout_cls_map(
    rollout: torch.Tensor, grid: Grid, *, num_prefix_tokens: int = 1
) -> torch.Tensor:
    """The CLS token's row of a rollout over the patch columns, as an image.

    Args:
        rollout: (B, T, T) or (T, T), from ``attention_rollout``.
        grid: patch grid, int or (gh, gw).
        num_prefix_tokens: tokens before the patches (CLS is token 0).

    Returns:
        (B, gh, gw) or (gh, gw): not renormalised (the CLS column's share is left out).
    """
    gh, gw = _as_grid(grid, "grid")
    _check_table(rollout.shape[-1], (gh, gw), num_prefix_tokens, "rollout")
    row = rollout[..., 0, num_prefix_tokens:]  # (B, N)
    return row.reshape(*row.shape[:-1], gh, gw)  # (B, gh, gw)


# --8<-- [start:attention-distance]
def mean_attention_distance(
    attn: torch.Tensor, grid: Grid, patch_size: int, *, num_prefix_tokens: int = 1
) -> torch.Tensor:
    """Mean attention distance per head, in pixels (ViT appendix D.7, Fig. 7 right).

    For each query patch: sum over key patches of weight x distance between the patch centres;
    then average over queries and over the batch. The CLS token is excluded as query and as key
    (it has no position), and each query's weights over the patches are renormalised to one.

    Args:
        attn: (B, heads, T, T) or (heads, T, T) attention weights of one layer.
        grid: patch grid, int or (gh, gw).
        patch_size: P, pixels per patch side (distances are in pixels).
        num_prefix_tokens: tokens before the patches.

    Returns:
        (heads,) mean distance in pixels.
    """
    gh, gw = _as_grid(grid, "grid")
    _check_table(attn.shape[-1], (gh, gw), num_prefix_tokens, "attention")
    a = attn if attn.ndim == 4 else attn[None]  # (B, heads, T, T)
    a = a[..., num_prefix_tokens:, num_prefix_tokens:].double()  # (B, heads, N, N)
    a = a / a.sum(dim=-1, keepdim=True).clamp_min(1e-12)  # rows over patches sum to one
    ys, xs = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    centres = torch.stack([ys.flatten(), xs.flatten()], dim=-1).double() * patch_size  # (N, 2)
    dist = torch.cdist(centres, centres).to(a.device)  # (N, N) pixels
    per_query = (a * dist).sum(dim=-1)  # (B, heads, N)
    return per_query.mean(dim=(0, 2)).to(attn.dtype)  # (heads,)
    # --8<-- [end:attention-distance]


def cosine_similarity_map(
    pos_embed: torch.Tensor, grid: Grid, *, num_prefix_tokens: int = 1
) -> torch.Tensor:
    """Cosine similarity of every patch's position embedding with every other's (Fig. 7 centre).

    Args:
        pos_embed: (1, P+N, D) or (P+N, D).
        grid: patch grid, int or (gh, gw).
        num_prefix_tokens: rows before the patches (dropped).

    Returns:
        (gh, gw, gh, gw): entry [i, j] is the (gh, gw) map of patch (i, j)'s similarities.
    """
    gh, gw = _as_grid(grid, "grid")
    table = pos_embed if pos_embed.ndim == 2 else pos_embed[0]  # (P+N, D)
    _check_table(table.shape[0], (gh, gw), num_prefix_tokens, "position table")
    e = F.normalize(table[num_prefix_tokens:].double(), dim=-1)  # (N, D), unit rows
    sim = e @ e.T  # (N, N)
    return sim.reshape(gh, gw, gh, gw).to(pos_embed.dtype)


# --8<-- [start:pca]
def pca(
    x: torch.Tensor, k: int | None = None, *, sign: Literal["sum"] | None = "sum"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Principal components of the rows of ``x``, computed in float64 with an SVD of the
    centred data (the right singular vectors are the components).

    Args:
        x: (N, d) vectors, one per row (flattened patches, filters, ...).
        k: how many components to keep (at most min(N, d)); ``None`` keeps them all.
        sign: ``"sum"`` flips each component so that its entries sum to a positive number;
            ``None`` keeps the SVD's sign, which is arbitrary.

    Returns:
        (components (k, d), orthonormal rows, largest variance first; mean (d,); share of the
        total variance each component explains (k,)).
    """
    x = x.double()
    mean = x.mean(dim=0)  # (d,)
    _, s, vh = torch.linalg.svd(x - mean, full_matrices=False)  # vh: (min(N, d), d)
    comps = vh[:k]
    if sign == "sum":
        comps = comps * torch.where(comps.sum(dim=1, keepdim=True) < 0, -1.0, 1.0)
    share = (s**2 / (s**2).sum())[:k]
    return comps, mean, share
    # --8<-- [end:pca]
