"""Chapter 1's long-range task: a small ViT and a SmallCNN of about its size on mirrored strips.

``longrange_run`` trains the models of one strip width with one seed. The data of seed ``s``
are generated with seeds ``s + 1`` (training) and ``s + 2`` (test); the model's weights and the
data order come from ``s`` too, so the seeds give independent repetitions of the experiment.
"""

from __future__ import annotations

import numpy as np
import torch

from vitbook.data.longrange import mirror_strips
from vitbook.experiments._pin import deterministic
from vitbook.model import VisionTransformer, ViTConfig
from vitbook.train import SmallCNN, cnn_width_for, fit

TASK = {"rows": 1, "cols": 16, "cell": 4, "pairs": 1}
N_TRAIN, N_TEST, EPOCHS, BATCH, LR = 4000, 1000, 30, 64, 1e-3
FAILED = 0.6  # a run whose test accuracy stays below this never left chance (50%)


def task_config(cols: int = TASK["cols"]) -> ViTConfig:
    """The small ViT of the experiment: one patch per cell, ``cols`` tokens plus CLS."""
    h, w = TASK["rows"] * TASK["cell"], cols * TASK["cell"]
    return ViTConfig(
        image_size=(h, w), patch_size=TASK["cell"], in_chans=1, dim=32, depth=2, heads=2,
        num_classes=2,
    )  # fmt: skip


def cnn_width() -> int:
    """The SmallCNN width whose parameter count is closest to the ViT's (16 columns)."""
    return cnn_width_for(VisionTransformer(cfg=task_config()).num_params(), in_chans=1,
                         num_classes=2)  # fmt: skip


# --8<-- [start:longrange-run]
def longrange_run(seed: int = 0, cols: int = 16, models: tuple[str, ...] = ("vit", "cnn")) -> dict:
    """Train each of ``models`` on the strips of ``cols`` cells with one seed, same budget."""
    task = {**TASK, "cols": cols}
    train = mirror_strips(N_TRAIN, seed=seed + 1, **task)
    test = mirror_strips(N_TEST, seed=seed + 2, **task)
    out: dict = {"seed": seed, "cols": cols, "distance": test[2].numpy()}  # 0: intact part
    for name in models:
        torch.manual_seed(seed)
        if name == "vit":
            model = VisionTransformer(cfg=task_config(cols))
        else:
            model = SmallCNN(in_chans=1, num_classes=2, width=cnn_width())
        with deterministic():
            hist = fit(model, train[:2], test[:2], epochs=EPOCHS, batch_size=BATCH, lr=LR,
                       weight_decay=0.05, schedule="cosine", warmup_epochs=1, seed=seed,
                       progress=False, desc=name)  # fmt: skip
        with torch.no_grad():
            pred = model(test[0]).argmax(-1)
        out[name] = {
            "params": model.num_params(),
            "test_acc": hist.test_acc,
            "train_acc": hist.train_acc,
            "seconds": hist.seconds,
            "hit": (pred == test[1]).numpy(),  # per test part: was it classified right?
            "flagged": (pred == 1).numpy(),  # per test part: called defective?
        }
    return out
    # --8<-- [end:longrange-run]


def scores(run: dict, name: str, far: int) -> dict:
    """One model's scores in one run: accuracy, intact parts passed, defects found (near and
    far), and whether the run failed (never left chance)."""
    r, dist = run[name], run["distance"]
    hit = r["hit"]
    near, far_ = (dist > 0) & (dist < far), dist >= far
    acc = float(hit.mean())
    return {
        "acc": acc,
        "intact": float(hit[dist == 0].mean()),  # intact parts called intact
        "defects": float(hit[dist > 0].mean()),  # defective parts flagged
        "near": float(hit[near].mean()) if near.any() else float("nan"),
        "far": float(hit[far_].mean()) if far_.any() else float("nan"),
        "failed": acc < FAILED,
        "by_distance": {int(d): float(hit[dist == d].mean()) for d in np.unique(dist) if d},
    }
