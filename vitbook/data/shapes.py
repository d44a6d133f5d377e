"""Synthetic coloured shapes: 32x32 RGB images, one object per image, its box known.

Each image is a desaturated, textured background with a few thin distractor strokes, and one
saturated object (10-16 pixels across) at a random position. The label is the object's shape.
Everything is drawn with numpy from a seed, so the data set is the same on every machine and
nothing is downloaded.

The pre-training task uses ``PRETRAIN_CLASSES``; the fine-tuning task of Chapter 9 uses
``FINETUNE_CLASSES``, shapes the pre-trained model has never seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from matplotlib.colors import hsv_to_rgb

Mask = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (u, v) in [-1, 1] -> bool mask


# --8<-- [start:shapes]
SHAPES: dict[str, Mask] = {
    # u runs left to right, v top to bottom, both from -1 to 1 across the object's box
    "disc": lambda u, v: u**2 + v**2 <= 1.0,
    "square": lambda u, v: np.maximum(abs(u), abs(v)) <= 0.8,
    "triangle": lambda u, v: (v <= 0.8) & (abs(u) <= (v + 1.0) / 1.8),
    "plus": lambda u, v: ((abs(u) <= 0.3) & (abs(v) <= 1)) | ((abs(v) <= 0.3) & (abs(u) <= 1)),
    "ring": lambda u, v: (u**2 + v**2 <= 1.0) & (u**2 + v**2 >= 0.5**2),
    "diamond": lambda u, v: abs(u) + abs(v) <= 1.0,
    # shapes kept for the fine-tuning task
    "x-cross": lambda u, v: (abs(u - v) <= 0.4) | (abs(u + v) <= 0.4),
    "frame": lambda u, v: (
        (np.maximum(abs(u), abs(v)) <= 0.85) & (np.maximum(abs(u), abs(v)) >= 0.5)
    ),
    "half-disc": lambda u, v: (u**2 + v**2 <= 1.0) & (v >= 0),
    "bar": lambda u, v: (abs(u) <= 1.0) & (abs(v) <= 0.35),
}
PRETRAIN_CLASSES = ("disc", "square", "triangle", "plus", "ring", "diamond")
FINETUNE_CLASSES = ("x-cross", "frame", "half-disc", "bar")
# --8<-- [end:shapes]

MEAN, STD = 0.5, 0.25  # inputs are normalised as (x - MEAN) / STD


@dataclass
class ShapeSet:
    """Images (n, 3, S, S) float32 in [0, 1], labels (n,), boxes (n, 4) as x0, y0, x1, y1 in
    pixels (half-open), and the class names."""

    images: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray
    classes: tuple[str, ...]

    def tensors(self):
        """(normalised images, labels) as torch tensors, ready for ``vitbook.train.fit``."""
        import torch

        x = torch.from_numpy((self.images - MEAN) / STD).float()
        return x, torch.from_numpy(self.labels).long()

    def __len__(self) -> int:
        return len(self.labels)


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """A desaturated texture: a few random low-frequency waves, lightly tinted, plus noise."""
    yy, xx = np.mgrid[0:size, 0:size] / size
    tex = np.zeros((size, size))
    for _ in range(3):
        fx, fy = rng.uniform(-4, 4, 2)
        tex += np.sin(2 * np.pi * (fx * xx + fy * yy) + rng.uniform(0, 2 * np.pi))
    tex = 0.45 + 0.12 * tex / 3 + 0.04 * rng.standard_normal((size, size))
    tint = 1 + rng.uniform(-0.08, 0.08, 3)  # a slight colour cast, far from saturated
    return np.clip(tex[..., None] * tint, 0, 1)


def _strokes(rng: np.random.Generator, img: np.ndarray, n: int) -> None:
    """Draw ``n`` thin grey straight strokes in place (distractors with edges but no colour)."""
    size = img.shape[0]
    for _ in range(n):
        x0, y0, x1, y1 = rng.uniform(0, size, 4)
        t = np.linspace(0, 1, 2 * size)
        xs = np.clip((x0 + t * (x1 - x0)).astype(int), 0, size - 1)
        ys = np.clip((y0 + t * (y1 - y0)).astype(int), 0, size - 1)
        img[ys, xs] = rng.uniform(0.1, 0.9)


# --8<-- [start:make-shapes]
def make_shapes(
    n: int,
    *,
    classes: tuple[str, ...] = PRETRAIN_CLASSES,
    size: int = 32,
    min_obj: int = 10,
    max_obj: int = 16,
    strokes: int = 3,
    seed: int = 0,
) -> ShapeSet:
    """Draw ``n`` images, classes balanced in random order.

    Args:
        n: number of images.
        classes: shape names from ``SHAPES``; the label is the index in this tuple.
        size: image side in pixels.
        min_obj, max_obj: range of the object's side in pixels.
        strokes: distractor strokes per image.
        seed: everything follows from it.
    """
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % len(classes))
    images = np.zeros((n, size, size, 3))
    boxes = np.zeros((n, 4), dtype=np.int64)
    yy, xx = np.mgrid[0:size, 0:size] + 0.5  # pixel centres
    for i, label in enumerate(labels):
        img = _background(rng, size)
        _strokes(rng, img, strokes)
        side = rng.uniform(min_obj, max_obj)
        x0, y0 = rng.uniform(0, size - side, 2)  # the box lies inside the image
        u = (xx - x0) / side * 2 - 1  # -1..1 across the box
        v = (yy - y0) / side * 2 - 1
        inside = (abs(u) <= 1) & (abs(v) <= 1)  # never draw outside the box
        mask = SHAPES[classes[label]](u, v) & inside
        colour = hsv_to_rgb([rng.uniform(), rng.uniform(0.8, 1.0), rng.uniform(0.75, 1.0)])
        img[mask] = colour
        images[i] = img
        boxes[i] = [int(x0), int(y0), int(np.ceil(x0 + side)), int(np.ceil(y0 + side))]
    images = images.transpose(0, 3, 1, 2).astype(np.float32)  # (n, 3, size, size)
    return ShapeSet(images, labels.astype(np.int64), boxes, tuple(classes))
    # --8<-- [end:make-shapes]
