"""Chapter 10, Inside a trained ViT: filters, positions, attention distance, rollout, and cost
of windowed attention. Everything is measured on the small ViT pre-trained in Chapter 9."""

from __future__ import annotations

import numpy as np
import torch

from vitbook import plot, runs
from vitbook.analysis import (
    attention_rollout,
    cosine_similarity_map,
    mean_attention_distance,
    rollout_cls_map,
)
from vitbook.data.shapes import PRETRAIN_CLASSES, make_shapes
from vitbook.engine import facts, figure

N_TEST = 1000  # test images for the measured scores
SHOW = 6  # images drawn in the rollout figure


def _model():
    return runs.pretrained_shapes_vit()["model"]


@figure(chapter=10, id="embedding-filters", size=(7.2, 2.6), trained=True)
def embedding_filters(rec):
    """Principal components of the patch-embedding filters (the Conv2d weight, D filters of
    3×4×4 values), each shown as a 4×4 RGB patch, with the variance each explains."""
    w = _model().patch_embed.proj.weight.detach().double()  # (D, 3, P, P)
    D, C, P, _ = w.shape
    flat = w.reshape(D, -1)  # (D, 3 P^2)
    flat = flat - flat.mean(0, keepdim=True)
    _, s, vt = torch.linalg.svd(flat, full_matrices=False)
    var = (s**2 / (s**2).sum()).numpy()
    comps = vt[:12].reshape(12, C, P, P).numpy()
    rec.fact("filter_count", D)
    rec.fact("filter_values", C * P * P)
    rec.fact("pc1_var", var[0], "{:.0%}")
    rec.fact("pc12_var", var[:12].sum(), "{:.0%}")
    rec.fact("pcs_for_90", int(np.searchsorted(np.cumsum(var), 0.9) + 1))
    return {"comps": comps, "var": var}


@embedding_filters.draw
def _(d, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    grid = fig.add_gridspec(2, 8, width_ratios=[1] * 6 + [0.3, 3.2])
    for i, comp in enumerate(d["comps"]):
        ax = fig.add_subplot(grid[i // 6, i % 6])
        img = comp.transpose(1, 2, 0)
        img = 0.5 + 0.5 * img / np.abs(img).max()  # each component scaled to fill [0, 1]
        plot.show_image(ax, img)
        ax.set_title(f"PC {i + 1}", fontsize=8, loc="center", fontweight="normal")
    ax = fig.add_subplot(grid[:, 7])
    k = np.arange(1, len(d["var"]) + 1)
    ax.bar(k, 100 * d["var"], color=c["blue"])
    ax.plot(k, 100 * np.cumsum(d["var"]), color=c["orange"], marker="o", ms=2)
    plot.label_line(ax, 12, 100 * np.cumsum(d["var"])[11] - 8, "cumulative", c["orange"])
    ax.set(xlabel="component", ylabel="variance explained (%)", ylim=(0, 105))
    return fig


@figure(chapter=10, id="pos-similarity", size=(5.6, 5.2), trained=True)
def pos_similarity(rec):
    """Cosine similarity between the learned position embedding of each patch (one small map
    per patch, at its place in the grid) and those of all the others."""
    model = _model()
    gh, gw = model.cfg.grid
    sim = cosine_similarity_map(model.pos_embed.detach(), (gh, gw)).numpy()  # (gh, gw, gh, gw)
    # how much more similar are neighbours than patches far apart?
    idx = np.array([(i, j) for i in range(gh) for j in range(gw)])
    dist = np.abs(idx[:, None] - idx[None]).sum(-1)  # Manhattan distance in patches
    flat = sim.reshape(gh * gw, gh * gw)
    same_row = (idx[:, None, 0] == idx[None, :, 0]) & (dist > 0)
    other = (idx[:, None, 0] != idx[None, :, 0]) & (idx[:, None, 1] != idx[None, :, 1])
    rec.fact("sim_neighbour", float(flat[dist == 1].mean()), "{:.2f}")
    rec.fact("sim_far", float(flat[dist >= gh].mean()), "{:.2f}")
    rec.fact("sim_same_row", float(flat[same_row].mean()), "{:.2f}")
    rec.fact("sim_other", float(flat[other].mean()), "{:.2f}")
    rec.fact("pos_grid", f"{gh}×{gw}")
    return {"sim": sim}


@pos_similarity.draw
def _(d, v):
    sim = d["sim"]
    gh, gw = sim.shape[:2]
    fig, axes = plot.subplots(v, gh, gw, gridspec_kw={"wspace": 0.05, "hspace": 0.05})
    for i in range(gh):
        for j in range(gw):
            ax = axes[i, j]
            im = ax.imshow(sim[i, j], cmap="viridis", vmin=-1, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(str(i + 1), fontsize=8, rotation=0, labelpad=6, va="center")
            if i == gh - 1:
                ax.set_xlabel(str(j + 1), fontsize=8)
    fig.supxlabel("input patch column", fontsize=9)
    fig.supylabel("input patch row", fontsize=9)
    fig.colorbar(im, ax=axes, shrink=0.6, label="cosine similarity")
    return fig


def _test_set():
    s = make_shapes(N_TEST, classes=PRETRAIN_CLASSES, seed=runs.PRETRAIN_TEST_SEED)
    return s, s.tensors()[0]


@torch.no_grad()
def _attn(model, x):
    out = model.forward_intermediates(x, attn=True)
    return out["attn"], out["logits"]


@figure(chapter=10, id="attention-distance", size=(7.2, 3.2), trained=True)
def attention_distance(rec):
    """Mean attention distance of every head in every layer, averaged over test images."""
    model = _model()
    _, x = _test_set()
    attns, _ = _attn(model, x[:256])
    cfg = model.cfg
    dist = np.stack([mean_attention_distance(a, cfg.grid, cfg.patch_size).numpy() for a in attns])
    rec.fact("dist_l1_min", float(dist[0].min()), "{:.1f}")
    rec.fact("dist_l1_max", float(dist[0].max()), "{:.1f}")
    rec.fact("dist_last_min", float(dist[-1].min()), "{:.1f}")
    rec.fact("dist_last_max", float(dist[-1].max()), "{:.1f}")
    rec.fact("dist_l1_mean", float(dist[0].mean()), "{:.1f}")
    rec.fact("dist_last_mean", float(dist[-1].mean()), "{:.1f}")
    # what uniform attention over all patches would give: the mean distance between patches
    ys, xs = np.meshgrid(np.arange(cfg.grid[0]), np.arange(cfg.grid[1]), indexing="ij")
    centres = np.stack([ys.ravel(), xs.ravel()], -1) * cfg.patch_size
    uniform = np.linalg.norm(centres[:, None] - centres[None], axis=-1).mean()
    rec.fact("dist_uniform", float(uniform), "{:.1f}")
    rec.fact("depth", cfg.depth)
    rec.fact("heads", cfg.heads)
    rec.fact("image_px", cfg.image_hw[0])
    return {"dist": dist, "uniform": uniform}


@attention_distance.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    dist = d["dist"]
    L, H = dist.shape
    for h in range(H):
        ax.plot(np.arange(1, L + 1) + (h - (H - 1) / 2) * 0.05, dist[:, h], "o", ms=6,
                color=c[plot.CYCLE[h % len(plot.CYCLE)]], alpha=0.9)  # fmt: skip
    ax.plot(np.arange(1, L + 1), dist.mean(1), color=c["muted"], lw=1)
    ax.axhline(d["uniform"], color=c["muted"], ls="--", lw=0.8)
    ax.text(L + 0.25, d["uniform"], "uniform\nattention", color=c["muted"], fontsize=8,
            va="center")  # fmt: skip
    ax.set_xticks(np.arange(1, L + 1))
    ax.set_xlim(0.6, L + 1.1)
    top = 1.2 * max(dist.max(), d["uniform"])
    ax.set(xlabel="layer (block)", ylabel="mean attention distance (pixels)", ylim=(0, top))
    ax.text(0.02, 0.04, "one dot per head; grey line: mean over heads", fontsize=8,
            color=c["fg"], transform=ax.transAxes)  # fmt: skip
    return fig


def _peak_inside(maps: np.ndarray, boxes: np.ndarray, patch: int) -> np.ndarray:
    """For each (gh, gw) map: is the centre of its highest patch inside the object's box?"""
    n, gh, gw = maps.shape
    flat = maps.reshape(n, -1).argmax(1)
    cy = (flat // gw) * patch + patch / 2
    cx = (flat % gw) * patch + patch / 2
    x0, y0, x1, y1 = boxes.T
    return (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)


def _chance(boxes: np.ndarray, grid: tuple[int, int], patch: int) -> float:
    """Probability that a uniformly random patch centre falls inside the box, averaged."""
    gh, gw = grid
    cy = np.arange(gh) * patch + patch / 2
    cx = np.arange(gw) * patch + patch / 2
    inside_y = (cy[None] >= boxes[:, 1:2]) & (cy[None] <= boxes[:, 3:4])
    inside_x = (cx[None] >= boxes[:, 0:1]) & (cx[None] <= boxes[:, 2:3])
    return float((inside_y.sum(1) * inside_x.sum(1) / (gh * gw)).mean())


# --8<-- [start:localisation]
@figure(chapter=10, id="rollout", size=(7.2, 3.9), trained=True)
def rollout(rec):
    """Raw last-layer CLS attention (mean over heads) and attention rollout on test images of
    the six shapes, and how often each map's peak lands inside the object's box."""
    model = _model()
    s, x = _test_set()
    cfg = model.cfg
    raw_maps, roll_maps, preds = [], [], []
    for i in range(0, len(x), 250):
        attns, logits = _attn(model, x[i : i + 250])
        last = attns[-1].mean(1)[:, 0, 1:]  # (B, N): CLS row of the last layer, heads averaged
        raw_maps.append(last.reshape(-1, *cfg.grid))
        roll_maps.append(rollout_cls_map(attention_rollout(attns), cfg.grid))  # (B, gh, gw)
        preds.append(logits.argmax(-1))
    raw = torch.cat(raw_maps).numpy()
    roll = torch.cat(roll_maps).numpy()
    pred = torch.cat(preds).numpy()
    hit_raw = _peak_inside(raw, s.boxes, cfg.patch_size)
    hit_roll = _peak_inside(roll, s.boxes, cfg.patch_size)
    chance = _chance(s.boxes, cfg.grid, cfg.patch_size)
    # --8<-- [end:localisation]
    correct = pred == s.labels
    rec.fact("loc_images", len(x), "{:,}")
    rec.fact("loc_raw", hit_raw.mean(), "{:.1%}")
    rec.fact("loc_rollout", hit_roll.mean(), "{:.1%}")
    rec.fact("loc_chance", chance, "{:.1%}")
    rec.fact("loc_rollout_beats_raw", "yes" if hit_roll.mean() > hit_raw.mean() else "no")
    rec.fact("loc_rollout_correct", hit_roll[correct].mean(), "{:.1%}")
    rec.fact("loc_rollout_wrong", hit_roll[~correct].mean() if (~correct).any() else float("nan"),
             "{:.1%}")  # fmt: skip
    rec.fact("loc_n_wrong", int((~correct).sum()))
    rec.fact("loc_acc", correct.mean(), "{:.1%}")
    show = np.arange(SHOW)
    images = s.images[show].transpose(0, 2, 3, 1)
    return {
        "images": images, "raw": raw[show], "roll": roll[show], "boxes": s.boxes[show],
        "labels": [PRETRAIN_CLASSES[k] for k in s.labels[show]],
        "preds": [PRETRAIN_CLASSES[k] for k in pred[show]],
    }  # fmt: skip


@rollout.draw
def _(d, v):
    c = plot.colors(v)
    n = len(d["images"])
    fig, axes = plot.subplots(v, 3, n)
    rows = [("image", None), ("last-layer\nCLS attention", "raw"), ("attention\nrollout", "roll")]
    for j in range(n):
        for i, (name, key) in enumerate(rows):
            ax = axes[i, j]
            if key is None:
                plot.show_image(ax, d["images"][j])
                ok = d["labels"][j] == d["preds"][j]
                ax.set_title(f"{d['labels'][j]}\n(model: {d['preds'][j]})", fontsize=8,
                             loc="center", fontweight="normal",
                             color=c["fg"] if ok else c["red"])  # fmt: skip
            else:
                m = d[key][j]
                plot.attention_overlay(ax, d["images"][j], m / m.max(), alpha=0.65)
            x0, y0, x1, y1 = d["boxes"][j]
            ax.add_patch(plot.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False,
                                        ec="white", lw=1, ls="--"))  # fmt: skip
            if j == 0:
                ax.set_ylabel(name, fontsize=8)
    return fig


@facts(chapter=10, id="after-vit")
def after_vit(rec):
    """Sizes and ImageNet-1k top-1 accuracies reported by the papers (see REFERENCE-FACTS)."""
    rows = {
        "vitb": ("86M", "77.9"),  # ViT-B/16 trained on ImageNet-1k only (DeiT's table)
        "deitb": ("86M", "81.8"),
        "cvt13": ("20M", "81.6"),
        "cvt21": ("32M", "82.5"),
        "mvit_xxs": ("1.3M", "69.0"),
        "mvit_xs": ("2.3M", "74.8"),
        "mvit_s": ("5.6M", "78.4"),
        "swin_t": ("28M", "81.3"),
        "swin_s": ("50M", "83.2"),
        "swin_b": ("88M", "83.5"),
    }
    for k, (params, top1) in rows.items():
        rec.fact(f"{k}_params", params)
        rec.fact(f"{k}_top1", top1)
    return rows


# --8<-- [start:window-cost]
def attention_pairs(image: int, patch: int, window: int | None) -> int:
    """Query-key pairs in one attention layer over an image cut into patch x patch tokens:
    global attention compares all N tokens with all N; windowed attention compares each token
    only with the window x window tokens of its own window."""
    n = (image // patch) ** 2
    return n * n if window is None else n * window * window
    # --8<-- [end:window-cost]


@figure(chapter=10, id="window-cost", size=(7.2, 3.0))
def window_cost(rec):
    """Query-key pairs per attention layer for global attention and for 7×7 windows, against
    image side, with 4×4-pixel tokens (Swin's first stage)."""
    sizes = np.array([112, 224, 448, 896, 1792])
    glob = np.array([attention_pairs(int(s), 4, None) for s in sizes], dtype=float)
    win = np.array([attention_pairs(int(s), 4, 7) for s in sizes], dtype=float)
    rec.fact("win_tokens_224", (224 // 4) ** 2, "{:,}")
    rec.fact("win_global_224", attention_pairs(224, 4, None), "{:,}")
    rec.fact("win_window_224", attention_pairs(224, 4, 7), "{:,}")
    rec.fact("win_ratio_224", attention_pairs(224, 4, None) / attention_pairs(224, 4, 7), "{:.0f}")
    rec.fact("win_ratio_896", attention_pairs(896, 4, None) / attention_pairs(896, 4, 7), "{:,.0f}")
    rec.fact("win_growth_global", attention_pairs(448, 4, None) / attention_pairs(224, 4, None),
             "{:.0f}")  # fmt: skip
    rec.fact("win_growth_window", attention_pairs(448, 4, 7) / attention_pairs(224, 4, 7), "{:.0f}")
    return {"sizes": sizes, "global": glob, "window": win}


@window_cost.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    ax.plot(d["sizes"], d["global"], color=c["red"], marker="o")
    ax.plot(d["sizes"], d["window"], color=c["blue"], marker="o")
    plot.label_line(ax, d["sizes"][-1], d["global"][-1], "global: N²", c["red"])
    plot.label_line(ax, d["sizes"][-1], d["window"][-1], "7×7 windows: 49 N", c["blue"])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(d["sizes"], [str(s) for s in d["sizes"]])
    ax.minorticks_off()
    ax.set_xlim(d["sizes"][0] * 0.9, d["sizes"][-1] * 3.6)
    ax.set(xlabel="image side (pixels), 4×4-pixel tokens", ylabel="query-key pairs per layer")
    ax.grid(axis="y")
    return fig
