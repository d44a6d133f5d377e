"""Chapter 9, numbers the prose and the quiz quote, computed or read from the recipe they
belong to (the training runs themselves live in ch09_training.py)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import torch
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    recall_score,
    roc_auc_score,
    roc_curve,
)

from vitbook.calc import param_breakdown
from vitbook.engine import facts
from vitbook.experiments import hires, pretrain
from vitbook.model import ViTConfig

#: The lesson this book grew from quotes TinyViT8's digits accuracy after 150 full-batch epochs
#: (REFERENCE-FACTS.md); ch09_training.py reads every run's test accuracy at that epoch
#: (``digits_acc_150``, ``lab_acc_150``) and draws it as the dotted line of ``digits-curves``.
LESSON_EPOCHS = 150


@facts(chapter=9, id="in-prose")
def in_prose(rec):
    """The lesson's epoch count, the loss of a uniform ten-class softmax (quiz 1), and how much
    larger run 5's images are than the pre-training images."""
    rec.fact("lesson_epochs", LESSON_EPOCHS)
    rec.fact("ln_ten", math.log(10), "{:.1f}")
    rec.fact("hires_scale", hires.HIRES / pretrain.SHAPES_CFG.image_size, "{:g}")
    return {"lesson_epochs": LESSON_EPOCHS}


# --- Reference points: two course implementations, as their own sources state them ----------
#
# Read 2026-12-04. d2l: d2l-ai/d2l-en at 23d7a5ae, chapter_attention-mechanisms-and-transformers/
# vision-transformer.md, section "Training": img_size 96, patch_size 16, num_hiddens 512,
# mlp_num_hiddens 2048, num_heads 8, num_blks 2, emb/blk dropout 0.1, lr 0.1, max_epochs 10,
# FashionMNIST(batch_size=128, resize=(96, 96)); its d2l/torch.py trains a Classifier with
# ``torch.optim.SGD(self.parameters(), lr=self.lr)`` (no momentum, no schedule, no warm-up),
# ``Trainer(gradient_clip_val=0)`` (no clipping) and no augmentation (Resize and ToTensor only);
# d2l's multi-head attention has no biases in its four projections (``bias=False``); the data
# set has 6,000 training and 1,000 test images in each of 10 classes, 28x28 pixels
# (chapter_linear-classification/image-classification-dataset.md, FashionMNIST(resize=(28, 28))).
# The section prints no accuracy: it plots the curves and says that on Fashion-MNIST its ViT
# does not outperform the ResNet of its CNN chapter ("Summary and Discussion").
D2L = {
    "image": 96,
    "native": 28,
    "patch": 16,
    "channels": 1,
    "dim": 512,
    "mlp": 2048,
    "heads": 8,
    "depth": 2,
    "dropout": 0.1,
    "lr": 0.1,
    "batch": 128,
    "epochs": 10,
    "classes": 10,
    "train_per_class": 6000,
    "test_per_class": 1000,
}

# UvA: phlippe/uvadlc_notebooks at 0da8037c, docs/tutorial_notebooks/tutorial15/
# Vision_Transformer.ipynb: CIFAR-10's training set split 45,000 / 5,000 (random_split, seed 42);
# training augmentation RandomHorizontalFlip and RandomResizedCrop(32, scale=(0.8, 1.0),
# ratio=(0.9, 1.1)); batch 128; ``optim.AdamW(self.parameters(), lr=3e-4)`` (PyTorch's default
# weight decay), MultiStepLR(milestones=[100, 150], gamma=0.1), max_epochs 180, the checkpoint
# with the best validation accuracy kept; no warm-up ("Since we use the Pre-LN Transformer
# version, we do not need to use a learning rate warmup stage"); dropout 0.2. Printed result:
# {'test': 0.7559000253677368, 'val': 0.7563999891281128}; its CNNs of Tutorial 5 reached about
# 90% (ch08_scaling.UVA), and its ResNet reached the ViT's best after 5 epochs (2000 iterations).
# The architecture (width 256, 8 heads, 6 blocks, MLP 512, patch 4) is Chapter 8's ``UVA``.
UVA_RECIPE = {
    "train": 45000,
    "val": 5000,
    "batch": 128,
    "lr": 3e-4,
    "epochs": 180,
    "milestones": (100, 150),
    "gamma": 0.1,
    "dropout": 0.2,
    "crop_scale": (0.8, 1.0),
    "val_acc": 0.7564,
    "test_acc": 0.7559,
    "resnet_epochs": 5,
}


def _rate(x: float) -> str:
    """A learning rate as the sources write it: 3e-4, 0.1."""
    return f"{x:g}" if x >= 0.01 else f"{x:.0e}".replace("e-0", "e-")


def d2l_config():
    """d2l's Fashion-MNIST ViT as a ``ViTConfig`` (its layout is the book's, but for the
    missing biases of its attention projections, which ``d2l_params`` subtracts)."""
    d = D2L
    return ViTConfig(image_size=d["image"], patch_size=d["patch"], in_chans=d["channels"],
                     dim=d["dim"], depth=d["depth"], heads=d["heads"],
                     mlp_ratio=d["mlp"] / d["dim"], num_classes=d["classes"],
                     qkv_bias=False)  # fmt: skip


def d2l_params() -> int:
    """Trainable parameters of d2l's ViT: the book's count without the qkv biases and without
    the output projection's bias (d2l's ``MultiHeadAttention(bias=False)``)."""
    cfg = d2l_config()
    return param_breakdown(cfg)["total"] - cfg.depth * cfg.dim


@facts(chapter=9, id="reference-points")
def reference_points(rec):
    """The recipes and results of d2l's and the UvA tutorial's ViTs, as their sources state
    them (see ``D2L`` and ``UVA_RECIPE``), with what the calculator counts for d2l's model and
    the defaults of the PyTorch optimisers they call."""
    d = D2L
    cfg = d2l_config()
    rec.fact("d2l_image", d["image"])
    rec.fact("d2l_native", d["native"])
    rec.fact("d2l_patch", d["patch"])
    rec.fact("d2l_tokens", cfg.seq_len)
    rec.fact("d2l_dim", d["dim"])
    rec.fact("d2l_mlp", d["mlp"])
    rec.fact("d2l_heads", d["heads"])
    rec.fact("d2l_depth", d["depth"])
    rec.fact("d2l_dropout", d["dropout"], "{:g}")
    rec.fact("d2l_lr", _rate(d["lr"]))
    rec.fact("d2l_batch", d["batch"])
    rec.fact("d2l_epochs", d["epochs"])
    rec.fact("d2l_classes", d["classes"])
    rec.fact("d2l_train", d["classes"] * d["train_per_class"], "{:,}")
    rec.fact("d2l_test", d["classes"] * d["test_per_class"], "{:,}")
    rec.fact("d2l_params", d2l_params(), "{:,}")
    momentum = inspect.signature(torch.optim.SGD).parameters["momentum"].default
    rec.fact("sgd_default_momentum", momentum, "{:g}")

    u = UVA_RECIPE
    rec.fact("uva_train", u["train"], "{:,}")
    rec.fact("uva_val", u["val"], "{:,}")
    rec.fact("uva_batch", u["batch"])
    rec.fact("uva_lr", _rate(u["lr"]))
    rec.fact("uva_epochs", u["epochs"])
    rec.fact("uva_milestone_1", u["milestones"][0])
    rec.fact("uva_milestone_2", u["milestones"][1])
    rec.fact("uva_gamma", u["gamma"], "{:g}")
    rec.fact("uva_dropout", u["dropout"], "{:g}")
    rec.fact("uva_crop_lo", u["crop_scale"][0], "{:.0%}")
    rec.fact("uva_val_acc", u["val_acc"], "{:.1%}")
    rec.fact("uva_test_acc_ch9", u["test_acc"], "{:.1%}")
    rec.fact("uva_resnet_epochs", u["resnet_epochs"])
    wd = inspect.signature(torch.optim.AdamW).parameters["weight_decay"].default
    rec.fact("adamw_default_wd", wd, "{:g}")
    return {"d2l_params": d2l_params(), "d2l_tokens": cfg.seq_len}


# --- Imbalance: why accuracy misleads when one class dominates --------------------------------

#: A seeded stand-in for a pain study's frames: most frames show no pain. Each frame gets a
#: score from a model that ranks pain frames higher but not by much: logits drawn from
#: N(-1, 1) for pain frames and N(-3, 1) for the others.
IMB_FRAMES = 2000
IMB_SHARE = 0.05
IMB_LOGITS = {1: -1.0, 0: -3.0}
IMB_SEED = 0
IMB_DEFAULT_CUT = 0.5  # the threshold a classifier's probabilities are usually cut at


# --8<-- [start:imbalance]
def imbalanced_frames(n: int, share: float, rng) -> tuple:
    """``n`` frames, each a pain frame (1) with probability ``share``; each with a model's
    score in (0, 1) that is higher for pain frames on average. Returns (labels, scores)."""
    y = (rng.random(n) < share).astype(int)
    mean = np.where(y == 1, IMB_LOGITS[1], IMB_LOGITS[0])
    logits = rng.normal(mean, 1.0)
    return y, 1.0 / (1.0 + np.exp(-logits))


def scores_for(y, pred, score) -> dict:
    """Accuracy, balanced accuracy (the mean of the recall of each class), ROC AUC (the chance
    that a random pain frame scores above a random other frame) and the pain frames found."""
    return {
        "acc": accuracy_score(y, pred),
        "bal": balanced_accuracy_score(y, pred),
        "auc": roc_auc_score(y, score),
        "recall": recall_score(y, pred, zero_division=0),
    }
    # --8<-- [end:imbalance]


def imbalance_example() -> dict:
    """Three classifiers on the same seeded test frames: one that always says "no pain", the
    model's scores cut at ``IMB_DEFAULT_CUT``, and the same scores cut where a separate, seeded
    validation draw has its best balanced accuracy."""
    rng = np.random.default_rng(IMB_SEED)
    y, s = imbalanced_frames(IMB_FRAMES, IMB_SHARE, rng)
    yv, sv = imbalanced_frames(IMB_FRAMES, IMB_SHARE, rng)  # validation: picks the threshold
    # every threshold at once: a frame is called "pain" when its score is >= the threshold
    fpr, tpr, thresholds = roc_curve(yv, sv)
    cut = thresholds[np.argmax((tpr + 1 - fpr) / 2)]  # the best balanced accuracy
    return {
        "n": len(y),
        "positives": int(y.sum()),
        "cut": float(cut),
        "never": scores_for(y, np.zeros_like(y), np.zeros(len(y))),
        "half": scores_for(y, (s >= IMB_DEFAULT_CUT).astype(int), s),
        "tuned": scores_for(y, (s >= cut).astype(int), s),
    }


@facts(chapter=9, id="imbalance")
def imbalance(rec):
    """Accuracy, balanced accuracy and ROC AUC of three classifiers on seeded imbalanced
    frames (``imbalance_example``)."""
    ex = imbalance_example()
    rec.fact("imb_frames", ex["n"], "{:,}")
    rec.fact("imb_positives", ex["positives"])
    rec.fact("imb_pos_share", ex["positives"] / ex["n"], "{:.1%}")
    rec.fact("imb_default_cut", IMB_DEFAULT_CUT, "{:g}")
    rec.fact("imb_cut", ex["cut"], "{:.2f}")
    for name in ("never", "half", "tuned"):
        m = ex[name]
        rec.fact(f"imb_{name}_acc", m["acc"], "{:.1%}")
        rec.fact(f"imb_{name}_bal", m["bal"], "{:.1%}")
        rec.fact(f"imb_{name}_auc", m["auc"], "{:.2f}")
        rec.fact(f"imb_{name}_recall", m["recall"], "{:.0%}")
    return ex
