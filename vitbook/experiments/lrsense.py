"""Chapter 9's learning-rate sensitivity: a ViT from scratch and a CNN of the same size, each
trained at one constant Adam rate on scikit-learn's digits, a task on which both reach a
plateau within a few hundred full-batch steps on a CPU. One call: one model, one rate, one
seed; the validation curve is kept, so the sensitivity can be read at every budget up to the
last step, not only at one."""

from __future__ import annotations

import torch
from sklearn.model_selection import train_test_split

from vitbook.data.digits import digits_split
from vitbook.experiments._pin import deterministic
from vitbook.model import VisionTransformer, preset
from vitbook.train import SmallCNN, accuracy, cnn_width_for, fit

SENSE_EPOCHS = 300  # full-batch steps: the lesson's TinyViT8 has flattened by then at 3e-4
SENSE_EVERY = 10  # the validation set is measured every this many steps
#: the rates swept, half a decade apart over four decades
SENSE_RATES = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
SENSE_VAL_SEED = 0  # the split of the digits' training images into training and validation


def sense_data():
    """The digits' 80/20 split (random_state 42, as in the lesson), its training part split
    again 80/20 into training and validation: (train, val, test), each (images, labels)."""
    xtr, ytr, xte, yte = digits_split(test_size=0.2, random_state=42)
    a, b, ya, yb = train_test_split(xtr, ytr, test_size=0.2, random_state=SENSE_VAL_SEED)
    return (a, ya), (b, yb), (xte, yte)


def sense_model(model: str) -> torch.nn.Module:
    """``"vit"``: TinyViT8 (the book's initialisation); ``"cnn"``: the SmallCNN closest to it
    in parameters. The caller seeds torch first."""
    vit = VisionTransformer(cfg=preset("tinyvit8"))
    if model == "vit":
        return vit
    if model == "cnn":
        return SmallCNN(
            in_chans=1,
            num_classes=10,
            width=cnn_width_for(vit.num_params(), in_chans=1, num_classes=10),
        )
    raise ValueError(f"unknown model {model!r}; use 'vit' or 'cnn'")


# --8<-- [start:sense-run]
def sense_run(model: str, lr: float, seed: int) -> dict:
    """One model at one constant Adam rate on the digits, full-batch, no warm-up, no
    clipping, for :data:`SENSE_EPOCHS` steps: the validation accuracy every
    :data:`SENSE_EVERY` steps, and the test accuracy of the last weights."""
    train, val, test = sense_data()
    torch.manual_seed(seed)
    net = sense_model(model)
    params = sum(p.numel() for p in net.parameters())
    with deterministic():
        hist = fit(net, train, val, epochs=SENSE_EPOCHS, batch_size=None, lr=lr,
                   optimizer="adam", schedule="constant", eval_every=SENSE_EVERY, seed=seed,
                   desc=f"{model} lr {lr:g}")  # fmt: skip
    steps = [i + 1 for i, a in enumerate(hist.test_acc) if a == a]  # measured steps
    return {"val_steps": steps, "val_acc": [hist.test_acc[s - 1] for s in steps],
            "final": accuracy(net, test), "diverged": hist.diverged, "params": params,
            "seconds": hist.seconds}  # fmt: skip
    # --8<-- [end:sense-run]
