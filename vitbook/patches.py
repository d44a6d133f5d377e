"""Cutting an image into patches and back: the geometry of ViT's input (Chapter 2).

Patches are numbered in raster order: left to right along the top row, then the next
row down, as you read a page. A patch is flattened channel by channel, ``(C, P, P)``,
which is the order in which a ``Conv2d`` weight of shape ``(D, C, P, P)`` flattens; that
is what makes the two forms of patch embedding equal (Chapter 3).
"""

from __future__ import annotations

import torch


def check_divisible(height: int, width: int, patch: int) -> tuple[int, int]:
    """The patch grid ``(rows, cols)``; ValueError naming the fix if ``patch`` does not divide.

    A strided convolution would silently drop the leftover pixels, so we refuse instead.
    """
    if patch < 1:
        raise ValueError(f"patch size {patch} must be a positive integer; use e.g. 16")
    if height % patch or width % patch:
        over = height % patch or width % patch
        side = "height" if height % patch else "width"
        lo_h, lo_w = height - height % patch, width - width % patch
        hi_h, hi_w = lo_h + patch * (height % patch > 0), lo_w + patch * (width % patch > 0)
        fix = f"{lo_h} or {hi_h}" if height == width else f"{lo_h}x{lo_w} or {hi_h}x{hi_w}"
        raise ValueError(
            f"image {height}x{width} is not divisible by patch size {patch} "
            f"({side} {height if side == 'height' else width} leaves {over} "
            f"pixel{'s' * (over != 1)} over); "
            f"resize to {fix}"
        )
    return height // patch, width // patch


# --8<-- [start:patchify]
def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """Cut images into non-overlapping patches and flatten each (ViT Eq. 1's x_p).

    Args:
        images: a batch of shape (B, C, H, W).
        patch: the patch side P; it must divide H and W.
    Returns:
        The patch sequence, shape (B, N, C*P*P) with N = HW / P^2, in raster order.
    """
    b, c, h, w = images.shape
    rows, cols = check_divisible(h, w, patch)
    x = images.reshape(b, c, rows, patch, cols, patch)  # (B, C, rows, P, cols, P)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, P, P)
    return x.reshape(b, rows * cols, c * patch * patch)  # (B, N, C*P*P)


# --8<-- [end:patchify]


def unpatchify(
    patches: torch.Tensor, patch: int, channels: int, grid: tuple[int, int]
) -> torch.Tensor:
    """Inverse of :func:`patchify`: (B, N, C*P*P) back to (B, C, H, W)."""
    b = patches.shape[0]
    rows, cols = grid
    x = patches.reshape(b, rows, cols, channels, patch, patch)  # (B, rows, cols, C, P, P)
    x = x.permute(0, 3, 1, 4, 2, 5)  # (B, C, rows, P, cols, P)
    return x.reshape(b, channels, rows * patch, cols * patch)
