"""Chapter 9, Run 5: the pre-trained ViT fine-tuned at 48x48 pixels, its position table
interpolated to the new grid or started afresh."""

from __future__ import annotations

import dataclasses

import torch

from vitbook.analysis import interpolate_pos_embed
from vitbook.data.shapes import PRETRAIN_CLASSES, make_shapes
from vitbook.experiments._pin import deterministic
from vitbook.experiments.pretrain import BATCH, hflip
from vitbook.model import VisionTransformer
from vitbook.train import accuracy, fit

HIRES = 48  # the side of the fine-tuning images
HIRES_TRAIN_SEED, HIRES_TEST_SEED = 5, 6  # the splits of the 48x48 task


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
