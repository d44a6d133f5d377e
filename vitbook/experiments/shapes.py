"""Chapter 9: the pre-trained small ViT (``vitbook.experiments.pretrain``) transferred to new
shapes, swept over learning rates and moved to a higher resolution.

Every function trains one configuration with one seed. Functions that start from the
pre-trained model take it as their first argument (``vitbook.runs`` passes the frozen one).
The seed sets the new weights (a fresh head, a model from scratch), the data order and the
augmentation; the data sets themselves are fixed (their own seeds below), so seeds repeat the
same experiment with different randomness in training only.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import torch

from vitbook.analysis import interpolate_pos_embed
from vitbook.data.shapes import FINETUNE_CLASSES, PRETRAIN_CLASSES, make_shapes
from vitbook.experiments._pin import deterministic
from vitbook.experiments.pretrain import (  # noqa: F401  (the pre-training's, re-exported)
    BATCH,
    PRETRAIN_TEST_SEED,
    PRETRAIN_TRAIN_SEED,
    SHAPES_CFG,
    hflip,
    pretrain,
)
from vitbook.model import VisionTransformer
from vitbook.train import SmallCNN, accuracy, cnn_width_for, fit

# Seeds of the synthetic data sets: each split has its own, so none overlaps another (the
# pre-training's are 1 and 2, in vitbook.experiments.pretrain).
FINETUNE_TRAIN_SEED, FINETUNE_TEST_SEED, FINETUNE_VAL_SEED = 3, 4, 7
HIRES_TRAIN_SEED, HIRES_TEST_SEED = 5, 6
FINETUNE_TEST = 400  # test images of the four-shape task
FINETUNE_VAL = 400  # validation images: they pick each run's best checkpoint
EVAL_STEPS = 50  # a transfer run measures its validation accuracy every this many steps
#: Optimiser steps of a transfer run: the pre-trained arms settle within a few hundred steps;
#: the arms trained from scratch get longer budgets on larger sets (their curves show whether
#: they flattened).
TRANSFER_STEPS = {"vit_head": 400, "vit_full": 400, "cnn": (400, 800, 1600),
                  "vit_scratch": (400, 800, 1600)}  # fmt: skip
TRANSFER_SIZES = (100, 400, 1600)  # training images of the four-shape task


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


def transfer_steps(arm: str, n_train: int) -> int:
    """The optimiser steps of ``arm`` on ``n_train`` images (:data:`TRANSFER_STEPS`)."""
    steps = TRANSFER_STEPS[arm]
    return steps if isinstance(steps, int) else steps[TRANSFER_SIZES.index(n_train)]


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


SWEEP_N, SWEEP_EPOCHS = 400, 8  # the learning-rate runs: 400 images, 8 epochs (56 steps)
LAYER_DECAY = 0.75  # the "layers" recipe: block i of 4 learns at lr * 0.75 ** (4 - i)


# --8<-- [start:lr-run]
def lr_run(pre: VisionTransformer, model: str, lr: float, seed: int, recipe: str = "plain") -> dict:
    """One run of the learning-rate experiments on 400 images of the four new shapes, Adam:
    the validation accuracy after every epoch, and the test accuracy at the end.

    ``model``: ``"cnn"`` or ``"vit_scratch"`` (from scratch) or ``"vit_full"`` (fine-tuning
    ``pre``). ``recipe``: ``"plain"`` (constant rate, no clipping), ``"warmup"`` (a two-epoch
    linear warm-up, then constant), ``"cosine"`` (cosine decay from the start), ``"clip"``
    (clipping the global gradient norm at 1), ``"all"`` (the three together), or ``"layers"``
    (plain, with layer-wise learning-rate decay :data:`LAYER_DECAY` on the backbone).
    """
    train, test = finetune_data(SWEEP_N)
    torch.manual_seed(seed)
    net = fresh_model(model, pre)
    warm = 2 if recipe in ("warmup", "all") else 0
    schedule = "cosine" if recipe in ("cosine", "all") else "constant"
    clip = 1.0 if recipe in ("clip", "all") else None
    layers = LAYER_DECAY if recipe == "layers" else None
    with deterministic():
        hist = fit(net, train, finetune_val(), epochs=SWEEP_EPOCHS, batch_size=BATCH, lr=lr,
                   optimizer="adam", schedule=schedule, warmup_epochs=warm, clip_norm=clip,
                   layer_decay=layers, seed=seed, desc=f"{model} lr {lr:g}")  # fmt: skip
    return {"loss": hist.train_loss, "val": hist.test_acc, "val_final": hist.final_test_acc,
            "final": accuracy(net, test), "diverged": hist.diverged,
            "seconds": hist.seconds}  # fmt: skip
    # --8<-- [end:lr-run]


HIRES = 48


def hires_data(size: int = HIRES, n_train: int = 1000, n_test: int = 400):
    """The six shapes at ``size`` pixels, objects drawn ``size / 32`` times larger."""
    scale = size / 32
    kw = dict(classes=PRETRAIN_CLASSES, size=size, min_obj=round(10 * scale),
              max_obj=round(16 * scale), strokes=3)  # fmt: skip
    return (make_shapes(n_train, seed=HIRES_TRAIN_SEED, **kw).tensors(),
            make_shapes(n_test, seed=HIRES_TEST_SEED, **kw).tensors())  # fmt: skip


def at_resolution(pre: VisionTransformer, size: int, table: str) -> VisionTransformer:
    """``pre`` at ``size`` pixels with its position table ``"interpolated"`` (bicubic, CLS row
    untouched), ``"fresh"`` (trunc-normal, std 0.02, from the current torch seed) or
    ``"zero"``. Every other weight is copied; the caller seeds torch first."""
    cfg = dataclasses.replace(pre.cfg, image_size=size)
    model = VisionTransformer(cfg=cfg)
    sd = {k: v for k, v in pre.state_dict().items() if k != "pos_embed"}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert missing == ["pos_embed"] and not unexpected, (missing, unexpected)
    with torch.no_grad():
        if table == "interpolated":
            model.pos_embed.copy_(interpolate_pos_embed(pre.pos_embed.detach(), pre.cfg.grid,
                                                        cfg.grid))  # fmt: skip
        elif table == "zero":
            model.pos_embed.zero_()
    return model


# --8<-- [start:hires-run]
def hires_run(pre: VisionTransformer, table: str, seed: int, epochs: int = 6) -> dict:
    """Fine-tune ``pre`` at 48x48 with an interpolated or a fresh position table; the test
    accuracy after every epoch (nothing is chosen by it: the last epoch is the result)."""
    train, test = hires_data()
    torch.manual_seed(seed)
    model = at_resolution(pre, HIRES, table)
    before = accuracy(model, test)  # no fine-tuning yet
    with deterministic():
        hist = fit(model, train, test, epochs=epochs, batch_size=BATCH, lr=3e-4,
                   weight_decay=0.05, schedule="cosine", warmup_epochs=0.5, clip_norm=1.0,
                   augment=hflip, seed=seed, desc=table)  # fmt: skip
    return {"before": before, "after": hist.final_test_acc, "curve": hist.test_acc,
            "epochs": hist.epochs, "seconds": hist.seconds}  # fmt: skip
    # --8<-- [end:hires-run]
