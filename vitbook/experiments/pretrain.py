"""The small ViT of Chapters 9 and 10, pre-trained on the six-shape task: one function per
run, with one seed.

This module holds only the pre-training and what it uses, so that an edit to a fine-tuning
experiment (``transfer``, ``lrsweep``, ``hires``) leaves the pre-training's key, and its frozen
runs, alone. The data sets have their own seeds (below); the run's seed sets the weights, the
data order and the augmentation.
"""

from __future__ import annotations

import torch

from vitbook.data.shapes import PRETRAIN_CLASSES, make_shapes
from vitbook.experiments._pin import deterministic
from vitbook.model import VisionTransformer, ViTConfig
from vitbook.train import fit

# The small ViT of Chapters 9 and 10: 32x32 RGB, 4x4 patches (an 8x8 grid, 64 tokens + CLS).
SHAPES_CFG = ViTConfig(
    image_size=32, patch_size=4, in_chans=3, dim=64, depth=4, heads=4,
    num_classes=len(PRETRAIN_CLASSES),
)  # fmt: skip

# Seeds of the pre-training's data sets (the fine-tuning sets have theirs in shapes.py).
PRETRAIN_TRAIN_SEED, PRETRAIN_TEST_SEED = 1, 2
BATCH = 64


def hflip(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Augmentation: mirror a random half of the batch left to right."""
    flip = torch.rand(len(x), generator=gen) < 0.5
    x = x.clone()
    x[flip] = x[flip].flip(-1)
    return x


# --8<-- [start:pretrain-run]
def pretrain(n_train: int = 6000, epochs: int = 10, seed: int = 0) -> dict:
    """Pre-train the small ViT on the six-shape task (AdamW, warm-up + cosine, clipping)."""
    train = make_shapes(n_train, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TRAIN_SEED).tensors()
    test = make_shapes(1000, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TEST_SEED).tensors()
    torch.manual_seed(seed)
    model = VisionTransformer(cfg=SHAPES_CFG)
    with deterministic():
        hist = fit(
            model, train, test,
            epochs=epochs, batch_size=BATCH, lr=1e-3, optimizer="adamw", weight_decay=0.05,
            schedule="cosine", warmup_epochs=1, clip_norm=1.0, augment=hflip, seed=seed,
            desc="pre-train",
        )  # fmt: skip
    return {"model": model, "cfg": SHAPES_CFG, "history": hist, "n_train": n_train}
    # --8<-- [end:pretrain-run]
