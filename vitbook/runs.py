"""The book's training runs, cached on disk by the engine.

Each function trains something with ``vitbook.train.fit`` and returns plain, picklable results
(models on the CPU in eval mode, ``History`` objects, accuracies). ``@cached`` stores the result
under a key that covers this module's source and everything it imports, so a warm build trains
nothing and a change to the training code retrains exactly once.

Chapters 9 and 10 use all of them; Chapter 4 draws the learned position embeddings of
``pretrained_shapes_vit``.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from vitbook.analysis import interpolate_pos_embed
from vitbook.data.digits import digits_split
from vitbook.data.participants import make_participants
from vitbook.data.shapes import FINETUNE_CLASSES, PRETRAIN_CLASSES, make_shapes
from vitbook.engine import cached
from vitbook.model import VisionTransformer, ViTConfig, preset
from vitbook.train import SmallCNN, accuracy, cnn_width_for, fit

# The small ViT of Chapters 9 and 10: 32x32 RGB, 4x4 patches (an 8x8 grid, 64 tokens + CLS).
SHAPES_CFG = ViTConfig(
    image_size=32, patch_size=4, in_chans=3, dim=64, depth=4, heads=4,
    num_classes=len(PRETRAIN_CLASSES),
)  # fmt: skip

# Seeds of the synthetic data sets: each split has its own, so none overlaps another.
PRETRAIN_TRAIN_SEED, PRETRAIN_TEST_SEED = 1, 2
FINETUNE_TRAIN_SEED, FINETUNE_TEST_SEED = 3, 4
HIRES_TRAIN_SEED, HIRES_TEST_SEED = 5, 6


def hflip(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Augmentation: mirror a random half of the batch left to right."""
    flip = torch.rand(len(x), generator=gen) < 0.5
    x = x.clone()
    x[flip] = x[flip].flip(-1)
    return x


# --8<-- [start:digits-run]
@cached
def digits_tinyvit8(epochs: int = 300, seed: int = 42) -> dict:
    """TinyViT8 on scikit-learn's digits: Adam 3e-4, full-batch, 80/20 split (random_state 42)."""
    xtr, ytr, xte, yte = digits_split(test_size=0.2, random_state=42)
    torch.manual_seed(seed)
    model = VisionTransformer(cfg=preset("tinyvit8"))
    hist = fit(
        model, (xtr, ytr), (xte, yte),
        epochs=epochs, batch_size=None, lr=3e-4, optimizer="adam", seed=seed, desc="digits",
    )  # fmt: skip
    return {"model": model, "history": hist, "n_train": len(ytr), "n_test": len(yte)}
    # --8<-- [end:digits-run]


# --8<-- [start:pretrain-run]
@cached
def pretrained_shapes_vit(n_train: int = 6000, epochs: int = 10, seed: int = 0) -> dict:
    """Pre-train the small ViT on the six-shape task (AdamW, warm-up + cosine, clipping)."""
    train = make_shapes(n_train, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TRAIN_SEED).tensors()
    test = make_shapes(1000, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TEST_SEED).tensors()
    torch.manual_seed(seed)
    model = VisionTransformer(cfg=SHAPES_CFG)
    hist = fit(
        model, train, test,
        epochs=epochs, batch_size=64, lr=1e-3, optimizer="adamw", weight_decay=0.05,
        schedule="cosine", warmup_epochs=1, clip_norm=1.0, augment=hflip, seed=seed,
        desc="pre-train",
    )  # fmt: skip
    return {"model": model, "cfg": SHAPES_CFG, "history": hist, "n_train": n_train}
    # --8<-- [end:pretrain-run]


def new_head(model: VisionTransformer, num_classes: int) -> VisionTransformer:
    """A copy of ``model`` with a fresh, zero-initialised head of ``num_classes`` outputs
    (the paper's fine-tuning head)."""
    import copy

    m = copy.deepcopy(model)
    cfg = dataclasses.replace(m.cfg, num_classes=num_classes)
    m.cfg = cfg
    m.head = torch.nn.Linear(cfg.dim, num_classes)
    torch.nn.init.zeros_(m.head.weight)
    torch.nn.init.zeros_(m.head.bias)
    return m


def _finetune_data(n_train: int):
    train = make_shapes(n_train, classes=FINETUNE_CLASSES, seed=FINETUNE_TRAIN_SEED).tensors()
    test = make_shapes(400, classes=FINETUNE_CLASSES, seed=FINETUNE_TEST_SEED).tensors()
    return train, test


def _epochs_for(n_train: int, passes: int) -> int:
    """Epochs that show the model about ``passes`` images (at least 3 epochs)."""
    return max(3, round(passes / n_train))


# --8<-- [start:transfer-run]
@cached
def transfer_sweep(sizes: tuple[int, ...] = (100, 400, 1600), passes: int = 3200) -> dict:
    """On the four new shapes, at each training-set size: a SmallCNN of matched size and a ViT
    from scratch, and the pre-trained ViT fine-tuned head-only and fully. Every run sees
    about ``passes`` images."""
    pre = pretrained_shapes_vit()["model"]
    k = len(FINETUNE_CLASSES)
    width = cnn_width_for(pre.num_params(), in_chans=3, num_classes=k)
    out: dict = {"sizes": list(sizes), "cnn_width": width, "runs": {}}
    for n in sizes:
        train, test = _finetune_data(n)
        ep = _epochs_for(n, passes)
        common = dict(epochs=ep, batch_size=64, schedule="cosine", warmup_epochs=ep / 10,
                      clip_norm=1.0, augment=hflip, seed=0)  # fmt: skip
        torch.manual_seed(0)
        cnn = SmallCNN(in_chans=3, num_classes=k, width=width)
        runs = {"cnn": fit(cnn, train, test, lr=1e-3, weight_decay=0.05, desc="cnn", **common)}
        torch.manual_seed(0)
        scratch = VisionTransformer(cfg=dataclasses.replace(SHAPES_CFG, num_classes=k))
        runs["vit_scratch"] = fit(scratch, train, test, lr=1e-3, weight_decay=0.05, **common)
        head = new_head(pre, k)  # backbone frozen (lr 0), only the new head learns
        runs["vit_head"] = fit(head, train, test, lr=0.0, head_lr=1e-2, **common)
        full = new_head(pre, k)  # everything learns; the backbone ten times slower
        runs["vit_full"] = fit(full, train, test, lr=3e-4, head_lr=3e-3, weight_decay=0.05,
                               **common)  # fmt: skip
        out["runs"][n] = runs
        out["cnn_params"] = cnn.num_params()
        out["vit_params"] = scratch.num_params()
    return out
    # --8<-- [end:transfer-run]


# --8<-- [start:lr-sweep-run]
@cached
def lr_sweep(
    lrs: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1), n_train: int = 400, epochs: int = 8
) -> dict:
    """Full fine-tuning of the pre-trained ViT with plain Adam at several constant rates (no
    warm-up, no clipping), then the second-highest rate again with warm-up and clipping."""
    pre = pretrained_shapes_vit()["model"]
    train, test = _finetune_data(n_train)
    k = len(FINETUNE_CLASSES)
    plain = {}
    for lr in lrs:
        plain[lr] = fit(new_head(pre, k), train, test, epochs=epochs, batch_size=64, lr=lr,
                        optimizer="adam", seed=0, desc=f"lr {lr:g}")  # fmt: skip
    safe_lr = lrs[-2]
    safe = fit(new_head(pre, k), train, test, epochs=epochs, batch_size=64, lr=safe_lr,
               optimizer="adam", schedule="cosine", warmup_epochs=2, clip_norm=1.0, seed=0,
               desc="warm-up+clip")  # fmt: skip
    return {"plain": plain, "safe_lr": safe_lr, "safe": safe, "epochs": epochs}
    # --8<-- [end:lr-sweep-run]


# --8<-- [start:hires-run]
@cached
def higher_resolution(size: int = 48, n_train: int = 1000, epochs: int = 2) -> dict:
    """Fine-tune the pre-trained ViT on 48x48 images of the six shapes (objects drawn 1.5x
    larger): position table interpolated bicubically (CLS row untouched) vs a fresh one."""
    pre = pretrained_shapes_vit()["model"]
    scale = size / 32
    kw = dict(classes=PRETRAIN_CLASSES, size=size, min_obj=round(10 * scale),
              max_obj=round(16 * scale), strokes=3)  # fmt: skip
    train = make_shapes(n_train, seed=HIRES_TRAIN_SEED, **kw).tensors()
    test = make_shapes(400, seed=HIRES_TEST_SEED, **kw).tensors()
    cfg = dataclasses.replace(pre.cfg, image_size=size)
    out: dict = {"size": size, "old_grid": pre.cfg.grid, "new_grid": cfg.grid}
    for name in ("interpolated", "fresh"):
        torch.manual_seed(0)
        model = VisionTransformer(cfg=cfg)  # a fresh table: trunc-normal, std 0.02
        sd = {k: v for k, v in pre.state_dict().items() if k != "pos_embed"}
        if name == "interpolated":
            sd["pos_embed"] = interpolate_pos_embed(pre.pos_embed.detach(), pre.cfg.grid, cfg.grid)
        model.load_state_dict(sd, strict=False)
        before = accuracy(model, test)  # no fine-tuning yet
        hist = fit(model, train, test, epochs=epochs, batch_size=64, lr=3e-4,
                   weight_decay=0.05, schedule="cosine", warmup_epochs=0.5, clip_norm=1.0,
                   augment=hflip, seed=0, desc=name)  # fmt: skip
        out[name] = {"before": before, "history": hist, "pos_embed": model.pos_embed.detach()}
    out["interpolated_table"] = interpolate_pos_embed(pre.pos_embed.detach(), pre.cfg.grid,
                                                      cfg.grid)  # fmt: skip
    return out
    # --8<-- [end:hires-run]


# --8<-- [start:leak-run]
@cached
def participant_leak(n_people: int = 60, frames: int = 30, folds: int = 5) -> dict:
    """The same classifier scored two ways: a frame-level random K-fold split and a
    participant-level GroupKFold. The label belongs to the person, as in a study where each
    participant has one diagnosis."""
    from sklearn.model_selection import GroupKFold, KFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    d = make_participants(n_people=n_people, frames=frames, seed=0)
    clf = KNeighborsClassifier(n_neighbors=5)
    start = time.perf_counter()
    frame = cross_val_score(clf, d.x, d.y, cv=KFold(folds, shuffle=True, random_state=0))
    person = cross_val_score(clf, d.x, d.y, cv=GroupKFold(folds), groups=d.person)
    return {
        "frame_split": frame, "person_split": person,
        "n_people": n_people, "frames": frames, "folds": folds,
        "chance": float(np.bincount(d.y).max() / len(d.y)),
        "seconds": time.perf_counter() - start,
    }  # fmt: skip
    # --8<-- [end:leak-run]
