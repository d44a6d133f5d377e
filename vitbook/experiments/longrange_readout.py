"""Chapter 1's read-out control for the long-range task.

``vit_local`` in :mod:`vitbook.experiments.longrange` changes two things at once against the
full ViT: its attention reaches only :data:`~vitbook.experiments.longrange.LOCAL_RADIUS` cells
on either side, and it reads its answer from the mean of the patch tokens instead of the class
token. ``vit_mean``, the model this module trains, changes only the second: it is built exactly
as ``vit_local`` is (``pool="mean"``, every block's attention a ``WindowedAttention`` loaded
with the book's initial weights, the class token attending only to itself and left out of the
mean), but its window covers the whole strip, so every patch token attends to every other.
Beside the full ViT and ``vit_local`` it tells the two changes apart.

``readout_run`` trains it on the same data, with the same seeds, budgets and training call as
``longrange.longrange_run`` (``strip_run`` is that function's body with the model passed in;
this module leaves ``longrange`` as it is, so that its frozen runs keep their keys).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from vitbook.data.longrange import mirror_strips
from vitbook.experiments import longrange
from vitbook.experiments._pin import deterministic
from vitbook.model import VisionTransformer
from vitbook.train import fit


def windowed_vit(cols: int, radius: int) -> VisionTransformer:
    """The ViT of the long-range task with a mean read-out and attention limited to the patch
    tokens at most ``radius`` cells away, built as ``longrange.build("vit_local", cols)`` builds
    its model (the caller seeds torch first): with ``radius=LOCAL_RADIUS`` it is that model."""
    cfg = dataclasses.replace(longrange.task_config(cols), pool="mean")
    vit = VisionTransformer(cfg=cfg)
    for block in vit.blocks:
        attn = longrange.WindowedAttention(dim=cfg.dim, heads=cfg.heads, cols=cols, radius=radius)
        attn.load_state_dict(block.attn.state_dict())  # the book's initial weights
        block.attn = attn
    return vit


def build_mean(cols: int) -> VisionTransformer:
    """``vit_mean``: ``vit_local`` with a window that covers the whole strip of ``cols`` cells,
    so global attention among the patch tokens and the same mean read-out."""
    return windowed_vit(cols, radius=cols - 1)


def strip_run(
    make: Callable[[], torch.nn.Module],
    seed: int,
    budget: str = "plateau",
    cols: int = 16,
    warmup: int = 1,
    desc: str = "",
) -> dict:
    """``longrange.longrange_run`` with the model built by ``make()``: the same strips, seeds,
    budgets, training call and scores (the constants are read from ``longrange`` when called)."""
    task = {**longrange.TASK, "cols": cols}
    train = mirror_strips(longrange.N_TRAIN, seed=1000 + seed, **task)
    val = mirror_strips(longrange.N_VAL, seed=2000 + seed, **task)
    test = mirror_strips(longrange.N_TEST, seed=3000 + seed, **task)
    torch.manual_seed(seed)
    net = make()
    if budget == "plateau":  # long, and read at the best validation epoch
        kw = dict(epochs=longrange.MAX_EPOCHS, schedule="constant", patience=longrange.MAX_EPOCHS)
    elif budget == "short":  # the first edition's fixed budget
        kw = dict(epochs=longrange.SHORT_EPOCHS, schedule="cosine")
    else:
        raise ValueError(f"budget {budget!r} is unknown; use 'plateau' or 'short'")
    with deterministic():
        hist = fit(net, train[:2], val[:2], batch_size=longrange.BATCH, lr=longrange.LR,
                   weight_decay=0.05, warmup_epochs=warmup, seed=seed, progress=False, desc=desc,
                   **kw)  # fmt: skip
    with torch.no_grad():
        pred = net(test[0]).argmax(-1)
    return {
        "params": net.num_params(),
        "val_acc": hist.test_acc,  # per epoch: the curve the best epoch is chosen on
        "train_acc": hist.train_acc,
        "epochs": hist.epochs,
        "best_epoch": hist.best_epoch + 1,
        "test_acc": float((pred == test[1]).float().mean()),
        "hit": (pred == test[1]).numpy(),  # per test part: was it classified right?
        "flagged": (pred == 1).numpy(),  # per test part: called defective?
        "distance": test[2].numpy(),  # per test part: pixels to the partner, 0 if intact
        "seconds": hist.seconds,
    }


def readout_run(seed: int, budget: str = "plateau", cols: int = 16, warmup: int = 1) -> dict:
    """Train ``vit_mean`` on strips of ``cols`` cells with one seed, as ``longrange_run`` trains
    the other arms."""
    return strip_run(lambda: build_mean(cols), seed, budget, cols, warmup, desc="vit_mean")
