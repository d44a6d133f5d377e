"""Chapter 10 explorer: every attention row of the small ViT pre-trained in Chapter 9
(``vitbook.runs.pretrained_shapes_vit``) on twelve test images of the six shapes.

The page receives, for each image, every layer's and head's attention matrix, their mean over
the heads and the attention rollout through each layer (``vitbook.analysis.attention_rollout``
over the first l layers). Each row's patch columns are quantised to uint8 in steps of
``1 / LEVELS`` of the row's largest patch weight, which is sent too, and its class-token column
is sent exactly (``quantise``). The page draws the patch columns with a colour bar from zero to
their largest weight, so the steps are steps of what is drawn. ``drawn_colours`` computes the
colours the page paints, and the facts compare them with the colours of the exact weights for
every map kind. Chapter 6's ``heads`` explorer shows the same data in its second tab.

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
#: Quantisation: an attention weight w on a patch is sent as a uint8, about w / top * LEVELS,
#: where top is the largest weight of its row on a patch (sent beside it as a float32): the top
#: of the colour bar the page draws the row with. The class token's own weight is not drawn (the
#: text gives it) and is sent as a float32 of its own. An earlier edition took top over the whole
#: row, class token included: the class-token rows of rollout, whose own weight is many times
#: any patch's, then had steps as coarse as a tenth of their bar and drew a dozen colours where
#: the exact weights give dozens. Steps of 1/255 of one (an edition before that) were coarser
#: still for a nearly uniform row.
LEVELS = 255
#: The colour map the page draws the maps with has this many colours (``colormap_table``).
COLOURS = 256
#: The explorer data's parts: image k's maps go to ``attention-explorer.image-<k+1>.explorer.bin``.
PARTS = tuple(f"image-{k + 1}" for k in range(N_IMAGES))
#: The arrays of one image's part: its maps as ``quantise`` sends them.
MAPS = ("attn", "attn_top", "attn_cls", "mean", "mean_top", "mean_cls", "rollout",
        "rollout_top", "rollout_cls")  # fmt: skip


def quantise(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of weights (class token first) as the page receives them: the patch columns as
    uint8 steps of 1 / LEVELS of the row's largest patch weight, rounded to nearest (column 0
    holds 0), that largest patch weight as float32, and the class-token column as float32
    (``dequantise`` undoes it). A patch weight is off by at most half a step,
    ``top / (2 * LEVELS)``: half a step of the colour bar the page draws the row with."""
    w = np.asarray(w, dtype=np.float64)
    patches = w[..., 1:]
    top = patches.max(-1).astype(np.float32)
    q = np.zeros(w.shape, dtype=np.uint8)
    steps = np.round(patches / top.astype(np.float64)[..., None] * LEVELS)
    q[..., 1:] = np.clip(steps, 0, LEVELS).astype(np.uint8)
    return q, top, w[..., 0].astype(np.float32)


def dequantise(q: np.ndarray, top: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """The weights the page computes from ``quantise``'s steps, patch maxima and class-token
    weights, in float64."""
    out = q.astype(np.float64) * (top.astype(np.float64)[..., None] / LEVELS)
    out[..., 0] = cls
    return out


def drawn_colours(rows: np.ndarray) -> np.ndarray:
    """The colour (an index into the ``COLOURS`` of the map) the page paints each patch of each
    row with: its weight over the row's largest patch weight, the top of the row's colour bar,
    rounded to the nearest colour (``cmapColor`` in docs/javascripts/explorers/kit.js)."""
    patches = np.asarray(rows, dtype=np.float64)[..., 1:]
    hi = patches.max(-1, keepdims=True)
    t = np.divide(patches, hi, out=np.zeros_like(patches), where=hi > 0)
    return np.clip(np.round(t * (COLOURS - 1)), 0, COLOURS - 1).astype(int)


def map_kinds(attn: np.ndarray, rollout: np.ndarray, mean=None) -> dict[str, np.ndarray]:
    """Every map the page can draw, by kind, as rows of weights: one head (..., L, H, T, T),
    the mean over heads (..., L, T, T; ``attn``'s unless given), rollout (..., L, T, T); each
    of them for a patch query and for the class token's query (row 0)."""
    kinds = {"head": attn, "mean": attn.mean(-3) if mean is None else mean, "rollout": rollout}
    out = {}
    for name, rows in kinds.items():
        out[f"{name}, patch query"] = rows[..., 1:, :]
        out[f"{name}, class-token query"] = rows[..., :1, :]
    return out


def colour_errors(exact: dict[str, np.ndarray], sent: dict[str, np.ndarray]) -> dict:
    """Per map kind: the largest |drawn - exact| patch weight over the exact map's colour-bar
    top, the largest number of colours a patch is drawn away from its exact weight's colour,
    and the maps (rows) with any patch more than one colour away."""
    out = {}
    for kind, rows in exact.items():
        back = sent[kind]
        top = rows[..., 1:].max(-1)
        rel = (np.abs(back[..., 1:] - rows[..., 1:]).max(-1) / top).max()
        off = np.abs(drawn_colours(back) - drawn_colours(rows)).max(-1)
        out[kind] = {"rel": float(rel), "colours": int(off.max()), "maps": int(off.size),
                     "maps_off": int((off > 1).sum())}  # fmt: skip
    return out


def sent_maps(data: ExplorerData) -> dict[str, np.ndarray]:
    """The maps of every image as the page receives them, read from the explorer data's parts
    (``vitbook.engine.explorer.read``) and stacked in the order of the images: ``attn``
    (n, L, H, T, T) and ``rollout`` (n, L, T, T) as uint8 steps, ``attn_top`` and
    ``rollout_top`` their rows' largest patch weights, ``attn_cls`` and ``rollout_cls`` their
    class-token weights."""
    parts = [data.parts[name].arrays for name in data.meta["maps"]]
    return {name: np.stack([p[name] for p in parts]) for name in MAPS}


def relative_error(w: np.ndarray) -> float:
    """The largest |sent - exact| patch weight of ``quantise(w)``, over its row's largest patch
    weight (the top of the colour bar)."""
    w = np.asarray(w, dtype=np.float64)
    back = dequantise(*quantise(w))
    return float((np.abs(back - w)[..., 1:].max(-1) / w[..., 1:].max(-1)).max())


def sent_kinds(d: dict) -> tuple[dict, dict]:
    """Every map kind as the model computes it and as the page draws it from the sent data
    (the mean over heads is sent as a map of its own: its colour bar tops at its own largest
    patch weight, which the heads' steps do not divide)."""
    exact = map_kinds(d["attn"], d["rollout"])
    back = {k: dequantise(*quantise(exact_rows(d, k))) for k in ("attn", "mean", "rollout")}
    sent = map_kinds(back["attn"], back["rollout"], mean=back["mean"])
    return exact, sent


def exact_rows(d: dict, name: str) -> np.ndarray:
    """The rows the page receives quantised: "attn" (..., L, H, T, T), "mean" over the heads
    (..., L, T, T) and "rollout" (..., L, T, T)."""
    return d["attn"].mean(-3) if name == "mean" else d[name]


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
    # what the page draws against what the exact weights would draw, for every map kind: the
    # largest error over the map's colour-bar top, and how many colours a patch moves
    errors = colour_errors(*sent_kinds(d))
    rec.fact("explore_rel_err", max(e["rel"] for e in errors.values()), "{:.2%}", tol=0.5)
    rec.fact("explore_colour_step", 1 / COLOURS, "{:.2%}")
    rec.fact("explore_colours_off", max(e["colours"] for e in errors.values()))
    rec.fact("explore_maps", sum(e["maps"] for e in errors.values()), "{:,}")
    rec.fact("explore_maps_off", sum(e["maps_off"] for e in errors.values()), "{:,}")
    rec.fact("explore_kinds", len(errors))
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
    """Image k's part: its attention and rollout, quantised, with their rows' largest patch
    weights and their class-token weights."""
    sent = [quantise(exact_rows(d, name)[k]) for name in ("attn", "mean", "rollout")]
    return ExplorerData({}, dict(zip(MAPS, [a for q in sent for a in q], strict=True)))


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


__all__ = [
    "attention_explorer",
    "colour_errors",
    "drawn_colours",
    "explorer_attention",
    "quantise",
    "sent_maps",
]
