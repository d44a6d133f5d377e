"""Chapter 1, Why a transformer for images?: receptive fields measured by gradients, a seeded
long-range task (ViT against a CNN of the same size), and what the paper found about data."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from vitbook import plot
from vitbook.data.longrange import mirror_strips, pair_distance
from vitbook.engine import cached, facts, figure
from vitbook.model import VisionTransformer, ViTConfig
from vitbook.train import SmallCNN, cnn_width_for, fit

# --- receptive fields --------------------------------------------------------------------------

RF_SIZE = 129  # input side for the gradient probes; the probed unit sits at the centre
RF_DEPTHS = 64  # plain 3x3 stacks of 1..64 layers


# --8<-- [start:footprint]
def footprint(grad: torch.Tensor) -> int:
    """Width in pixels of the square that holds every non-zero entry of a gradient map (H, W)."""
    ys, xs = torch.nonzero(grad.abs() > 0, as_tuple=True)
    return int(max(ys.max() - ys.min(), xs.max() - xs.min())) + 1


def plain_stack_footprints(depth: int, size: int = RF_SIZE) -> tuple[list[int], list[np.ndarray]]:
    """Stack ``depth`` 3x3 convolutions; after each, the centre unit's gradient with respect to
    the input shows which pixels it can see at all (its receptive field)."""
    torch.manual_seed(0)
    x = torch.rand(1, 1, size, size, requires_grad=True)
    widths, maps, z = [], [], x
    for _ in range(depth):
        conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
        nn.init.uniform_(conv.weight, 0.5, 1.0)  # positive weights: no accidental cancellation
        z = conv(z)  # (1, 1, size, size)
        (g,) = torch.autograd.grad(z[0, 0, size // 2, size // 2], x, retain_graph=True)
        widths.append(footprint(g[0, 0]))
        maps.append(g[0, 0].numpy())
    return widths, maps
    # --8<-- [end:footprint]


def small_cnn_footprint(size: int = RF_SIZE - 1) -> tuple[int, np.ndarray]:
    """The receptive field of one unit of SmallCNN's last stage, before global pooling."""
    torch.manual_seed(0)
    cnn = SmallCNN(in_chans=1, num_classes=2, width=4).eval()
    for m in cnn.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.uniform_(m.weight, 0.5, 1.0)  # positive, so that no ReLU blocks the probe
    x = torch.rand(1, 1, size, size, requires_grad=True)
    feats = cnn.features[:-2](x)  # (1, 16, size/4, size/4): the last stage, before pooling
    c = feats.shape[-1] // 2
    (g,) = torch.autograd.grad(feats[0, 0, c, c], x)
    return footprint(g[0, 0]), g[0, 0].numpy()


@figure(chapter=1, id="receptive-field", size=(7.2, 3.4))
def receptive_field(rec):
    """Receptive fields measured by back-propagating from one unit to the input pixels."""
    widths, maps = plain_stack_footprints(RF_DEPTHS)
    closed = [2 * k + 1 for k in range(1, RF_DEPTHS + 1)]
    rec.fact("rf_depths_checked", RF_DEPTHS)
    rec.fact("rf_closed_form_ok", "yes" if widths == closed else "no")
    cnn_width, cnn_map = small_cnn_footprint()
    rec.fact("cnn_rf", cnn_width)
    # layers of 3x3 convolutions before one unit sees two pixels d apart: 2k + 1 >= d + 1
    distances = np.arange(1, RF_SIZE)
    layers = np.array([next(k + 1 for k, w in enumerate(widths) if w >= d + 1) for d in distances])
    rec.fact("layers_for_d16", int(layers[15]))
    rec.fact("layers_for_d112", int(layers[111]))
    rec.fact("layers_for_d223", (223 + 1) // 2)  # the closed form, checked above up to d = 128
    c = RF_SIZE // 2
    crop = slice(c - 24, c + 25)
    shown = {k: maps[k - 1][crop, crop] for k in (1, 4, 16)}
    off = (RF_SIZE - 1 - cnn_map.shape[0]) // 2
    cc = cnn_map.shape[0] // 2
    shown["cnn"] = cnn_map[cc - 24 : cc + 25, cc - 24 : cc + 25]
    del off
    return {"shown": shown, "widths": widths, "d": distances, "layers": layers, "cnn_rf": cnn_width}


@receptive_field.draw
def _(data, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    grid = fig.add_gridspec(2, 4, width_ratios=[1, 1, 0.15, 2.6])
    titles = {1: "1 layer", 4: "4 layers", 16: "16 layers", "cnn": "SmallCNN unit"}
    for i, key in enumerate((1, 4, 16, "cnn")):
        ax = fig.add_subplot(grid[i // 2, i % 2])
        m = data["shown"][key]
        ax.imshow(
            np.log10(m + 1e-30),
            cmap="magma",
            vmin=np.log10(m.max()) - 12,
            vmax=np.log10(m.max()),
            interpolation="nearest",
        )
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(titles[key], fontsize=9, loc="center")
    ax = fig.add_subplot(grid[:, 3])
    d, layers = data["d"], data["layers"]
    ax.step(d, layers, where="post", color=c["blue"])
    ax.plot([0, d[-1]], [1, 1], color=c["orange"])
    ax.annotate(
        "stacked 3×3 convolutions\n(measured)",
        (d[-1], layers[-1]),
        xytext=(-6, 0),
        textcoords="offset points",
        ha="right",
        va="bottom",
        color=c["blue"],
        fontsize=9,
    )
    ax.annotate(
        "self-attention: 1 layer\nfor any distance",
        (d[-1], 1),
        xytext=(-4, 8),
        textcoords="offset points",
        ha="right",
        va="bottom",
        color=c["orange"],
        fontsize=9,
    )
    ax.axvline(data["cnn_rf"] - 1, color=c["muted"], lw=1, ls="--")
    ax.text(
        data["cnn_rf"] + 1,
        40,
        f"SmallCNN's whole\nreach: {data['cnn_rf']} px",
        color=c["muted"],
        fontsize=8.5,
        va="center",
    )
    ax.set_xlabel("distance d between two pixels (px)")
    ax.set_ylabel("layers before one unit\nsees both pixels")
    ax.set_xlim(0, d[-1])
    ax.set_ylim(0, layers[-1] + 4)
    ax.grid(True, axis="y")
    return fig


# --- the long-range task ------------------------------------------------------------------------

TASK = {"rows": 1, "cols": 16, "cell": 4, "pairs": 1}
FAR = 32  # SmallCNN sees at most 32 px: partners this far apart are out of its reach
N_TRAIN, N_TEST, EPOCHS, BATCH, LR = 4000, 1000, 30, 64, 1e-3


def task_config() -> ViTConfig:
    """The small ViT of the experiment: one patch per cell, 16 tokens plus CLS."""
    h, w = TASK["rows"] * TASK["cell"], TASK["cols"] * TASK["cell"]
    return ViTConfig(
        image_size=(h, w),
        patch_size=TASK["cell"],
        in_chans=1,
        dim=32,
        depth=2,
        heads=2,
        num_classes=2,
    )


# --8<-- [start:longrange-run]
@cached
def longrange_run(seed: int = 0) -> dict:
    """Train a small ViT and a SmallCNN of about the same size on the same data, same budget."""
    train = mirror_strips(N_TRAIN, seed=seed + 1, **TASK)
    test = mirror_strips(N_TEST, seed=seed + 2, **TASK)
    torch.manual_seed(seed)
    vit = VisionTransformer(cfg=task_config())
    width = cnn_width_for(vit.num_params(), in_chans=1, num_classes=2)
    cnn = SmallCNN(in_chans=1, num_classes=2, width=width)
    out = {"params": {"vit": vit.num_params(), "cnn": cnn.num_params()}, "cnn_width": width}
    for name, model in (("vit", vit), ("cnn", cnn)):
        hist = fit(
            model,
            train[:2],
            test[:2],
            epochs=EPOCHS,
            batch_size=BATCH,
            lr=LR,
            weight_decay=0.05,
            schedule="cosine",
            warmup_epochs=1,
            seed=seed,
            progress=False,
            desc=name,
        )
        with torch.no_grad():
            pred = model(test[0]).argmax(-1)
        hit = (pred == test[1]).numpy()
        out[name] = {
            "test_acc": hist.test_acc,
            "train_acc": hist.train_acc,
            "seconds": hist.seconds,
            "hit": hit,
        }
    out["distance"] = test[2].numpy()  # 0 for intact parts
    return out
    # --8<-- [end:longrange-run]


@figure(chapter=1, id="longrange-samples", size=(7.2, 2.6))
def longrange_samples(rec):
    """Six parts from the task, intact and defective, with the defect's distance."""
    x, y, dist = mirror_strips(6, seed=7, **TASK)
    rec.fact("task_cols", TASK["cols"])
    rec.fact("task_cell", TASK["cell"])
    rec.fact("task_h", TASK["rows"] * TASK["cell"])
    rec.fact("task_w", TASK["cols"] * TASK["cell"])
    rec.fact("dist_min", pair_distance(TASK["cols"] // 2 - 1, cols=TASK["cols"], cell=TASK["cell"]))
    rec.fact("dist_max", pair_distance(0, cols=TASK["cols"], cell=TASK["cell"]))
    return {"x": x[:, 0].numpy(), "y": y.numpy(), "dist": dist.numpy()}


@longrange_samples.draw
def _(data, v):
    c = plot.colors(v)
    n = len(data["y"])
    fig, axes = plot.subplots(v, n, 1)
    for ax, img, y, dist in zip(axes, data["x"], data["y"], data["dist"], strict=True):
        ax.imshow(img, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        label = f"defective ({dist} px)" if y else "intact"
        ax.set_ylabel("", fontsize=8)
        ax.text(
            1.01,
            0.5,
            label,
            transform=ax.transAxes,
            va="center",
            fontsize=8.5,
            color=c["red"] if y else c["green"],
        )
    return fig


@figure(chapter=1, id="longrange-results", size=(7.2, 3.2), trained=True)
def longrange_results(rec):
    """Accuracy of the ViT and the CNN, overall and by the distance between the partners."""
    run = longrange_run()
    dist = run["distance"]
    rec.fact("vit_params", run["params"]["vit"])
    rec.fact("cnn_params", run["params"]["cnn"])
    rec.fact("cnn_width", run["cnn_width"])
    rec.fact("n_train", N_TRAIN)
    rec.fact("n_test", N_TEST)
    rec.fact("epochs", EPOCHS)
    rec.fact("batch", BATCH)
    rec.fact("lr", LR, "{:g}")
    by = {}
    for name in ("vit", "cnn"):
        r = run[name]
        rec.fact(f"{name}_acc", float(r["hit"].mean()), "{:.1%}")
        rec.fact(f"{name}_train_acc", r["train_acc"][-1], "{:.1%}")
        rec.fact(f"{name}_intact_acc", float(r["hit"][dist == 0].mean()), "{:.1%}")
        near, far = (dist > 0) & (dist < FAR), dist >= FAR
        rec.fact(f"{name}_near_acc", float(r["hit"][near].mean()), "{:.1%}")
        rec.fact(f"{name}_far_acc", float(r["hit"][far].mean()), "{:.1%}")
        by[name] = {int(d): float(r["hit"][dist == d].mean()) for d in np.unique(dist) if d}
    rec.fact("far_threshold", FAR)
    vit_curve = run["vit"]["test_acc"]
    rec.fact("vit_epoch_90", next(i + 1 for i, acc in enumerate(vit_curve) if acc >= 0.9))
    rec.fact("vit_chance_epochs", next(i for i, acc in enumerate(vit_curve) if acc >= 0.6))
    rec.fact("cnn_best_acc", max(run["cnn"]["test_acc"]), "{:.1%}")
    rec.fact(
        "vit_train_gap", run["vit"]["train_acc"][-1] - float(run["vit"]["hit"].mean()), "{:.1%}"
    )
    rec.fact(
        "cnn_train_gap", run["cnn"]["train_acc"][-1] - float(run["cnn"]["hit"].mean()), "{:.1%}"
    )
    for name, model in (
        ("vit", VisionTransformer(cfg=task_config())),
        ("cnn", SmallCNN(in_chans=1, num_classes=2, width=run["cnn_width"])),
    ):
        with FlopCounterMode(display=False) as counter:
            model(torch.zeros(1, 1, *task_config().image_hw))
        rec.fact(f"{name}_macs", counter.get_total_flops() // 2)  # one MAC = two FLOPs
    macs = {k: rec.facts[f"{k}_macs"]["value"] for k in ("vit", "cnn")}
    rec.fact("macs_ratio", macs["cnn"] / macs["vit"], "{:.1f}")
    return {
        "by": by,
        "curves": {n: run[n]["test_acc"] for n in ("vit", "cnn")},
        "params": run["params"],
    }


@longrange_results.draw
def _(data, v):
    c = plot.colors(v)
    fig, (ax1, ax2) = plot.subplots(v, 1, 2, width_ratios=[1, 1.5])
    names = {"vit": ("ViT", c["orange"]), "cnn": ("SmallCNN", c["blue"])}
    for key, (label, col) in names.items():
        curve = np.array(data["curves"][key]) * 100
        ep = np.arange(1, len(curve) + 1)
        ax1.plot(ep, curve, color=col)
        plot.label_line(ax1, ep[-1], curve[-1], label, col)
        d = sorted(data["by"][key])
        ax2.plot(d, [100 * data["by"][key][k] for k in d], "o-", color=col, label=label)
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("test accuracy (%)")
    ax1.set_ylim(40, 102)
    ax1.set_xlim(1, len(data["curves"]["vit"]) + 5)
    ax1.axhline(50, color=c["muted"], lw=1, ls=":")
    ax2.axhline(50, color=c["muted"], lw=1, ls=":")
    ax2.text(2, 51, "chance", color=c["muted"], fontsize=8)
    ax2.set_xlabel("distance between a defect and its partner (px)")
    ax2.set_ylabel("defects found (%)")
    ax2.set_ylim(0, 105)
    ax2.legend(loc="lower left")
    return fig


# --- what the paper found about data -----------------------------------------------------------


@facts(chapter=1, id="paper-data")
def paper_data(rec):
    """ImageNet top-1 after fine-tuning at 384, by pre-training set (ViT paper, Table 5)."""
    table5 = {
        "in1k": {"b16": 77.91, "l16": 76.53},
        "in21k": {"b16": 83.97, "l16": 85.15, "h14": 85.13},
        "jft": {"b16": 84.15, "l16": 87.12, "h14": 88.04},
    }
    for data, row in table5.items():
        for model, acc in row.items():
            rec.fact(f"t5_{data}_{model}", acc, "{:.2f}%")
    rec.fact("deit_b", 81.8, "{:.1f}%")  # Touvron et al. 2021, ImageNet-1k only
    rec.fact("deit_b_distilled", 83.4, "{:.1f}%")
    rec.fact("finetune_res", 384)
    rec.fact("wide_image", 224)
    rec.fact("exercise_image", 512)
    rec.fact("in1k_images", "1.3 million", text="1.3 million")
    rec.fact("in21k_images", "14 million", text="14 million")
    rec.fact("jft_images", "300 million", text="300 million")
    return table5
