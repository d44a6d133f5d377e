"""Chapter 9's learning-rate experiments: a constant Adam rate swept for the small CNN and the
fine-tuned ViT, warm-up, cosine decay and clipping added one at a time at a rate that is too
high, and layer-wise learning-rate decay. One call: one model, one rate, one recipe, one seed."""

from __future__ import annotations

import torch

from vitbook.experiments._pin import deterministic
from vitbook.experiments.finetune import finetune_data, finetune_val, fresh_model
from vitbook.experiments.pretrain import BATCH
from vitbook.model import VisionTransformer
from vitbook.train import accuracy, fit

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
