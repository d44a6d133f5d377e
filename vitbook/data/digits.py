"""scikit-learn's 8x8 handwritten digits (1,797 images), as tensors for TinyViT8."""

from __future__ import annotations

import numpy as np


def digits_split(test_size: float = 0.2, random_state: int = 42):
    """Train and test tensors: images (n, 1, 8, 8) scaled to [0, 1], labels (n,).

    The split follows the lesson the book grew from: an 80/20 split with random_state 42.
    """
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]  # (1797, 1, 8, 8), pixel values 0..16
    xtr, xte, ytr, yte = train_test_split(
        x, d.target, test_size=test_size, random_state=random_state, stratify=None
    )
    t = torch.from_numpy
    return t(xtr), t(ytr).long(), t(xte), t(yte).long()
