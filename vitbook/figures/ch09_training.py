"""Chapter 9, Training, fine-tuning and higher resolution: every run of vitbook.runs, drawn."""

from __future__ import annotations

import inspect
import math

import numpy as np
from matplotlib.ticker import MaxNLocator

from vitbook import plot, runs
from vitbook.data.shapes import FINETUNE_CLASSES, PRETRAIN_CLASSES, make_shapes
from vitbook.engine import facts, figure

NAMES = {"cnn": "small CNN", "vit_scratch": "ViT from scratch", "vit_head": "ViT head only",
         "vit_full": "ViT full fine-tune"}  # fmt: skip
DIGITS_EPOCHS = 500  # the lesson trains 150; with timm's initialisation the model needs longer
COLOURS = {"cnn": "purple", "vit_scratch": "red", "vit_head": "blue", "vit_full": "green"}


@figure(chapter=9, id="digits-curves", size=(7.2, 3.0), trained=True)
def digits_curves(rec):
    """TinyViT8 on scikit-learn's digits: training loss and train/test accuracy per epoch."""
    r = runs.digits_tinyvit8(epochs=DIGITS_EPOCHS)
    h = r["history"]
    rec.fact("digits_params", r["model"].num_params(), "{:,}")
    rec.fact("digits_n_train", r["n_train"], "{:,}")
    rec.fact("digits_n_test", r["n_test"])
    rec.fact("digits_epochs", h.epochs)
    rec.fact("digits_acc", h.final_test_acc, "{:.1%}")
    rec.fact("digits_acc_150", h.test_acc[149], "{:.1%}")
    rec.fact("digits_train_acc", h.train_acc[-1], "{:.1%}")
    rec.fact("digits_first_95", next(i + 1 for i, a in enumerate(h.test_acc) if a > 0.95))
    rec.fact("digits_loss_start", h.train_loss[0], "{:.2f}")
    rec.fact("ln10", math.log(10), "{:.2f}")
    rec.fact("digits_seconds", h.seconds, "{:.0f}", measured=True)
    return {"loss": h.train_loss, "train": h.train_acc, "test": h.test_acc}


@digits_curves.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2) = plot.subplots(v, 1, 2)
    ep = np.arange(1, len(d["loss"]) + 1)
    a1.plot(ep, d["loss"], color=c["blue"])
    a1.set(xlabel="epoch (one full-batch step)", ylabel="training loss (cross-entropy)",
           title="Loss")  # fmt: skip
    a2.plot(ep, 100 * np.array(d["train"]), color=c["blue"], lw=1.5)
    a2.plot(ep, 100 * np.array(d["test"]), color=c["orange"], lw=1.5)
    plot.label_line(a2, ep[-1], 104, "train", c["blue"], ha="right")
    plot.label_line(a2, ep[-1], 100 * d["test"][-1] - 8, "test", c["orange"], ha="right")
    a2.axhline(95, color=c["muted"], lw=0.8, ls="--")
    a2.text(5, 96, "95%", color=c["muted"], fontsize=8, va="bottom")
    a2.axvline(150, color=c["muted"], lw=0.8, ls=":")
    a2.text(152, 30, "epoch 150", color=c["muted"], fontsize=8)
    a2.set(xlabel="epoch (one full-batch step)", ylabel="accuracy (%)", ylim=(0, 108),
           title="Accuracy")  # fmt: skip
    return fig


@figure(chapter=9, id="shapes-data", size=(7.2, 2.2))
def shapes_data(rec):
    """Examples of the two synthetic tasks, with each object's box."""
    pre = make_shapes(12, classes=PRETRAIN_CLASSES, seed=100)
    fine = make_shapes(8, classes=FINETUNE_CLASSES, seed=101)
    rec.fact("pretrain_classes", len(PRETRAIN_CLASSES))
    rec.fact("finetune_classes", len(FINETUNE_CLASSES))
    rec.fact("pretrain_class_names", ", ".join(PRETRAIN_CLASSES))
    rec.fact("finetune_class_names", ", ".join(FINETUNE_CLASSES))
    return {"pre": pre, "fine": fine}


@shapes_data.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 2, 10, layout=None)
    fig.subplots_adjust(left=0.06, right=0.995, top=0.9, bottom=0.02, wspace=0.12, hspace=0.4)
    items = [(d["pre"], i) for i in range(10)] + [(d["fine"], i) for i in range(8)]
    for ax in axes.flat:
        ax.set_axis_off()
    for k, (s, i) in enumerate(items):
        ax = axes.flat[k if k < 10 else k + 1]
        ax.set_axis_on()
        plot.show_image(ax, s.images[i].transpose(1, 2, 0))
        x0, y0, x1, y1 = s.boxes[i]
        ax.add_patch(plot.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False,
                                    ec=c["fg"], lw=0.8, ls="--"))  # fmt: skip
        ax.set_title(s.classes[s.labels[i]], fontsize=8, loc="center", fontweight="normal")
    for row, name in enumerate(("pre-train", "fine-tune")):
        box = axes[row, 0].get_position()
        fig.text(0.03, (box.y0 + box.y1) / 2, name, rotation=90, ha="center", va="center",
                 fontsize=9)  # fmt: skip
    return fig


@figure(chapter=9, id="pretrain-curves", size=(7.2, 2.9), trained=True)
def pretrain_curves(rec):
    """The small ViT pre-trained on the six shapes: loss and accuracy per epoch, and the
    learning rate it followed."""
    r = runs.pretrained_shapes_vit()
    h, cfg = r["history"], r["cfg"]
    rec.fact("pre_params", r["model"].num_params(), "{:,}")
    rec.fact("pre_n_train", r["n_train"], "{:,}")
    rec.fact("pre_epochs", h.epochs)
    rec.fact("pre_acc", h.final_test_acc, "{:.1%}")
    rec.fact("pre_train_acc", h.train_acc[-1], "{:.1%}")
    rec.fact("pre_seconds", h.seconds, "{:.0f}", measured=True)
    rec.fact("pre_tokens", cfg.num_patches)
    rec.fact("pre_grid", cfg.grid[0])
    rec.fact("chance_pre", 1 / len(PRETRAIN_CLASSES), "{:.0%}")
    return {"loss": h.train_loss, "train": h.train_acc, "test": h.test_acc, "lr": h.lr}


@pretrain_curves.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2, a3) = plot.subplots(v, 1, 3)
    ep = np.arange(1, len(d["loss"]) + 1)
    a1.plot(ep, d["loss"], color=c["blue"], marker="o", ms=3)
    a1.set(xlabel="epoch", ylabel="training loss", title="Loss")
    a2.plot(ep, 100 * np.array(d["train"]), color=c["blue"], marker="o", ms=3)
    a2.plot(ep, 100 * np.array(d["test"]), color=c["orange"], marker="o", ms=3)
    plot.label_line(a2, ep[-1], 100 * d["train"][-1] + 7, "train", c["blue"], ha="right")
    plot.label_line(a2, ep[-1], 100 * d["test"][-1] - 7, "test", c["orange"], ha="right")
    a2.set(xlabel="epoch", ylabel="accuracy (%)", ylim=(0, 102), title="Accuracy")
    a3.plot(ep, np.array(d["lr"]) * 1e3, color=c["green"], marker="o", ms=3)
    a3.set(xlabel="epoch", ylabel="learning rate (×10⁻³)", title="Schedule")
    for ax in (a1, a2, a3):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


@figure(chapter=9, id="transfer", size=(7.2, 3.4), trained=True)
def transfer(rec):
    """Test accuracy on the four new shapes against training-set size: small CNN, ViT from
    scratch, and the pre-trained ViT fine-tuned head only or fully."""
    r = runs.transfer_sweep()
    sizes = r["sizes"]
    acc = {k: [r["runs"][n][k].final_test_acc for n in sizes] for k in NAMES}
    for k in NAMES:
        for n, a in zip(sizes, acc[k], strict=True):
            rec.fact(f"{k}_{n}", a, "{:.1%}")
    secs = sum(h.seconds for n in sizes for h in r["runs"][n].values())
    rec.fact("transfer_seconds", secs, "{:.0f}", measured=True)
    rec.fact("cnn_params", r["cnn_params"], "{:,}")
    rec.fact("vit_params", r["vit_params"], "{:,}")
    rec.fact("cnn_width", r["cnn_width"])
    rec.fact("transfer_sizes", ", ".join(str(n) for n in sizes))
    passes = inspect.signature(runs.transfer_sweep).parameters["passes"].default
    rec.fact("transfer_passes", passes, "{:,}")
    rec.fact("size_small", sizes[0])
    rec.fact("size_mid", sizes[1])
    rec.fact("size_large", sizes[-1], "{}")
    rec.fact("chance_fine", 1 / len(FINETUNE_CLASSES), "{:.0%}")
    mid = sizes[1]
    points = {"fmt": "{:.1f}"}  # differences in percentage points
    rec.fact("head_vs_scratch_mid", 100 * (acc["vit_head"][1] - acc["vit_scratch"][1]), **points)
    rec.fact("cnn_minus_scratch_large", 100 * (acc["cnn"][-1] - acc["vit_scratch"][-1]), **points)
    rec.fact("full_minus_scratch_small", 100 * (acc["vit_full"][0] - acc["vit_scratch"][0]),
             **points)  # fmt: skip
    curves = {k: [r["runs"][mid][k].test_acc] for k in NAMES}
    return {"sizes": sizes, "acc": acc, "curves": curves, "mid": mid}


@transfer.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    for k, name in NAMES.items():
        y = 100 * np.array(d["acc"][k])
        ax.plot(d["sizes"], y, color=c[COLOURS[k]], marker="o")
        plot.label_line(ax, d["sizes"][-1], y[-1], name, c[COLOURS[k]])
    ax.axhline(100 / len(FINETUNE_CLASSES), color=c["muted"], lw=0.8, ls="--")
    ax.text(d["sizes"][0], 100 / len(FINETUNE_CLASSES) + 1.5, "chance", color=c["muted"],
            fontsize=8)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xticks(d["sizes"], [str(s) for s in d["sizes"]])
    ax.minorticks_off()
    ax.set_xlim(d["sizes"][0] * 0.8, d["sizes"][-1] * 3.2)
    ax.set(xlabel="training images of the new task (log scale)", ylabel="test accuracy (%)",
           ylim=(0, 102))  # fmt: skip
    ax.grid(axis="y")
    return fig


@figure(chapter=9, id="lr-sweep", size=(7.2, 3.1), trained=True)
def lr_sweep(rec):
    """Full fine-tuning with plain Adam at four constant learning rates, and the second highest
    again with warm-up, cosine decay and gradient clipping."""
    r = runs.lr_sweep()
    plain = r["plain"]
    lrs = sorted(plain)
    for i, lr in enumerate(lrs):
        h = plain[lr]
        rec.fact(f"lr{i}", f"{lr:g}")
        rec.fact(f"lr{i}_acc", h.final_test_acc, "{:.1%}")
        rec.fact(f"lr{i}_loss", h.train_loss[-1], "{:.2f}")
        rec.fact(f"lr{i}_max_loss", float(np.nanmax(h.train_loss)), "{:.2f}")
    rec.fact("safe_lr", f"{r['safe_lr']:g}")
    rec.fact("safe_acc", r["safe"].final_test_acc, "{:.1%}")
    rec.fact("safe_loss", r["safe"].train_loss[-1], "{:.2f}")
    rec.fact("sweep_epochs", r["epochs"])
    sweep_seconds = sum(h.seconds for h in plain.values()) + r["safe"].seconds
    rec.fact("sweep_seconds", sweep_seconds, "{:.0f}", measured=True)
    return {
        "lrs": lrs,
        "loss": {lr: plain[lr].train_loss for lr in lrs},
        "acc": {lr: plain[lr].test_acc for lr in lrs},
        "safe_lr": r["safe_lr"],
        "safe_loss": r["safe"].train_loss,
        "safe_acc": r["safe"].test_acc,
    }


@lr_sweep.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2) = plot.subplots(v, 1, 2)
    cols = [c["blue"], c["green"], c["purple"], c["red"]]
    for col, lr in zip(cols, d["lrs"], strict=False):
        ep = np.arange(1, len(d["loss"][lr]) + 1)
        a1.plot(ep, d["loss"][lr], color=col, marker="o", ms=3, label=f"Adam, lr {lr:g}")
        a2.plot(ep, 100 * np.array(d["acc"][lr]), color=col, marker="o", ms=3)
    ep = np.arange(1, len(d["safe_loss"]) + 1)
    a1.plot(ep, d["safe_loss"], color=c["fg"], ls="--", marker="s", ms=3,
            label=f"lr {d['safe_lr']:g}\n+ warm-up + clip")  # fmt: skip
    a2.plot(ep, 100 * np.array(d["safe_acc"]), color=c["fg"], ls="--", marker="s", ms=3)
    fig.legend(loc="outside right center", fontsize=8)
    a1.set_yscale("log")
    a1.set(xlabel="epoch", ylabel="training loss (log scale)", title="Training loss")
    a2.set(xlabel="epoch", ylabel="test accuracy (%)", ylim=(0, 102), title="Test accuracy")
    for ax in (a1, a2):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


@figure(chapter=9, id="interpolated-pos", size=(7.2, 3.6), trained=True)
def interpolated_pos(rec):
    """Four dimensions of the learned position table on its 8×8 grid and after bicubic
    resampling to 12×12."""
    r = runs.higher_resolution()
    pre = runs.pretrained_shapes_vit()["model"]
    old = pre.pos_embed.detach()[0, 1:].numpy()  # (64, D)
    new = r["interpolated_table"][0, 1:].numpy()  # (144, D)
    (gh, gw), (nh, nw) = r["old_grid"], r["new_grid"]
    # the four dimensions with the most variance across positions
    dims = np.argsort(-old.var(axis=0))[:4]
    rec.fact("old_grid", f"{gh}×{gw}")
    rec.fact("new_grid", f"{nh}×{nw}")
    rec.fact("hires_size", r["size"])
    cls_same = bool(
        np.allclose(r["interpolated_table"][0, 0].numpy(), pre.pos_embed[0, 0].detach().numpy())
    )
    rec.fact("cls_untouched", "yes" if cls_same else "no")
    for name in ("interpolated", "fresh"):
        rec.fact(f"hires_{name}_before", r[name]["before"], "{:.1%}")
        rec.fact(f"hires_{name}_after", r[name]["history"].final_test_acc, "{:.1%}")
    rec.fact("hires_epochs", r["interpolated"]["history"].epochs)
    hires_seconds = sum(r[n]["history"].seconds for n in ("interpolated", "fresh"))
    rec.fact("hires_seconds", hires_seconds, "{:.0f}", measured=True)
    rec.fact("pre_acc_32", runs.pretrained_shapes_vit()["history"].final_test_acc, "{:.1%}")
    return {
        "old": old[:, dims].T.reshape(4, gh, gw), "new": new[:, dims].T.reshape(4, nh, nw),
        "dims": dims.tolist(),
        "acc": {n: (r[n]["before"], r[n]["history"].final_test_acc) for n in r if n in NEW},
    }  # fmt: skip


NEW = ("interpolated", "fresh")


@interpolated_pos.draw
def _(d, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    grid = fig.add_gridspec(2, 5, width_ratios=[1, 1, 1, 1, 1.6])
    for i in range(4):
        lim = np.abs(d["old"][i]).max()
        for row, key in enumerate(("old", "new")):
            ax = fig.add_subplot(grid[row, i])
            ax.imshow(d[key][i], cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            g = d[key][i].shape[0]
            ax.set_title(f"dim {d['dims'][i]}, {g}×{g}", fontsize=8, loc="center",
                         fontweight="normal")  # fmt: skip
    ax = fig.add_subplot(grid[:, 4])
    names = ["interpolated", "fresh"]
    x = np.arange(2)
    before = [100 * d["acc"][n][0] for n in names]
    after = [100 * d["acc"][n][1] for n in names]
    ax.bar(x - 0.2, before, 0.38, color=c["muted"])
    ax.bar(x + 0.2, after, 0.38, color=c["blue"])
    for xi, b, a in zip(x, before, after, strict=True):
        ax.text(xi - 0.2, b + 1, f"{b:.0f}", ha="center", fontsize=8)
        ax.text(xi + 0.2, a + 1, f"{a:.0f}", ha="center", fontsize=8)
    ax.set_xticks(x, ["interpolated\ntable", "fresh\ntable"])
    ax.set(ylabel="test accuracy at 48×48 (%)", ylim=(0, 110))
    ax.text(-0.4, 104, "grey: before, blue: after fine-tuning", fontsize=8, color=c["fg"])
    return fig


@figure(chapter=9, id="participant-leak", size=(7.2, 2.8), trained=True)
def participant_leak(rec):
    """The same k-nearest-neighbour classifier, scored by 5-fold cross-validation with a
    frame-level random split and with a participant-level GroupKFold split."""
    r = runs.participant_leak()
    rec.fact("leak_people", r["n_people"])
    rec.fact("leak_frames", r["frames"])
    rec.fact("leak_folds", r["folds"])
    rec.fact("leak_frame_acc", float(r["frame_split"].mean()), "{:.1%}")
    rec.fact("leak_person_acc", float(r["person_split"].mean()), "{:.1%}")
    rec.fact("leak_chance", r["chance"], "{:.0%}")
    gap = float(r["frame_split"].mean() - r["person_split"].mean())
    rec.fact("leak_gap", 100 * gap, "{:.0f}")
    return {"frame": r["frame_split"], "person": r["person_split"], "chance": r["chance"]}


@participant_leak.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    rows = [("frame-level split\n(KFold, shuffled)", d["frame"], c["red"]),
            ("participant-level split\n(GroupKFold)", d["person"], c["blue"])]  # fmt: skip
    for y, (_, scores, col) in enumerate(rows):
        ax.barh(y, 100 * scores.mean(), color=col, height=0.55)
        ax.plot(100 * scores, np.full(len(scores), y), "o", color=c["fg"], ms=4)
        ax.text(100 * max(scores.mean(), scores.max()) + 2, y, f"mean {100 * scores.mean():.0f}%",
                va="center", fontsize=9)  # fmt: skip
    ax.axvline(100 * d["chance"], color=c["muted"], ls="--", lw=1)
    ax.text(100 * d["chance"] + 1, -0.45, "chance", color=c["muted"], fontsize=8)
    ax.set_yticks([0, 1], [r[0] for r in rows])
    ax.set(xlabel="cross-validated accuracy (%); dots: the five folds", xlim=(0, 118),
           ylim=(-0.5, 1.5))  # fmt: skip
    return fig


@facts(chapter=9, id="recipes")
def recipes(rec):
    """The paper's pre-training and fine-tuning settings (Dosovitskiy et al. 2021)."""
    rec.fact("paper_pre_batch", 4096, "{:,}")
    rec.fact("paper_pre_wd", 0.1)
    rec.fact("paper_pre_warmup", "10k")
    rec.fact("paper_ft_batch", 512)
    rec.fact("paper_ft_momentum", 0.9)
    rec.fact("paper_ft_res", 384)
    rec.fact("paper_scratch_lr", "3e-3")
    rec.fact("paper_scratch_wd", 0.3)
    rec.fact("paper_scratch_epochs", 300)
    return {}
