"""Chapter 9 explorer: draw a digit, and Chapter 9's trained TinyViT8 classifies it in the page.

The explorer data carries the trained model's weights under its own state_dict names, its
config, and test digits with their labels; ``docs/javascripts/explorers/vit.js`` runs the
forward pass (patch embedding, CLS, positions, pre-norm blocks with exact-erf GELU, final
norm, head) in JavaScript. The static figure shows test digits with the model's answers and
the class token's attention rollout.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch

from vitbook import plot
from vitbook.analysis import attention_rollout
from vitbook.data.digits import digits_split
from vitbook.engine import ExplorerData, figure

# every name this explorer takes from the training code, in one place
from vitbook.figures.ch09_training import DIGITS_EPOCHS
from vitbook.runs import digits_run

#: Test digits sent to the page (the first of the chapter's held-out split) and drawn here.
N_EXPORT, N_DRAWN = 60, 8


def config_meta(model) -> dict:
    cfg = model.cfg
    return {
        "image_hw": list(cfg.image_hw),
        "patch_size": cfg.patch_size,
        "in_chans": cfg.in_chans,
        "dim": cfg.dim,
        "depth": cfg.depth,
        "heads": cfg.heads,
        "mlp_dim": cfg.mlp_dim,
        "num_classes": cfg.num_classes,
        "pool": cfg.pool,
        "grid": list(cfg.grid),
        "eps": model.norm.eps,
    }


def weight_arrays(model) -> dict[str, np.ndarray]:
    return {f"w:{k}": v.detach().float().numpy() for k, v in model.state_dict().items()}


@figure(chapter=9, id="draw-a-digit", size=(7.2, 2.6), trained=True, phone_size=5.2)
def draw_a_digit(rec):
    """Test digits through the trained TinyViT8: predictions and the CLS rollout."""
    # seed 0 of Chapter 9, with the book's initialisation
    model = digits_run(epochs=DIGITS_EPOCHS, seed=0, init="book")["model"].eval()
    _, _, xte, yte = digits_split(test_size=0.2, random_state=42)
    x, y = xte[:N_EXPORT], yte[:N_EXPORT]
    with torch.no_grad():
        out = model.forward_intermediates(x)
    logits = out["logits"]
    roll = attention_rollout(list(out["attn"]))  # (B, T, T)
    return {
        "model": model,
        "images": x.numpy(),
        "labels": y.numpy(),
        "logits": logits.numpy(),
        "rollout": roll[:, 0, 1:].numpy(),
    }


@draw_a_digit.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, N_DRAWN, phone_cols=4)
    probs = torch.tensor(d["logits"]).softmax(-1).numpy()
    g = d["model"].cfg.grid
    P = d["model"].cfg.patch_size
    for i, ax in enumerate(axes):
        ax.imshow(d["images"][i, 0], cmap="gray_r", vmin=0, vmax=1)
        r = d["rollout"][i].reshape(g)
        ax.imshow(np.kron(r / r.max(), np.ones((P, P))), cmap="viridis", alpha=0.35, vmin=0,
                  vmax=1)  # fmt: skip
        pred = int(probs[i].argmax())
        ok = pred == int(d["labels"][i])
        ax.set_title(f"label {int(d['labels'][i])}\nsays {pred} ({probs[i, pred]:.0%})",
                     fontsize=8, color=c["fg"] if ok else c["red"], loc="center")  # fmt: skip
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


@draw_a_digit.export
def _(d):
    model = d["model"]
    alpha = inspect.signature(attention_rollout).parameters["residual_alpha"].default
    return ExplorerData(
        meta={
            "cfg": config_meta(model),
            "classes": [str(i) for i in range(model.cfg.num_classes)],
            "rollout_alpha": alpha,
            "palette": plot.THEMES,
        },
        arrays={
            **weight_arrays(model),
            "images": d["images"].astype(np.float32),
            "labels": d["labels"].astype(np.int32),
            "viridis": viridis(),
        },
    )


def viridis() -> np.ndarray:
    import matplotlib

    rgb = matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3]
    return np.round(rgb * 255).astype(np.uint8)
