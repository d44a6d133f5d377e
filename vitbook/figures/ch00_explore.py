"""Chapter 0's explorers: the face model's forward pass, and the same model on the reader's image.

``forward-pass`` exports every stage of the one forward pass Chapter 0 draws (the arrays of
``ch00_see_it.run_face_model``); ``your-image`` exports the hand-set weights themselves, so that
``docs/javascripts/explorers/ch00-your-image.js`` runs the same model in the browser.
"""

from __future__ import annotations

import numpy as np
import torch

from vitbook import plot
from vitbook.data.face import face
from vitbook.engine import figure
from vitbook.explore import explorer_data, image_u8
from vitbook.figures.ch00_see_it import CHOSEN, IMAGE, _outline, run_face_model

#: Opacity of attention drawn over the image (the figures' ``plot.attention_overlay``).
OVERLAY_ALPHA = 0.65

#: Stages of the forward-pass stepper: (kind, key, title). Token stages index ``tokens``.
STAGES = (
    ("patch", None, "the patch grid: the image cut into {g}×{g} patches of {p}×{p} pixels"),
    ("tokens", "with_cls", "patch embedding: each patch becomes {d} numbers; CLS is row 0"),
    ("tokens", "pos", "the position table (2D sin-cos; zero for CLS)"),
    ("tokens", "with_pos", "token + position = z₀, the encoder's input"),
    ("attention", 0, "block 1: attention of the selected token, both heads"),
    ("tokens", "block0", "residual stream after block 1"),
    ("attention", 1, "block 2: attention of the selected token, both heads"),
    ("tokens", "block1", "residual stream after block 2"),
    ("tokens", "encoded", "final LayerNorm; the CLS row goes to the head"),
    ("logits", None, "the head: CLS → {k} logits → softmax"),
)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().numpy()


def forward_stages(seed: int = 0) -> dict:
    """Every stage of Chapter 0's forward pass on the face, as float32 arrays."""
    model, out, _ = run_face_model(seed)
    cfg = model.cfg
    tokens = {
        "with_cls": _np(out["with_cls"][0]),
        "pos": _np(model.pos_embed[0]),
        "with_pos": _np(out["with_pos"][0]),
        "block0": _np(out["blocks"][0][0]),
        "block1": _np(out["blocks"][1][0]),
        "encoded": _np(out["encoded"][0]),
    }
    lg = out["logits"][0].double()
    return {
        "cfg": cfg,
        "tokens": tokens,
        "attn": np.stack([_np(a[0]) for a in out["attn"]]),  # (L, heads, T, T)
        "pooled": _np(out["pooled"][0]),
        "logits": _np(out["logits"][0]),
        "prob": lg.softmax(-1).float().numpy(),
        "image": face(IMAGE),
    }


@figure(chapter=0, id="forward-pass", size=(7.2, 3.0), phone_size=6.4)
def forward_pass(rec):
    """The chosen patch's row through every stage of the face model (the explorer's data)."""
    return forward_stages()


@forward_pass.draw
def _(d, v):
    c = plot.colors(v)
    g, p = d["cfg"].grid[0], d["cfg"].patch_size
    fig, (a1, a2) = plot.subplots(v, 1, 2, width_ratios=[1, 2.2], phone_cols=1)
    plot.show_image(a1, d["image"])
    _outline(a1, CHOSEN, g, p, c["highlight"], lw=2.0)  # with ch00's dark halo
    a1.set_title(f"patch {CHOSEN}", fontsize=9.5, loc="center")
    keys = [k for kind, k, _ in STAGES if kind == "tokens"]
    rows = np.stack([d["tokens"][k][CHOSEN + 1] for k in keys])
    lim = float(np.abs(rows).max())
    plot.heatmap(
        a2,
        rows,
        v,
        row_labels=["embedded", "position", "z₀", "block 1", "block 2", "final norm"],
        col_labels=[str(k + 1) for k in range(rows.shape[1])],
        fmt="{:.1f}",
        cmap="RdBu_r",
        vmin=-lim,
        vmax=lim,
        fontsize=7.5,
    )
    a2.set_xlabel("feature")
    a2.set_title(f"the row of patch {CHOSEN}, stage by stage", fontsize=9.5)
    return fig


@forward_pass.export
def _(d):
    cfg = d["cfg"]
    g, p, dim = cfg.grid[0], cfg.patch_size, cfg.dim
    k = len(d["logits"])
    keys = [key for kind, key, _ in STAGES if kind == "tokens"]
    stages = []
    for kind, key, title in STAGES:
        stage = {"kind": kind, "title": title.format(g=g, p=p, d=dim, k=k)}
        if kind == "tokens":
            stage["index"] = keys.index(key)
        elif kind == "attention":
            stage["layer"] = key
        stages.append(stage)
    tokens = np.stack([d["tokens"][key] for key in keys])  # (stages, T, D)
    return explorer_data(
        {
            "image": IMAGE,
            "grid": g,
            "patch": p,
            "dim": dim,
            "heads": cfg.heads,
            "depth": cfg.depth,
            "classes": k,
            "chosen": CHOSEN,
            "stages": stages,
            # the figures' colour scale (ch00_see_it._matrix): linear within ±1, log beyond
            "symlog": {"linthresh": 1.0, "linscale": 1.0, "base": 10.0},
            "overlay_alpha": OVERLAY_ALPHA,
            "lim": float(np.abs(tokens).max()),
            "digits": 3,
        },
        {
            "image": image_u8(d["image"]),
            "tokens": tokens,
            "attn": d["attn"],
            "pooled": d["pooled"],
            "logits": d["logits"],
            "prob": d["prob"],
        },
    )


# --- your image -------------------------------------------------------------------------------


def face_model_weights(seed: int = 0) -> tuple[dict[str, np.ndarray], dict]:
    """The hand-set face model's parameters (name -> float32 array) and its configuration."""
    model, _, _ = run_face_model(seed)
    cfg = model.cfg
    weights = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    meta = {
        "image": IMAGE,
        "grid": cfg.grid[0],
        "patch": cfg.patch_size,
        "channels": cfg.in_chans,
        "dim": cfg.dim,
        "heads": cfg.heads,
        "depth": cfg.depth,
        "mlp": cfg.mlp_dim,
        "classes": cfg.num_classes,
        "eps": model.norm.eps,
        "pool": cfg.pool,
    }
    return weights, meta


@figure(chapter=0, id="your-image", size=(7.2, 2.6), phone_size=5.4)
def your_image(rec):
    """The face model's weights, and its attention and logits on the face (the fallback)."""
    weights, meta = face_model_weights()
    model, out, _ = run_face_model()
    g = meta["grid"]
    return {
        "weights": weights,
        "meta": meta,
        "image": face(IMAGE),
        "cls_attn": np.stack([_np(a[0, :, 0, 1:]) for a in out["attn"]])[-1].reshape(-1, g, g),
        "prob": out["logits"][0].double().softmax(-1).numpy(),
    }


@your_image.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 4, width_ratios=[1, 1, 1, 0.8], phone_cols=2)
    plot.show_image(axes[0], d["image"], title="your image here")
    axes[0].title.set_fontsize(9.5)
    for h, ax in enumerate(axes[1:3]):
        plot.attention_overlay(ax, d["image"], d["cls_attn"][h], alpha=OVERLAY_ALPHA)
        ax.set_title(f"block 2, head {h + 1}:\nCLS attention", fontsize=9, loc="center")
    ax = axes[3]
    ax.bar(range(len(d["prob"])), d["prob"], color=[c["orange"], c["purple"]])
    ax.set_xticks(range(len(d["prob"])), labels=[f"class {i}" for i in range(len(d["prob"]))])
    ax.set_ylim(0, 1)
    ax.set_title("softmax", fontsize=9.5)
    return fig


@your_image.export
def _(d):
    arrays = {f"w:{k}": v for k, v in d["weights"].items()}
    arrays["face"] = image_u8(d["image"])
    return explorer_data({**d["meta"], "digits": 3, "overlay_alpha": OVERLAY_ALPHA}, arrays)
