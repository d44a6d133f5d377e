"""What Chapter 9's fine-tuning experiments share: the four-shape task, its splits, and the
models they start from (a fresh CNN or ViT, or the pre-trained ViT with a new head).

Each experiment is its own module (``transfer``, ``lrsweep``, ``hires``), so that editing one
leaves the others' keys and frozen runs alone; all of them depend on this one and on the
pre-training's (``vitbook.experiments.pretrain``).
"""

from __future__ import annotations

import copy
import dataclasses
import math

import torch

from vitbook.data.shapes import FINETUNE_CLASSES, make_shapes
from vitbook.experiments.pretrain import BATCH, SHAPES_CFG
from vitbook.model import VisionTransformer
from vitbook.train import SmallCNN, cnn_width_for

# Seeds of the four-shape task's splits: each split has its own, so none overlaps another (the
# pre-training's are 1 and 2, in vitbook.experiments.pretrain; Run 5's 5 and 6, in hires).
FINETUNE_TRAIN_SEED, FINETUNE_TEST_SEED, FINETUNE_VAL_SEED = 3, 4, 7
FINETUNE_TEST = 400  # test images of the four-shape task
FINETUNE_VAL = 400  # validation images: they pick checkpoints and rates; the test set scores


def new_head(model: VisionTransformer, num_classes: int) -> VisionTransformer:
    """A copy of ``model`` with a fresh, zero-initialised head of ``num_classes`` outputs
    (the paper's fine-tuning head)."""
    m = copy.deepcopy(model)
    cfg = dataclasses.replace(m.cfg, num_classes=num_classes)
    m.cfg = cfg
    m.head = torch.nn.Linear(cfg.dim, num_classes)
    torch.nn.init.zeros_(m.head.weight)
    torch.nn.init.zeros_(m.head.bias)
    return m


def finetune_data(n_train: int):
    """The four-shape task: ``n_train`` training images, and the fixed test set."""
    train = make_shapes(n_train, classes=FINETUNE_CLASSES, seed=FINETUNE_TRAIN_SEED).tensors()
    test = make_shapes(FINETUNE_TEST, classes=FINETUNE_CLASSES, seed=FINETUNE_TEST_SEED)
    return train, test.tensors()


def finetune_val():
    """The four-shape task's validation set (it picks checkpoints, the test set scores them)."""
    return make_shapes(FINETUNE_VAL, classes=FINETUNE_CLASSES, seed=FINETUNE_VAL_SEED).tensors()


def epochs_for_steps(n_train: int, steps: int, batch: int = BATCH) -> int:
    """Epochs that give ``steps`` optimiser steps (rounded) on ``n_train`` images."""
    return max(1, round(steps / math.ceil(n_train / min(batch, n_train))))


def fresh_model(kind: str, pre: VisionTransformer) -> torch.nn.Module:
    """``"cnn"``: a SmallCNN of about the ViT's size; ``"vit_scratch"``: the ViT with new
    weights; ``"vit_head"``/``"vit_full"``: the pre-trained ViT with a zero-initialised head.
    The caller seeds torch first."""
    k = len(FINETUNE_CLASSES)
    if kind == "cnn":
        width = cnn_width_for(pre.num_params(), in_chans=3, num_classes=k)
        return SmallCNN(in_chans=3, num_classes=k, width=width)
    if kind == "vit_scratch":
        return VisionTransformer(cfg=dataclasses.replace(SHAPES_CFG, num_classes=k))
    return new_head(pre, k)
