"""A seeded synthetic task where the evidence is far apart: is this symmetric part intact, or
does one side differ from its mirror partner?

Each image is a dark strip of ``rows`` x ``cols`` square cells (``cell`` pixels each) carrying
``pairs`` pairs of marks. A pair sits in one row at columns ``c`` and ``cols - 1 - c``, like
the two sides of a symmetric part: the right mark is the left one mirrored. In a *defective*
part one mark of one pair has been replaced by another shape from the same small set. Every
mark on its own is an ordinary mark, so no patch and no neighbourhood gives the defect away:
it is only visible by comparing a mark with its partner, ``pair_distance(c)`` pixels away.
"""

from __future__ import annotations

import numpy as np

__all__ = ["mirror_strips", "pair_distance", "shapes"]


def pair_distance(col: int, *, cols: int = 16, cell: int = 4) -> int:
    """Pixels between a mark in column ``col`` and its mirror partner (centre to centre)."""
    return abs(cols - 1 - 2 * col) * cell


def shapes(k: int = 8, cell: int = 4, *, seed: int = 1234) -> np.ndarray:
    """``k`` distinct random binary marks of ``cell`` x ``cell`` pixels, half of them on."""
    rng = np.random.default_rng(seed)
    out = rng.random((k, cell, cell)) < 0.5
    if cell >= 6:  # a dark border, so that neighbouring marks stay apart
        out[:, [0, -1], :] = False
        out[:, :, [0, -1]] = False
    return out


# --8<-- [start:mirror-strips]
def mirror_strips(
    n: int,
    *,
    rows: int = 1,
    cols: int = 16,
    cell: int = 4,
    pairs: int = 1,
    kinds: int = 8,
    noise: float = 0.1,
    seed: int = 0,
):
    """``n`` images of symmetric strips, about half of them with one defective mark.

    Args:
        n: number of images.
        rows, cols: cells per column and per row (``cols`` even); images are
            (rows * cell) x (cols * cell) pixels, one channel.
        cell: cell (and mark) side in pixels.
        pairs: mark pairs per image, each in its own pair of columns.
        kinds: how many different mark shapes exist.
        noise: standard deviation of the Gaussian pixel noise.
        seed: the only source of randomness (the shapes themselves are fixed).

    Returns:
        (images (n, 1, H, W) float32, labels (n,) int64 with 1 = defective,
        distance (n,) int64: pixels between the defective mark and its partner, 0 if intact).
    """
    import torch

    if cols % 2:
        raise ValueError(f"cols {cols} must be even so that the strip has two mirror halves")
    if pairs > cols // 2:
        raise ValueError(f"{pairs} pairs do not fit in {cols // 2} column pairs; use fewer")
    rng = np.random.default_rng(seed)
    marks = shapes(kinds, cell)  # (kinds, cell, cell)
    img = np.zeros((n, rows * cell, cols * cell), dtype=np.float32)
    labels = (rng.random(n) < 0.5).astype(np.int64)
    distance = np.zeros(n, dtype=np.int64)
    for i in range(n):
        chosen = rng.choice(cols // 2, size=pairs, replace=False)  # left columns of the pairs
        bad = rng.integers(pairs) if labels[i] else -1
        for j, c in enumerate(chosen):
            r = rng.integers(rows)
            left = right = rng.integers(kinds)
            if j == bad:  # one side of this pair gets another shape
                other = (left + rng.integers(1, kinds)) % kinds
                left, right = (other, right) if rng.random() < 0.5 else (left, other)
                distance[i] = pair_distance(c, cols=cols, cell=cell)
            ys = slice(r * cell, (r + 1) * cell)
            img[i, ys, c * cell : (c + 1) * cell] = marks[left]
            img[i, ys, (cols - 1 - c) * cell : (cols - c) * cell] = marks[right][:, ::-1]
    img *= rng.uniform(0.6, 1.0, size=(n, 1, 1)).astype(np.float32)  # each image its contrast
    img += noise * rng.standard_normal(img.shape).astype(np.float32)
    x = torch.from_numpy(img)[:, None]  # (n, 1, H, W)
    return x, torch.from_numpy(labels), torch.from_numpy(distance)
    # --8<-- [end:mirror-strips]
