"""Chapter 9, Run 4: the small CNN, the ViT from scratch and the pre-trained ViT (head only or
fully fine-tuned) on 100 to 1,600 images of four new shapes, each read at its best validation
checkpoint. One function call trains one arm on one data size with one seed; the seed sets the
new weights, the data order and the augmentation (the data sets have their own seeds)."""

from __future__ import annotations

import math

import torch

from vitbook.experiments._pin import deterministic
from vitbook.experiments.finetune import epochs_for_steps, finetune_data, finetune_val, fresh_model
from vitbook.experiments.pretrain import BATCH, hflip
from vitbook.model import VisionTransformer
from vitbook.train import accuracy, fit

EVAL_STEPS = 50  # a transfer run measures its validation accuracy every this many steps
#: Optimiser steps of a transfer run: every ViT arm gets longer budgets on larger sets; the
#: CNN settles within two hundred steps at every size (the curves show where every run
#: flattened, and each is read at its best validation checkpoint).
TRANSFER_STEPS = {"vit_head": (400, 800, 1600), "vit_full": (400, 800, 1600), "cnn": 400,
                  "vit_scratch": (400, 800, 1600)}  # fmt: skip
TRANSFER_SIZES = (100, 400, 1600)  # training images of the four-shape task


def transfer_steps(arm: str, n_train: int) -> int:
    """The optimiser steps of ``arm`` on ``n_train`` images (:data:`TRANSFER_STEPS`)."""
    steps = TRANSFER_STEPS[arm]
    return steps if isinstance(steps, int) else steps[TRANSFER_SIZES.index(n_train)]


# --8<-- [start:transfer-run]
def transfer_run(pre: VisionTransformer, n_train: int, arm: str, seed: int) -> dict:
    """One arm on ``n_train`` images of the four new shapes, for its budget of steps
    (:func:`transfer_steps`), at a constant rate after a short warm-up: ``"cnn"`` and
    ``"vit_scratch"`` from scratch (AdamW 1e-3), ``"vit_head"`` (frozen backbone, head at
    1e-2) and ``"vit_full"`` (backbone 3e-4, head 3e-3) from ``pre``. The validation set is
    measured every :data:`EVAL_STEPS` steps; the test set scores the best of those
    checkpoints."""
    train, test = finetune_data(n_train)
    val = finetune_val()
    per_epoch = math.ceil(n_train / min(BATCH, n_train))
    ep = epochs_for_steps(n_train, transfer_steps(arm, n_train))
    every = max(1, round(EVAL_STEPS / per_epoch))
    torch.manual_seed(seed)
    model = fresh_model(arm, pre)
    lrs = {"cnn": dict(lr=1e-3, weight_decay=0.05), "vit_scratch": dict(lr=1e-3, weight_decay=0.05),
           "vit_head": dict(lr=0.0, head_lr=1e-2),
           "vit_full": dict(lr=3e-4, head_lr=3e-3, weight_decay=0.05)}[arm]  # fmt: skip
    with deterministic():
        hist = fit(model, train, val, epochs=ep, batch_size=BATCH, schedule="constant",
                   warmup_epochs=max(1, ep // 20), clip_norm=1.0, augment=hflip, seed=seed,
                   eval_every=every, patience=ep, desc=arm, **lrs)  # fmt: skip
    evals = [(i + 1, a) for i, a in enumerate(hist.test_acc) if a == a]  # measured epochs
    return {
        "acc": accuracy(model, test),  # the best validation checkpoint, on the test set
        "val_steps": [e * per_epoch for e, _ in evals],
        "val_acc": [a for _, a in evals],
        "best_step": (hist.best_epoch + 1) * per_epoch,
        "steps": ep * per_epoch,
        "train_acc": hist.train_acc[-1],
        "seconds": hist.seconds,
        "params": model.num_params(),
    }


# --8<-- [end:transfer-run]
