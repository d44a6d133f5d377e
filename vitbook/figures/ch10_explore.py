"""Chapter 10 explorer: every attention row of the small ViT pre-trained in Chapter 9
(``vitbook.runs.pretrained_shapes_vit``) on twelve test images of the six shapes.

The page receives, for each image, every layer's and head's attention matrix and the attention
rollout through each layer (``vitbook.analysis.attention_rollout`` over the first l layers),
all quantised to uint8 in steps of ``1 / LEVELS`` of each row's largest weight, which is
sent too (``quantise``: an entry is off by at most half a step), plus the images, their
labels and the model's predictions. The mean over heads is taken in the page from the
quantised rows. Chapter 6's ``heads`` explorer shows the same data in its second tab.

The maps travel in one file per image (the explorer data's parts, :data:`PARTS`), the images,
labels and predictions in the main file: the first view downloads only the first image's maps,
and another image's when the reader picks it (docs/javascripts/explorers/core.js, loadPart)."""

from __future__ import annotations

import inspect

import numpy as np
import torch

from vitbook import plot, runs
from vitbook.analysis import attention_rollout
from vitbook.data.shapes import PRETRAIN_CLASSES, make_shapes
from vitbook.engine import ExplorerData, figure
from vitbook.experiments.pretrain import PRETRAIN_TEST_SEED
from vitbook.explore import explorer_data, image_u8

#: Test images sent to the page: the first of the pre-training test split.
N_IMAGES = 12
#: Quantisation: an attention weight w is sent as a uint8, about w / top * LEVELS, where top is
#: the largest weight of its row (sent beside it as a float32). Steps of 1/255 of one (as an
#: earlier edition sent them) were coarser than a nearly uniform row's spread: a row of about
#: 1/64 per patch took 4 steps, and a map stretched to its own largest weight showed the rounding
#: as a pattern. Steps of its own largest weight keep every row's rounding below a colour step
#: of its map (``explore_rel_err``); uint16 steps of one would do that too at half again the
#: bytes once compressed.
LEVELS = 255
#: The explorer data's parts: image k's maps go to ``attention-explorer.image-<k+1>.explorer.bin``.
PARTS = tuple(f"image-{k + 1}" for k in range(N_IMAGES))
#: The arrays of one image's part: its maps as ``quantise`` sends them.
MAPS = ("attn", "attn_top", "rollout", "rollout_top")


def quantise(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of weights as uint8 steps of 1 / LEVELS of each row's largest weight, rounded to
    nearest, and those largest weights as float32 (``dequantise`` undoes it). A weight is off
    by at most half a step, ``top / (2 * LEVELS)``, and the largest weight of a row is exact to
    float32; a row of the page sums to one within ``T`` half steps."""
    w = np.asarray(w, dtype=np.float64)
    top = w.max(-1).astype(np.float32)
    q = np.round(w / top.astype(np.float64)[..., None] * LEVELS)
    return np.clip(q, 0, LEVELS).astype(np.uint8), top


def dequantise(q: np.ndarray, top: np.ndarray) -> np.ndarray:
    """The weights the page computes from ``quantise``'s steps and row maxima, in float64."""
    return q.astype(np.float64) * (top.astype(np.float64)[..., None] / LEVELS)


def sent_maps(data: ExplorerData) -> dict[str, np.ndarray]:
    """The maps of every image as the page receives them, read from the explorer data's parts
    (``vitbook.engine.explorer.read``) and stacked in the order of the images: ``attn``
    (n, L, H, T, T) and ``rollout`` (n, L, T, T) as uint8 steps, ``attn_top`` and
    ``rollout_top`` their rows' largest weights."""
    parts = [data.parts[name].arrays for name in data.meta["maps"]]
    return {name: np.stack([p[name] for p in parts]) for name in MAPS}


def relative_error(w: np.ndarray) -> float:
    """The largest |sent - exact| weight of ``quantise(w)``, over its row's largest weight."""
    back = dequantise(*quantise(w))
    return float((np.abs(back - w).max(-1) / np.asarray(w).max(-1)).max())


@torch.no_grad()
def explorer_attention() -> dict:
    """Images, labels, predictions, attention (n, L, H, T, T) and rollout through each layer
    (n, L, T, T), in float64, of the cached pre-trained model on the first test images."""
    run = runs.pretrained_shapes_vit()
    model = run["model"].eval()
    s = make_shapes(N_IMAGES, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TEST_SEED)
    x, y = s.tensors()
    out = model.forward_intermediates(x, attn=True)
    attns = [a.double() for a in out["attn"]]  # per layer (n, H, T, T)
    roll = [attention_rollout(attns[: l + 1]) for l in range(len(attns))]  # (n, T, T) each
    probs = out["logits"].double().softmax(-1)
    return {
        "cfg": model.cfg,
        "images": s.images.transpose(0, 2, 3, 1),  # (n, H, W, 3) in [0, 1]
        "boxes": s.boxes,
        "labels": y.numpy(),
        "preds": probs.argmax(-1).numpy(),
        "probs": probs.numpy(),
        "attn": torch.stack(attns, 1).numpy(),  # (n, L, H, T, T)
        "rollout": torch.stack(roll, 1).numpy(),  # (n, L, T, T)
    }


@figure(chapter=10, id="attention-explorer", size=(7.2, 5.0), trained=True, phone_size=9.6)
def attention_explorer(rec):
    """The twelve test images with label and prediction, and each one's class-token rollout
    through all layers (what the explorer shows first is one of these maps)."""
    d = explorer_attention()
    correct = int((d["preds"] == d["labels"]).sum())
    rec.fact("explore_images", N_IMAGES)
    rec.fact("explore_correct", correct, tol=2)
    rec.fact("explore_levels", LEVELS)
    # the largest rounding error relative to its own row's largest weight (the top of that
    # row's colour bar): below 1/256, a colour map's step, so rounding draws no pattern
    rel = max(relative_error(d[k]) for k in ("attn", "rollout"))
    rec.fact("explore_rel_err", rel, "{:.2%}", tol=0.5)
    rec.fact("explore_colour_step", 1 / 256, "{:.2%}")
    return d


@attention_explorer.draw
def _(d, v):
    c = plot.colors(v)
    n = len(d["images"])
    cols = n // plot.pick(v, 2, 4)  # on the phone: four blocks of three
    gh, gw = d["cfg"].grid
    maps = d["rollout"][:, -1, 0, 1:].reshape(n, gh, gw)  # CLS row, patch keys
    top = float(maps.max())
    fig = plot.new_figure(v)
    grid = fig.add_gridspec(2 * (-(-n // cols)), cols + 1, width_ratios=[1] * cols + [0.12])
    im = None
    for k in range(n):
        r, j = 2 * (k // cols), k % cols
        ax = fig.add_subplot(grid[r, j])
        plot.show_image(ax, d["images"][k])
        label, pred = PRETRAIN_CLASSES[d["labels"][k]], PRETRAIN_CLASSES[d["preds"][k]]
        ok = label == pred
        ax.set_title(f"{k + 1}: {label}\n(model: {pred})", fontsize=plot.pick(v, 7.5, 8),
                     loc="center", fontweight="normal",
                     color=c["fg"] if ok else c["red"])  # fmt: skip
        ax = fig.add_subplot(grid[r + 1, j])
        im = ax.imshow(maps[k], cmap="viridis", vmin=0, vmax=top, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        if j == 0:
            ax.set_ylabel("CLS\nrollout", fontsize=8)
    cax = fig.add_subplot(grid[:, cols])
    cb = fig.colorbar(im, cax=cax, label="rollout weight on the patch")
    cb.outline.set_visible(False)
    return fig


def _image_maps(d: dict, k: int) -> ExplorerData:
    """Image k's part: its attention and rollout, quantised, with their rows' largest weights."""
    attn, rollout = quantise(d["attn"][k]), quantise(d["rollout"][k])
    return ExplorerData({}, dict(zip(MAPS, (*attn, *rollout), strict=True)))


@attention_explorer.export(parts=PARTS)
def _(d):
    cfg = d["cfg"]
    alpha = inspect.signature(attention_rollout).parameters["residual_alpha"].default
    return explorer_data(
        {
            "classes": list(PRETRAIN_CLASSES),
            "labels": [int(k) for k in d["labels"]],
            "preds": [int(k) for k in d["preds"]],
            "confidence": [float(p[k]) for p, k in zip(d["probs"], d["preds"], strict=True)],
            "grid": list(cfg.grid),
            "patch": cfg.patch_size,
            "depth": cfg.depth,
            "heads": cfg.heads,
            "levels": LEVELS,
            "rollout_alpha": alpha,
            "maps": list(PARTS),  # image k's maps are in part maps[k]
        },
        {"images": image_u8(d["images"])},
        {name: _image_maps(d, k) for k, name in enumerate(PARTS)},
    )


__all__ = ["attention_explorer", "explorer_attention", "quantise", "sent_maps"]
