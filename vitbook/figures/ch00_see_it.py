"""Chapter 0, See it in action: the face through the tiny face ViT, every tensor drawn.

One forward pass of the real model (``preset("face")``) with the hand-set weights of
``vitbook.handset``; each figure draws one stage, and patch ``CHOSEN`` (the mouth) is marked in
all of them so that the reader can follow it.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib import patheffects
from matplotlib.colors import SymLogNorm
from matplotlib.patches import FancyBboxPatch, Rectangle

from vitbook import plot
from vitbook.calc import param_breakdown, shape_trace
from vitbook.data.face import face, face_tensor
from vitbook.engine import facts, figure
from vitbook.handset import HANDSET, SEEDED, handset
from vitbook.model import Mlp, VisionTransformer, preset

IMAGE = 224
CHOSEN = 24  # the mouth: row 3, column 3 of the 7x7 grid (the same patch as Chapter 2)


# --8<-- [start:run]
def run_face_model(seed: int = 0) -> tuple[VisionTransformer, dict, dict]:
    """Build the face ViT, hand-set its weights from the face, run it once, keep every stage."""
    model = VisionTransformer(cfg=preset("face")).eval()
    x = face_tensor(IMAGE)  # (1, 3, 224, 224)
    basis = handset(model, x, seed=seed)  # patch embedding = the face's own top-8 components
    with torch.no_grad():
        out = model.forward_intermediates(x, attn=True)  # every stage, attention included
    return model, out, basis
    # --8<-- [end:run]


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy()


def _outline(
    ax, idx: int, grid: int, patch: float, color: str, lw: float = 2.0, *, outside: float = 0.0
) -> None:
    """Outline patch ``idx`` of a ``grid`` x ``grid`` layout whose cells are ``patch`` wide.

    ``outside`` moves the frame out by that share of a cell, so that on small cells (a 7 x 7
    map a few millimetres wide) the line lies on the neighbours, not on the patch it marks."""
    r, c = divmod(idx, grid)
    pad = outside * patch
    # a dark halo under the colour keeps the outline visible on skin and in dark mode
    halo = [patheffects.withStroke(linewidth=lw + 1.6, foreground="black", alpha=0.8)]
    ax.add_patch(
        Rectangle(
            (c * patch - 0.5 - pad, r * patch - 0.5 - pad), patch + 2 * pad, patch + 2 * pad,
            fill=False, ec=color, lw=lw, path_effects=halo, clip_on=False,
        )
    )  # fmt: skip


TICKS = [-30, -10, -3, -1, 0, 1, 3, 10, 30]


def _matrix(
    ax,
    m: np.ndarray,
    lim: float,
    v,
    *,
    title: str,
    chosen_row: int | None,
    labels: dict[int, str],
    log: bool = True,
) -> object:
    """A tokens x features matrix on a diverging scale, the chosen row outlined.

    With ``log`` the scale is linear within +-1 and logarithmic beyond (feature 1 reaches about
    30, the position table only 1: on a linear scale the table would be invisible)."""
    c = plot.colors(v)
    norm = SymLogNorm(linthresh=1.0, linscale=1.0, vmin=-lim, vmax=lim, base=10) if log else None
    im = ax.imshow(
        m,
        cmap="RdBu_r",
        norm=norm,
        vmin=None if log else -lim,
        vmax=None if log else lim,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xticks(range(m.shape[1]), labels=[str(k + 1) for k in range(m.shape[1])], fontsize=8)
    ax.set_yticks(list(labels), labels=list(labels.values()), fontsize=8)
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title(title, fontsize=9.5)
    ax.set_xlabel("feature", fontsize=9)
    if chosen_row is not None:
        ax.add_patch(
            Rectangle(
                (-0.5, chosen_row - 0.5),
                m.shape[1],
                1,
                fill=False,
                ec=c["highlight"],
                lw=2,
                clip_on=False,
            )
        )
    return im


@figure(chapter=0, id="patches-and-basis", size=(7.2, 3.3), phone_size=6.6)
def patches_and_basis(rec):
    """The face cut into 49 patches, and the 8 patterns the patch embedding projects onto."""
    model, out, basis = run_face_model()
    cfg = model.cfg
    rec.fact("image", IMAGE)
    rec.fact("patch", cfg.patch_size)
    rec.fact("grid", cfg.grid[0])
    rec.fact("n_patches", cfg.num_patches)
    rec.fact("seq_len", cfg.seq_len)
    rec.fact("dim", cfg.dim)
    rec.fact("heads", cfg.heads)
    rec.fact("head_dim", cfg.head_dim)
    rec.fact("depth", cfg.depth)
    rec.fact("mlp_dim", cfg.mlp_dim)
    rec.fact("classes", cfg.num_classes)
    rec.fact("chosen", CHOSEN)
    rec.fact("chosen_row", CHOSEN // cfg.grid[1])
    rec.fact("chosen_col", CHOSEN % cfg.grid[1])
    rec.fact("flat_len", cfg.in_chans * cfg.patch_size**2)
    b16 = preset("vit-b/16")  # for scale: the same operations at ViT-Base/16's size
    rec.fact("b16_patch", b16.patch_size)
    rec.fact("b16_n", b16.num_patches)
    rec.fact("b16_seq", b16.seq_len)
    rec.fact("b16_dim", b16.dim)
    rec.fact("b16_heads", b16.heads)
    rec.fact("b16_head_dim", b16.head_dim)
    rec.fact("b16_depth", b16.depth)
    rec.fact("b16_mlp", b16.mlp_dim)
    rec.fact("b16_classes", b16.num_classes)
    rec.fact("b16_params", param_breakdown(b16)["total"])
    share = basis["share"]
    rec.fact("share_1", float(share[0]), "{:.0%}")
    rec.fact("share_8", float(share.sum()), "{:.0%}")
    # parameters: hand-set from the image, fixed by construction, seeded random, default
    counts = {"pca": 0, "fixed": 0, "seeded": 0, "default": 0}
    for name, p in model.named_parameters():
        if name.startswith("patch_embed"):
            counts["pca"] += p.numel()
        elif any(k in name for k in HANDSET):
            counts["fixed"] += p.numel()
        elif any(k in name for k in SEEDED):
            counts["seeded"] += p.numel()
        else:
            counts["default"] += p.numel()
    for k, n in counts.items():
        rec.fact(f"params_{k}", n)
    rec.fact("params_total", model.num_params())
    rec.fact(
        "params_handset_share", (counts["pca"] + counts["fixed"]) / model.num_params(), "{:.1%}"
    )
    P = cfg.patch_size
    comps = basis["components"].reshape(-1, 3, P, P).transpose(0, 2, 3, 1)  # (8, P, P, 3)
    return {"image": face(IMAGE), "comps": comps, "share": share, "patch": P}


@patches_and_basis.draw
def _(data, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    phone = plot.is_phone(v)
    outer = (
        fig.add_gridspec(3, 1, height_ratios=[1.3, 1, 0.2])
        if phone
        else fig.add_gridspec(1, 2, width_ratios=[1, 1.25])
    )
    ax = fig.add_subplot(outer[0])
    plot.patch_grid(ax, data["image"], data["patch"], v, numbers=True, highlight=CHOSEN)
    _outline(ax, CHOSEN, 7, 32, c["highlight"], lw=2.6)  # the same outline, with a halo
    ax.set_title("49 patches of 32×32; patch 24 marked", fontsize=10)
    right = outer[1].subgridspec(2, 4)
    lim = float(np.abs(data["comps"]).max())
    for k in range(len(data["comps"])):
        a = fig.add_subplot(right[k // 4, k % 4])
        plot.show_image(a, np.clip(0.5 + 0.5 * data["comps"][k] / lim, 0, 1))
        a.set_title(
            f"feature {k + 1}\n{data['share'][k]:.1%}",
            fontsize=8,
            loc="center",
            fontweight="normal",
            color=c["fg"],
        )
    note = fig.add_subplot(outer[2]) if phone else None  # a row of its own on the phone
    if note is not None:
        note.axis("off")
    (note or fig).text(
        1 if phone else 0.99,
        0 if phone else 0.01,
        plot.pick(
            v,
            "%: share of variance · mid-grey = weight 0\n"
            "lighter = positive, darker = negative; tint: R, G, B differ",
            "%: share of variance · mid-grey = weight 0\n"
            "lighter = positive, darker = negative\ntint: R, G, B differ",
        ),
        ha="right",
        va="bottom",
        fontsize=8,
        color=c["muted"],
    )
    return fig


@figure(chapter=0, id="feature-maps", size=(7.2, 1.5), phone_size=4.4)
def feature_maps(rec):
    """Each of the 8 features of the 49 patch tokens, laid back on the 7x7 grid."""
    model, out, _ = run_face_model()
    tokens = _np(out["patches"][0])  # (49, 8): x_i E + b for every patch i
    g = model.cfg.grid[0]
    bias = _np(model.patch_embed.proj.bias)  # (8,): b = -(mean patch) E, which centres them
    raw = tokens[CHOSEN] - bias  # x_24 E alone, without the bias
    for k in range(tokens.shape[1]):
        rec.fact(f"chosen_feature_{k + 1}", float(tokens[CHOSEN, k]), "{:.2f}")
        rec.fact(f"chosen_raw_{k + 1}", float(raw[k]), "{:.2f}")
    rec.fact("feature_1_max_patch", int(tokens[:, 0].argmax()))
    rec.fact("feature_1_min_patch", int(tokens[:, 0].argmin()))
    return {"maps": tokens.T.reshape(-1, g, g), "image": face(IMAGE)}


@feature_maps.draw
def _(data, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 9, phone_cols=3)
    maps = data["maps"]
    plot.show_image(axes[0], data["image"])
    _outline(
        axes[0], CHOSEN, maps.shape[1], IMAGE / maps.shape[1], c["highlight"], lw=1.3,
        outside=0.3,
    )  # fmt: skip
    axes[0].set_title("the face", fontsize=9, loc="center")
    for k, ax in enumerate(axes[1:]):
        lim = float(np.abs(maps[k]).max())
        ax.imshow(maps[k], cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        _outline(ax, CHOSEN, maps.shape[1], 1, c["highlight"], lw=1.3, outside=0.3)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"feature {k + 1}", fontsize=9, loc="center")
        ax.set_xlabel(f"±{lim:.1f}", fontsize=8, color=c["muted"])
    return fig


@figure(chapter=0, id="token-matrix", size=(7.2, 4.6), phone_size=8.4)
def token_matrix(rec):
    """Eq. 1 step by step: patch tokens, CLS prepended, position table, their sum z_0."""
    model, out, _ = run_face_model()
    patches = _np(out["patches"][0])  # (49, 8)
    with_cls = _np(out["with_cls"][0])  # (50, 8)
    with_pos = _np(out["with_pos"][0])  # (50, 8)
    pos = _np(model.pos_embed[0])  # (50, 8)
    rec.fact("pos_max", float(np.abs(pos).max()), "{:.0f}")
    rec.fact(
        "pos_chosen",
        [round(float(a), 2) for a in pos[CHOSEN + 1]],
        text=", ".join(f"{a:.2f}" for a in pos[CHOSEN + 1]),
    )
    rec.fact(
        "cls_vector",
        [float(a) for a in with_cls[0]],
        text="(" + ", ".join(f"{a:g}" for a in with_cls[0]) + ")",
    )
    rec.fact("token_abs_max", float(np.abs(with_pos).max()), "{:.1f}")
    return {"patches": patches, "with_cls": with_cls, "pos": pos, "with_pos": with_pos}


@token_matrix.draw
def _(d, v):
    fig, axes = plot.subplots(v, 1, 4, sharey=False, phone_cols=2)
    lim = float(np.abs(d["with_pos"]).max())
    lab49 = {0: "0", CHOSEN: str(CHOSEN), 48: "48"}
    lab50 = {0: "CLS", CHOSEN + 1: f"patch {CHOSEN}", 49: "patch 48"}
    _matrix(
        axes[0],
        d["patches"],
        lim,
        v,
        title="1. patch tokens\n(49 × 8)",
        chosen_row=CHOSEN,
        labels={k: f"patch {s}" for k, s in lab49.items()},
    )
    _matrix(
        axes[1],
        d["with_cls"],
        lim,
        v,
        title=plot.pick(v, "2. CLS prepended\n(50 × 8)", "2. + CLS\n(50 × 8)"),
        chosen_row=CHOSEN + 1,
        labels=lab50,
    )
    _matrix(
        axes[2],
        d["pos"],
        lim,
        v,
        title=plot.pick(v, "3. + position table\n(50 × 8, sin-cos)", "3. + positions\n(50 × 8)"),
        chosen_row=CHOSEN + 1,
        labels=lab50,
    )
    im = _matrix(
        axes[3],
        d["with_pos"],
        lim,
        v,
        title=plot.pick(v, "4. = z₀, the encoder\ninput (50 × 8)", "4. = z₀\n(50 × 8)"),
        chosen_row=CHOSEN + 1,
        labels=lab50,
    )
    phone = plot.is_phone(v)
    cb = fig.colorbar(
        im, ax=axes, shrink=0.9 if phone else 0.7, pad=0.02, location="bottom" if phone else "right"
    )
    cb.set_ticks(TICKS, labels=[str(t) for t in TICKS])
    cb.set_label(
        plot.pick(
            v,
            "value (one scale for all four; logarithmic beyond ±1)",
            "value (one scale for all four;\nlogarithmic beyond ±1)",
        ),
        fontsize=8,
    )
    cb.outline.set_visible(False)
    return fig


@figure(chapter=0, id="attention", size=(7.2, 4.1), phone_size=8.2)
def attention(rec):
    """Each head's attention in each block: the CLS row and the chosen patch's row, on the face."""
    model, out, _ = run_face_model()
    g = model.cfg.grid[0]
    attn = np.stack([_np(a[0]) for a in out["attn"]])  # (L, heads, 50, 50)
    rec.fact("uniform", 1 / attn.shape[-1], "{:.2f}")
    for layer in range(attn.shape[0]):
        for h in range(attn.shape[1]):
            cls_row = attn[layer, h, 0]
            tag = f"l{layer + 1}h{h + 1}"
            rec.fact(f"cls_max_{tag}", float(cls_row[1:].max()), "{:.3f}")
            rec.fact(f"cls_argmax_{tag}", int(cls_row[1:].argmax()))
            rec.fact(f"cls_on_chosen_{tag}", float(cls_row[CHOSEN + 1]), "{:.3f}")
            rec.fact(f"cls_self_{tag}", float(cls_row[0]), "{:.3f}")
    rec.fact("row_sum_err", float(np.abs(attn.sum(-1) - 1).max()), "{:.0e}", tol=1e-6)
    rec.fact("cls_low_l1h1", float(attn[0, 0, 0, 1:].min()), "{:.4f}")
    # head 1 reads LayerNormed tokens: the patch with the largest *normalised* feature 1
    with torch.no_grad():
        normed = model.blocks[0].norm1(out["with_pos"])[0]  # (50, 8)
    rec.fact("ln_feature_1_max_patch", int(normed[1:, 0].argmax()))
    return {
        "cls": attn[:, :, 0, 1:].reshape(*attn.shape[:2], g, g),
        "chosen": attn[:, :, CHOSEN + 1, 1:].reshape(*attn.shape[:2], g, g),
        "image": face(IMAGE),
    }


@attention.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 2, 4, phone_cols=2)
    for row, (key, who) in enumerate((("cls", "CLS"), ("chosen", f"patch {CHOSEN}"))):
        for layer in range(2):
            for h in range(2):
                ax = axes[row, 2 * layer + h]
                w = d[key][layer, h]
                plot.attention_overlay(ax, d["image"], w, alpha=0.65)
                _outline(ax, CHOSEN, 7, 32, c["highlight"], lw=1.8)
                if row == 0 or plot.is_phone(v):
                    ax.set_title(f"block {layer + 1}, head {h + 1}", fontsize=9.5, loc="center")
                if layer == 0 and h == 0:
                    ax.set_ylabel(f"row of {who}", fontsize=9.5)
                ax.set_xlabel(f"largest weight {w.max():.2f}", fontsize=8.5)
    return fig


@figure(chapter=0, id="residual-stream", size=(7.2, 4.4), phone_size=8.8)
def residual_stream(rec):
    """The residual stream z_0, after block 1, after block 2, and what the blocks added."""
    model, out, _ = run_face_model()
    z = [_np(out["with_pos"][0])] + [_np(b[0]) for b in out["blocks"]]  # 3 x (50, 8)
    for i in (1, 2):
        delta = np.linalg.norm(z[i] - z[i - 1], axis=1)
        rec.fact(f"delta_block{i}_chosen", float(delta[CHOSEN + 1]), "{:.2f}")
        rec.fact(f"delta_block{i}_cls", float(delta[0]), "{:.2f}")
    rec.fact("norm_chosen_z0", float(np.linalg.norm(z[0][CHOSEN + 1])), "{:.1f}")
    # how much of block 1's change is attention, how much the MLP (a seeded, untrained MLP)
    blk = model.blocks[0]
    with torch.no_grad():
        z0 = out["with_pos"]
        a, _ = blk.attn(blk.norm1(z0))
        m = blk.mlp(blk.norm2(z0 + a))
    rec.fact("attn_change_chosen", float(a[0, CHOSEN + 1].norm()), "{:.2f}")
    rec.fact("mlp_change_chosen", float(m[0, CHOSEN + 1].norm()), "{:.3f}")
    rec.fact("mlp_change_max", float(m[0].norm(dim=-1).max()), "{:.3f}")
    return {"z": z, "added": z[2] - z[0]}


@residual_stream.draw
def _(d, v):
    fig, axes = plot.subplots(v, 1, 4, phone_cols=2)
    z = d["z"]
    lim = float(max(np.abs(a).max() for a in z))
    lab = {0: "CLS", CHOSEN + 1: f"patch {CHOSEN}", 49: "patch 48"}
    titles = ("z₀ (input)", "after block 1", "after block 2")
    im = None
    for ax, m, t in zip(axes[:3], z, titles, strict=True):
        im = _matrix(ax, m, lim, v, title=t, chosen_row=CHOSEN + 1, labels=lab)
    cb = fig.colorbar(im, ax=axes[:3], shrink=0.8, pad=0.02, location="bottom")
    cb.set_ticks(TICKS, labels=[str(t) for t in TICKS])
    cb.set_label(
        plot.pick(
            v,
            "value (one scale for the first three; logarithmic beyond ±1)",
            "value (one scale for the first three;\nlogarithmic beyond ±1)",
        ),
        fontsize=8,
    )
    cb.outline.set_visible(False)
    lim2 = float(np.abs(d["added"]).max())
    im2 = _matrix(
        axes[3],
        d["added"],
        lim2,
        v,
        title="added by the\ntwo blocks",
        chosen_row=CHOSEN + 1,
        labels=lab,
        log=False,
    )
    t = float(np.floor(lim2))
    cb2 = fig.colorbar(
        im2, ax=axes[3], shrink=0.9, pad=0.02, location="right" if plot.is_phone(v) else "bottom"
    )
    cb2.set_ticks([-t, 0, t], labels=[f"{-t:g}", "0", f"{t:g}"])
    cb2.set_label("value (own scale)", fontsize=8)
    cb2.outline.set_visible(False)
    return fig


@figure(chapter=0, id="logits", size=(7.2, 2.5), phone_size=6.0)
def logits(rec):
    """The CLS token after the final LayerNorm, the head's two logits and their softmax."""
    _, out, _ = run_face_model()
    pooled = _np(out["pooled"][0])
    lg = _np(out["logits"][0])
    prob = np.exp(lg - lg.max()) / np.exp(lg - lg.max()).sum()
    for k in range(len(lg)):
        rec.fact(f"logit_{k}", float(lg[k]), "{:.3f}")
        rec.fact(f"prob_{k}", float(prob[k]), "{:.1%}")
    return {"pooled": pooled, "logits": lg, "prob": prob}


@logits.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2, a3) = plot.subplots(v, 1, 3, width_ratios=[1.6, 1, 1], phone_cols=1)
    k = np.arange(1, len(d["pooled"]) + 1)
    a1.bar(k, d["pooled"], color=c["blue"])
    a1.axhline(0, color=c["muted"], lw=0.8)
    a1.set_xticks(k)
    a1.set_xlabel("feature")
    a1.set_ylabel("value")
    a1.set_title("CLS after final LayerNorm", fontsize=9.5)
    for ax, vals, t, fmt in (
        (a2, d["logits"], "logits (head output)", "{:+.3f}"),
        (a3, d["prob"], "softmax", "{:.1%}"),
    ):
        ax.bar([0, 1], vals, color=[c["orange"], c["purple"]])
        ax.axhline(0, color=c["muted"], lw=0.8)
        ax.set_xticks([0, 1], labels=["class 0", "class 1"])
        ax.set_title(t, fontsize=9.5)
        for i, val in enumerate(vals):
            ax.annotate(
                fmt.format(val),
                (i, val),
                xytext=(0, 3 if val >= 0 else -3),
                textcoords="offset points",
                ha="center",
                va="bottom" if val >= 0 else "top",
                fontsize=8.5,
            )
        ax.margins(y=0.25)
    a3.set_ylim(0, 1)
    a3.set_ylabel("probability")
    a2.set_ylabel("logit")
    return fig


def mlp_gain(dim: int, hidden: int, *, tokens: int = 197, seed: int = 0) -> float:
    """How loud an MLP is at initialisation: the size of its output over the size of its input,
    median over ``tokens`` standard-normal tokens (what LayerNorm hands it: mean 0, variance 1
    per feature). Weights as the book's model initialises them (timm: normal std 0.02, zero
    bias). Roughly 0.02^2 sqrt(D M) / 2 while the hidden units are small: it grows with width.

    Args:
        dim: D.
        hidden: the MLP's hidden width M.
        tokens: how many random tokens to average over.
        seed: the seed of the weights and the tokens.
    """
    torch.manual_seed(seed)
    mlp = Mlp(dim=dim, hidden=hidden)
    for lin in (mlp.fc1, mlp.fc2):
        torch.nn.init.trunc_normal_(lin.weight, std=0.02)
        torch.nn.init.zeros_(lin.bias)
    x = torch.randn(tokens, dim)  # (T, D)
    with torch.no_grad():
        gain = mlp(x).norm(dim=-1) / x.norm(dim=-1)  # (T,)
    return float(gain.median())


@facts(chapter=0, id="mlp-silence")
def mlp_silence(rec):
    """The untrained MLP is nearly silent at D = 8 but not at ViT-B/16's width."""
    face_cfg, b16 = preset("face"), preset("vit-b/16")
    small = mlp_gain(face_cfg.dim, face_cfg.mlp_dim)
    big = mlp_gain(b16.dim, b16.mlp_dim)
    rec.fact("mlp_gain_face", small, "{:.4f}")
    rec.fact("mlp_gain_b16", big, "{:.2f}")
    rec.fact("mlp_gain_ratio", big / small, "{:.0f}")
    return {"face": small, "b16": big}


# --- the whole model on one page ----------------------------------------------------------------

OVERVIEW_STAGES = [  # (box label, shape_trace stage whose shape leaves the box, colour key)
    ("image", "image", "muted"),
    ("patch embedding\nConv2d, kernel = stride = P", "patches", "blue"),
    ("prepend the class token", "with_cls", "purple"),
    ("add the position table", "with_pos", "purple"),
    (
        "L encoder blocks (L = 2 here, 12 in ViT-B/16)\nLN → MSA → +,  LN → MLP → +",
        "blocks.i",
        "orange",
    ),
    ("final LayerNorm", "encoded", "green"),
    ("take row 0 (the class token)", "pooled", "green"),
    ("linear head", "logits", "green"),
]


@figure(chapter=0, id="overview", size=(7.2, 5.4), phone_size=6.4)
def overview(rec):
    """The forward pass as boxes and arrows, each arrow labelled with the shape it carries,
    read from ``calc.shape_trace`` for the face model and for ViT-B/16."""
    face_shapes = dict(shape_trace(preset("face")))
    b16_shapes = dict(shape_trace(preset("vit-b/16")))
    stages = [
        (label, face_shapes[key], b16_shapes[key], color) for label, key, color in OVERVIEW_STAGES
    ]
    rec.fact("overview_stages", len(stages))
    return {"stages": stages}


@overview.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    stages = d["stages"]
    n = len(stages)
    ys = np.linspace(0.95, 0.05, n)
    phone = plot.is_phone(v)
    x0, width, height = (0.5, 0.96, 0.075) if phone else (0.27, 0.44, 0.075)
    for i, (label, shape, b16, color) in enumerate(stages):
        y = ys[i]
        box = FancyBboxPatch(
            (x0 - width / 2, y - height / 2), width, height,
            boxstyle="round,pad=0.004,rounding_size=0.015", fc=c["bg"], ec=c[color], lw=1.6,
        )  # fmt: skip
        ax.add_patch(box)
        ax.text(x0, y, label, ha="center", va="center", fontsize=8.5, color=c["fg"])
        if i == n - 1:
            continue
        y_next = ys[i + 1]
        ax.annotate(
            "", xy=(x0, y_next + height / 2), xytext=(x0, y - height / 2),
            arrowprops={"arrowstyle": "-|>", "color": c["fg"], "lw": 1.3},
        )  # fmt: skip
        mid = (y - height / 2 + y_next + height / 2) / 2
        ax.text(x0 + 0.03, mid, f"{shape}", ha="left", va="center", fontsize=8.5,
                color=c["fg"], family="monospace")  # fmt: skip
        ax.text(x0 - 0.03 if phone else x0 + 0.30, mid, f"{'B/16' if phone else 'ViT-B/16'}: {b16}",
                ha="right" if phone else "left", va="center", fontsize=8,
                color=c["muted"], family="monospace")  # fmt: skip
    # the shape that leaves the last box
    label, shape, b16, _ = stages[-1]
    if phone:  # below the last box
        ax.text(x0 + 0.03, ys[-1] - 0.07, f"logits {shape}", ha="left", va="center",
                fontsize=8.5, color=c["fg"], family="monospace")  # fmt: skip
        ax.text(x0 - 0.03, ys[-1] - 0.07, f"B/16: {b16}", ha="right", va="center",
                fontsize=8, color=c["muted"], family="monospace")  # fmt: skip
        ax.set_ylim(-0.05, 1)
        return fig
    ax.text(x0 + width / 2 + 0.02, ys[-1], f"logits {shape}", ha="left", va="center",
            fontsize=8.5, color=c["fg"], family="monospace")  # fmt: skip
    ax.text(x0 + width / 2 + 0.02, ys[-1] - 0.04, f"ViT-B/16: {b16}", ha="left", va="center",
            fontsize=8, color=c["muted"], family="monospace")  # fmt: skip
    return fig
