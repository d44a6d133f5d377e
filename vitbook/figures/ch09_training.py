"""Chapter 9, Training, fine-tuning and higher resolution: every run of vitbook.runs, drawn."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from vitbook import plot, runs
from vitbook.analysis import interpolate_pos_embed
from vitbook.data.shapes import FINETUNE_CLASSES, PRETRAIN_CLASSES, make_shapes
from vitbook.engine import facts, figure
from vitbook.experiments import finetune, hires, lrsweep, pretrain, stats, transfer
from vitbook.model import preset
from vitbook.quoted import quote

NAMES = {"cnn": "small CNN", "vit_scratch": "ViT from scratch", "vit_head": "ViT head only",
         "vit_full": "ViT full fine-tune"}  # fmt: skip
DIGITS_EPOCHS = 300  # the lab's EPOCHS: the same recipe, the same length
SEEDS = stats.seeds(5)  # every comparison drawn from training: five seeds at least
SEEDS10 = stats.seeds(10)  # where a run can fail (diverge, or collapse to chance): ten
SIZES = transfer.TRANSFER_SIZES  # training images of the four-shape task
LRS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
SWEEP_MODELS = {"cnn": "small CNN (from scratch)", "vit_full": "ViT (pre-trained, fine-tuned)"}
RECIPES = {"plain": "constant", "warmup": "+ warm-up", "cosine": "+ cosine decay",
           "clip": "+ clipping", "all": "all three"}  # fmt: skip
RECIPE_LR = 1e-2  # the rate at which the recipes are compared
RECIPE_WARM_EPOCHS = 2  # lr_run's warm-up in its "warmup" and "all" recipes, in epochs
EARLY_STEPS = 100  # a short budget, read off the transfer runs' validation curves
#: A learning-rate run at chance: below this test accuracy (chance is 25%; the runs that learn
#: the four shapes end far above it).
COLLAPSE_BELOW = 0.4


COLOURS = {"cnn": "purple", "vit_scratch": "red", "vit_head": "blue", "vit_full": "green"}


@figure(chapter=9, id="digits-curves", size=(7.2, 3.0), trained=True, phone_size=6.4)
def digits_curves(rec):
    """TinyViT8 on scikit-learn's digits with the book's initialisation and with PyTorch's
    defaults (the lab's), the same seeds: training loss and test accuracy per epoch."""
    r = {init: [runs.digits_run(epochs=DIGITS_EPOCHS, seed=s, init=init) for s in SEEDS]
         for init in ("book", "pytorch")}  # fmt: skip
    first = r["book"][0]
    rec.fact("digits_params", first["model"].num_params(), "{:,}")
    dcfg = first["model"].cfg
    rec.fact("digits_dim", dcfg.dim)
    rec.fact("digits_heads", dcfg.heads)
    rec.fact("digits_depth", dcfg.depth)
    rec.fact("digits_n_train", first["n_train"], "{:,}")
    rec.fact("digits_n_test", first["n_test"])
    rec.fact("digits_epochs", first["history"].epochs)
    rec.fact("digits_seeds", len(SEEDS))
    final = {k: [x["history"].final_test_acc for x in v] for k, v in r.items()}
    at150 = {k: [x["history"].test_acc[149] for x in v] for k, v in r.items()}
    stats.record(rec, "digits_acc", final["book"])
    stats.record(rec, "digits_acc_150", at150["book"])
    stats.record(rec, "lab_acc", final["pytorch"])
    stats.record(rec, "lab_acc_150", at150["pytorch"])
    rec.fact("init_verdict", stats.verdict(final["pytorch"], final["book"]))
    rec.fact("init_verdict_150", stats.verdict(at150["pytorch"], at150["book"]))
    first95 = [next((i + 1 for i, a in enumerate(x["history"].test_acc) if a > 0.95), None)
               for x in r["book"]]  # fmt: skip
    rec.fact("digits_reached_95", sum(f is not None for f in first95), tol=1)
    loss0 = [x["history"].train_loss[0] for x in r["book"]]
    rec.fact("digits_loss_start", float(np.mean(loss0)), "{:.2f}", tol=stats.tolerance(loss0))
    rec.fact("ln10", math.log(10), "{:.2f}")
    rec.fact("digits_lr", max(first["history"].lr), "{:g}")  # a constant rate: digits_run's
    secs = [x["history"].seconds for v in r.values() for x in v]
    rec.fact("digits_seconds", float(np.mean(secs)), "{:.0f}", measured=True)
    return {k: {"loss": [x["history"].train_loss for x in v],
                "test": [x["history"].test_acc for x in v]} for k, v in r.items()}  # fmt: skip


@digits_curves.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2) = plot.subplots(v, 1, 2, phone_cols=1)
    names = {
        "book": ("book (timm's) init", c["blue"]),
        "pytorch": ("PyTorch default (lab)", c["orange"]),
    }
    for key, (label, col) in names.items():
        loss, test = np.array(d[key]["loss"]), 100 * np.array(d[key]["test"])
        ep = np.arange(1, loss.shape[1] + 1)
        for row_l, row_t in zip(loss, test, strict=True):
            a1.plot(ep, row_l, color=col, lw=0.6, alpha=0.6)
            a2.plot(ep, row_t, color=col, lw=0.6, alpha=0.6)
        a1.plot(ep, loss.mean(0), color=col, lw=1.8, label=label)
        a2.plot(ep, test.mean(0), color=col, lw=1.8)
    a1.legend(loc="upper right", fontsize=8)
    a1.set(xlabel="epoch (one full-batch step)", ylabel="training loss (cross-entropy)",
           title="Loss")  # fmt: skip
    a2.axhline(95, color=c["muted"], lw=0.8, ls="--")
    a2.text(5, 96, "95%", color=c["muted"], fontsize=8, va="bottom")
    a2.axvline(150, color=c["muted"], lw=0.8, ls=":")
    a2.text(152, 30, "epoch 150", color=c["muted"], fontsize=8)
    a2.set(xlabel="epoch (one full-batch step)", ylabel="test accuracy (%)", ylim=(0, 108),
           title="Test accuracy")  # fmt: skip
    return fig


@figure(chapter=9, id="shapes-data", size=(7.2, 2.2), phone_size=3.4)
def shapes_data(rec):
    """Examples of the two synthetic tasks, with each object's box."""
    pre = make_shapes(12, classes=PRETRAIN_CLASSES, seed=100)
    fine = make_shapes(8, classes=FINETUNE_CLASSES, seed=101)
    rec.fact("pretrain_classes", len(PRETRAIN_CLASSES))
    rec.fact("finetune_classes", len(FINETUNE_CLASSES))
    rec.fact("pretrain_class_names", ", ".join(PRETRAIN_CLASSES))
    rec.fact("finetune_class_names", ", ".join(FINETUNE_CLASSES))
    side = inspect.signature(make_shapes).parameters  # the object's side, in pixels
    rec.fact("obj_min", side["min_obj"].default)
    rec.fact("obj_max", side["max_obj"].default)
    return {"pre": pre, "fine": fine}


@shapes_data.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 2, 10, layout=None, phone_cols=5)
    if plot.is_phone(v):
        fig.subplots_adjust(left=0.1, right=0.99, top=0.94, bottom=0.01, wspace=0.12, hspace=0.45)
    else:
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
        if plot.is_phone(v):  # two rows of five per set: centred on both
            box2 = axes[row, 5].get_position()
            box = type(box)([[box.x0, box2.y0], [box.x1, box.y1]])
        fig.text(0.03 if not plot.is_phone(v) else 0.04, (box.y0 + box.y1) / 2, name, rotation=90,
                 ha="center", va="center", fontsize=9)  # fmt: skip
    return fig


@figure(chapter=9, id="pretrain-curves", size=(7.2, 2.9), trained=True, phone_size=7.8)
def pretrain_curves(rec):
    """The small ViT pre-trained on the six shapes: loss and accuracy per epoch, and the
    learning rate it followed; seed 0 (the model every later run starts from) and the other
    seeds of the same recipe (the models Chapter 10 checks its findings on)."""
    r = runs.pretrained_shapes_vit()
    others = [runs.pretrained_shapes_vit(seed=s)["history"] for s in runs.PRE_SEEDS[1:]]
    h, cfg = r["history"], r["cfg"]
    rec.fact("pre_params", r["model"].num_params(), "{:,}")
    rec.fact("pre_n_train", r["n_train"], "{:,}")
    rec.fact("pre_epochs", h.epochs)
    rec.fact("pre_acc", h.final_test_acc, "{:.1%}", tol=0.03)
    rec.fact("pre_train_acc", h.train_acc[-1], "{:.1%}", tol=0.03)
    stats.record(rec, "pre_train_acc_seeds", [x.train_acc[-1] for x in (h, *others)])
    rec.fact("pre_seeds", len(runs.PRE_SEEDS))
    stats.record(rec, "pre_acc_seeds", [x.final_test_acc for x in (h, *others)])
    # seed 0's model is the one every later run starts from: where does it rank among the draws?
    rec.fact("pre_others", len(others))
    rec.fact("pre_seed0_above", sum(x.final_test_acc < h.final_test_acc for x in others))
    rec.fact("pre_seconds", h.seconds, "{:.0f}", measured=True)
    rec.fact("pre_tokens", cfg.num_patches)
    rec.fact("pre_size", cfg.image_size)
    rec.fact("pre_patch", cfg.patch_size)
    rec.fact("pre_dim", cfg.dim)
    rec.fact("pre_heads", cfg.heads)
    rec.fact("pre_depth", cfg.depth)
    rec.fact("pre_grid", cfg.grid[0])
    rec.fact("chance_pre", 1 / len(PRETRAIN_CLASSES), "{:.0%}")
    return {"loss": h.train_loss, "train": h.train_acc, "test": h.test_acc, "lr": h.lr,
            "others": [{"loss": x.train_loss, "test": x.test_acc} for x in others],
            "other_seeds": list(runs.PRE_SEEDS[1:])}  # fmt: skip


@pretrain_curves.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2, a3) = plot.subplots(v, 1, 3, phone_cols=1)
    ep = np.arange(1, len(d["loss"]) + 1)
    for o in d["others"]:  # the other seeds, thin and behind
        a1.plot(ep, o["loss"], color=c["muted"], lw=0.9)
        a2.plot(ep, 100 * np.array(o["test"]), color=c["muted"], lw=0.9)
    a1.plot(ep, d["loss"], color=c["blue"], marker="o", ms=3)
    seeds = f"seeds {d['other_seeds'][0]} to {d['other_seeds'][-1]}"
    a1.text(0.04, 0.04, f"blue: seed 0\ngrey: {seeds}", color=c["muted"], fontsize=8,
            va="bottom", ha="left", transform=a1.transAxes)  # fmt: skip
    a1.set(xlabel="epoch", ylabel="training loss", title="Loss")
    a2.plot(ep, 100 * np.array(d["train"]), color=c["blue"], marker="o", ms=3)
    a2.plot(ep, 100 * np.array(d["test"]), color=c["orange"], marker="o", ms=3)
    plot.label_line(a2, ep[-1], 100 * d["train"][-1] + 7, "seed 0: train", c["blue"], ha="right")
    plot.label_line(a2, ep[-1], 100 * d["test"][-1] - 7, "test", c["orange"], ha="right")
    a2.text(ep[0], 95, f"grey: test, {seeds}", color=c["muted"], fontsize=8, va="top")
    a2.set(xlabel="epoch", ylabel="accuracy (%)", ylim=(0, 102), title="Accuracy")
    a3.plot(ep, np.array(d["lr"]) * 1e3, color=c["green"], marker="o", ms=3)
    a3.set(xlabel="epoch", ylabel="learning rate (×10⁻³)", title="Schedule")
    for ax in (a1, a2, a3):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


@figure(chapter=9, id="transfer", size=(7.2, 3.4), trained=True, phone_size=4.4)
def transfer_by_size(rec):
    """Test accuracy on the four new shapes against training-set size: small CNN, ViT from
    scratch, and the pre-trained ViT fine-tuned head only or fully; each run read at its best
    validation checkpoint; one point per seed, the line through the means."""
    r = {k: [[runs.transfer_run(n_train=n, arm=k, seed=s) for s in SEEDS] for n in SIZES]
         for k in NAMES}  # fmt: skip
    acc = {k: [[x["acc"] for x in row] for row in r[k]] for k in NAMES}  # (sizes, seeds)
    for k in NAMES:
        for n, vals in zip(SIZES, acc[k], strict=True):
            stats.record(rec, f"{k}_{n}", vals)
    for i, n in enumerate(SIZES):  # the comparisons the text makes, one per size
        rec.fact(f"cnn_vs_scratch_{n}", stats.verdict(acc["cnn"][i], acc["vit_scratch"][i]))
        rec.fact(f"full_vs_scratch_{n}", stats.verdict(acc["vit_full"][i], acc["vit_scratch"][i]))
        rec.fact(f"full_vs_cnn_{n}", stats.verdict(acc["vit_full"][i], acc["cnn"][i]))
        rec.fact(f"full_vs_head_{n}", stats.verdict(acc["vit_full"][i], acc["vit_head"][i]))
    # does more data help the ViT trained from scratch? smallest against largest set
    rec.fact("scratch_large_vs_small", stats.verdict(acc["vit_scratch"][-1], acc["vit_scratch"][0]))
    rec.fact("cnn_large_vs_small", stats.verdict(acc["cnn"][-1], acc["cnn"][0]))
    gain = np.mean(acc["vit_scratch"][-1]) - np.mean(acc["vit_scratch"][0])
    tol = 100 * stats.tolerance(acc["vit_scratch"][-1])
    rec.fact("scratch_gain", 100 * gain, "{:.0f}", tol=tol)
    # what a short budget shows: the ViT from scratch at its last validation measurement within
    # the first EARLY_STEPS steps, at each size (the budget an earlier edition gave every arm)
    early = [[_val_at(x, EARLY_STEPS) for x in row] for row in r["vit_scratch"]]
    for n, vals in zip(SIZES, early, strict=True):
        stats.record(rec, f"scratch_early_{n}", vals)
    rec.fact("early_steps", EARLY_STEPS)
    rec.fact("early_large_vs_small", stats.verdict(early[-1], early[0]))
    chance = 1 / len(FINETUNE_CLASSES)
    for k in NAMES:
        rec.fact(f"steps_{k}_small", transfer.transfer_steps(k, SIZES[0]), "{:,}")
        rec.fact(f"steps_{k}_mid", transfer.transfer_steps(k, SIZES[1]), "{:,}")
        rec.fact(f"steps_{k}_large", transfer.transfer_steps(k, SIZES[-1]), "{:,}")
    # a budget that decides nothing: where in its budget did each run peak?
    late = {k: [[x["best_step"] > 0.8 * x["steps"] for x in row] for row in r[k]] for k in NAMES}
    rec.fact("late_peaks", sum(v for k in NAMES for row in late[k] for v in row), tol=2)
    rec.fact("transfer_runs", len(NAMES) * len(SIZES) * len(SEEDS))
    rec.fact("late_scratch_large", sum(late["vit_scratch"][-1]), tol=1)
    # is a late peak noise on a flat curve or a curve still rising? the validation accuracy of
    # the last quarter of the budget against the quarter before, for every arm and size
    for k in NAMES:
        for n, row in zip(SIZES, r[k], strict=True):
            rec.fact(f"tail_{k}_{n}", 100 * np.mean([_tail_gain(x) for x in row]), "{:+.1f}",
                     tol=1.0)  # fmt: skip
    # the smallest set's ViT from scratch: training accuracy at the end (it memorised)
    stats.record(rec, "vit_scratch_100_train", [x["train_acc"] for x in r["vit_scratch"][0]])
    rec.fact("transfer_seeds", len(SEEDS))
    rec.fact("eval_steps", transfer.EVAL_STEPS)
    rec.fact("fine_val", finetune.FINETUNE_VAL)
    secs = sum(x["seconds"] for k in NAMES for row in r[k] for x in row)
    rec.fact("transfer_seconds", secs, "{:.0f}", measured=True)
    rec.fact("cnn_params", r["cnn"][0][0]["params"], "{:,}")
    rec.fact("vit_params", r["vit_scratch"][0][0]["params"], "{:,}")
    rec.fact("transfer_sizes", ", ".join(str(n) for n in SIZES))
    rec.fact("size_small", SIZES[0])
    rec.fact("size_mid", SIZES[1])
    rec.fact("size_large", SIZES[-1], "{}")
    rec.fact("chance_fine", chance, "{:.0%}")
    rec.fact("fine_test", finetune.FINETUNE_TEST)
    curves = {k: [[(x["val_steps"], x["val_acc"]) for x in row] for row in r[k]] for k in NAMES}
    return {"sizes": list(SIZES), "acc": acc, "curves": curves}


def _tail_gain(run: dict) -> float:
    """Mean validation accuracy over the last quarter of a run's steps minus that over the
    quarter before: near zero on a flat curve, positive on one still rising."""
    st, acc = np.array(run["val_steps"]), np.array(run["val_acc"])
    q = run["steps"] / 4
    last, before = acc[st > 3 * q], acc[(st > 2 * q) & (st <= 3 * q)]
    return float(last.mean() - before.mean())


def _val_at(run: dict, steps: int) -> float:
    """A transfer run's validation accuracy at its last measurement within ``steps`` steps."""
    return [a for st, a in zip(run["val_steps"], run["val_acc"], strict=True) if st <= steps][-1]


@transfer_by_size.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    sizes = np.array(d["sizes"])
    for j, (k, name) in enumerate(NAMES.items()):
        a = 100 * np.array(d["acc"][k])  # (sizes, seeds)
        shift = sizes * 1.04 ** (j - 1.5)  # spread the arms a little, so points do not hide
        for i in range(a.shape[1]):
            ax.plot(shift, a[:, i], "o", color=c[COLOURS[k]], ms=3.5, alpha=0.7, mfc="none")
        ax.plot(shift, a.mean(1), color=c[COLOURS[k]], lw=2, label=name)
    ax.legend(loc="lower right", bbox_to_anchor=(1, 0.3), fontsize=8)
    ax.axhline(100 / len(FINETUNE_CLASSES), color=c["muted"], lw=0.8, ls="--")
    ax.text(sizes[0] * 0.82, 100 / len(FINETUNE_CLASSES) - 1.5, "chance", color=c["muted"],
            fontsize=8, va="top")  # fmt: skip
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlim(sizes[0] * 0.8, sizes[-1] * 1.25)
    xlabel = plot.pick(
        v,
        "training images of the new task (log scale); each run at its best checkpoint",
        "training images (log scale);\neach run at its best checkpoint",
    )
    ax.set(xlabel=xlabel, ylabel="test accuracy (%)", ylim=(0, 102))
    ax.grid(axis="y")
    return fig


@figure(chapter=9, id="transfer-curves", size=(7.2, 2.8), trained=True, phone_size=7.4)
def transfer_curves(rec):
    """Validation accuracy against optimiser steps for every arm and data size: the budgets
    behind the previous figure, every seed."""
    r = {k: [[runs.transfer_run(n_train=n, arm=k, seed=s) for s in SEEDS] for n in SIZES]
         for k in NAMES}  # fmt: skip
    return {"sizes": list(SIZES),
            "curves": {k: [[(x["val_steps"], x["val_acc"]) for x in row] for row in r[k]]
                       for k in NAMES}}  # fmt: skip


@transfer_curves.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, len(d["sizes"]), phone_cols=1, sharey=True)
    for ax, i, n in zip(axes, range(len(d["sizes"])), d["sizes"], strict=True):
        for k, name in NAMES.items():
            for steps, val in d["curves"][k][i]:
                ax.plot(steps, 100 * np.array(val), color=c[COLOURS[k]], lw=0.7, alpha=0.6)
            steps = d["curves"][k][i][0][0]
            mean = 100 * np.mean([val for _, val in d["curves"][k][i]], axis=0)
            ax.plot(steps, mean, color=c[COLOURS[k]], lw=1.8, label=name)
        ax.axhline(100 / len(FINETUNE_CLASSES), color=c["muted"], lw=0.8, ls="--")
        ax.axvline(EARLY_STEPS, color=c["muted"], lw=0.8, ls=":")
        ax.set(title=f"{n} images", xlabel="optimiser steps", ylim=(0, 102))
    axes[0].set_ylabel("validation accuracy (%)")
    axes[-1].legend(loc="lower right", fontsize=7)
    return fig


@figure(chapter=9, id="lr-sweep", size=(7.2, 3.1), trained=True, phone_size=9.6)
def lr_sweep(rec):
    """Left: final test accuracy against a constant Adam learning rate for the small CNN
    trained from scratch and the pre-trained ViT fine-tuned. Right: the fine-tuned ViT at
    0.01 with warm-up, cosine decay and clipping added one at a time, and all three."""
    sweep = {m: {lr: [runs.lr_run(model=m, lr=lr, seed=s) for s in SEEDS10] for lr in LRS}
             for m in SWEEP_MODELS}  # fmt: skip
    rec.fact("sweep_seeds", len(SEEDS10))
    rec.fact("recipe_seeds", len(SEEDS10))
    final = {m: {lr: [x["final"] for x in sweep[m][lr]] for lr in LRS} for m in SWEEP_MODELS}
    best_lr = {}  # the constant rate with the best mean, per model
    for m in SWEEP_MODELS:
        for i, lr in enumerate(LRS):
            stats.record(rec, f"lr_{m}_{i}", final[m][lr])
            rec.fact(f"lr_{m}_{i}_diverged", sum(x["diverged"] for x in sweep[m][lr]), tol=1)
            rec.fact(f"lr_{m}_{i}_collapsed", _n_below(final[m][lr]), tol=1)
            # runs that never left chance: validation accuracy below the threshold at every epoch
            rec.fact(f"lr_{m}_{i}_never_left", sum(max(x["val"]) < COLLAPSE_BELOW
                                                   for x in sweep[m][lr]), tol=1)  # fmt: skip
            # runs still rising when the budget ends: a higher validation accuracy at the last
            # epoch than at the one before
            rec.fact(f"lr_{m}_{i}_rising", sum(x["val"][-1] > x["val"][-2] for x in sweep[m][lr]),
                     tol=1)  # fmt: skip
        # the best rate is chosen on the validation set; the test set only scores it
        means = [np.mean([x["val_final"] for x in sweep[m][lr]]) for lr in LRS]
        best = int(np.argmax(means))
        best_lr[m] = LRS[best]
        rec.fact(f"lr_{m}_best", f"{LRS[best]:g}")
        # rates that are not clearly worse than the best: at least one seed at or above the
        # best rate's lowest seed (stats.verdict is not "lower"); a coarse test, one seed passes
        good = [lr for lr in LRS
                if stats.verdict(final[m][lr], final[m][LRS[best]]) != "lower"]  # fmt: skip
        rec.fact(f"lr_{m}_good", ", ".join(f"{lr:g}" for lr in good))
        rec.fact(f"lr_{m}_n_good", len(good))
        # how far each rate's best seed ends below the best rate's lowest seed, in points
        # (negative: the ranges overlap): how close a rate that fails the test came to passing;
        # the difference of the two accuracies as the page prints them, so that it matches them
        lowest = min(final[m][LRS[best]])
        for i, lr in enumerate(LRS):
            gap = _printed_gap(lowest, max(final[m][lr]))
            rec.fact(f"lr_{m}_{i}_short", gap, "{:.1f}", tol=1.0)
    for i, lr in enumerate(LRS):
        rec.fact(f"lr{i}", f"{lr:g}")
    rec.fact("lr_n", len(LRS))
    recipes = {k: [runs.lr_run(model="vit_full", lr=RECIPE_LR, seed=s, recipe=k) for s in SEEDS10]
               for k in RECIPES}  # fmt: skip
    for k in RECIPES:
        rec.fact(f"recipe_{k}_collapsed", _n_below([x["final"] for x in recipes[k]]), tol=1)
        # runs that reached the line on the validation set at some epoch before they ended, and
        # runs whose best epoch came within the first RECIPE_WARM_EPOCHS (the warm-up's span)
        rec.fact(f"recipe_{k}_peaked", _n_reached([x["val"] for x in recipes[k]]), tol=1)
        rec.fact(f"recipe_{k}_peak_early", sum(int(np.argmax(x["val"])) < RECIPE_WARM_EPOCHS
                                               for x in recipes[k]), tol=1)  # fmt: skip
    rec.fact("recipe_warm_epochs", RECIPE_WARM_EPOCHS)
    rec.fact("collapse_below", COLLAPSE_BELOW, "{:.0%}")
    # layer-wise learning-rate decay at the best constant rate, against the plain recipe there
    best = best_lr["vit_full"]
    layered = [runs.lr_run(model="vit_full", lr=best, seed=s, recipe="layers")["final"]
               for s in SEEDS10]  # fmt: skip
    stats.record(rec, "layers_acc", layered)
    rec.fact("layers_seeds", len(layered))
    plain = final["vit_full"][best]
    rec.fact("layers_plain", float(np.mean(plain)), "{:.1%}", tol=stats.tolerance(plain))
    rec.fact("layers_vs_plain", stats.verdict(layered, final["vit_full"][best]))
    rec.fact("layer_decay", lrsweep.LAYER_DECAY, "{:g}")
    rec.fact("layer_decay_first", lrsweep.LAYER_DECAY**4, "{:.2f}")
    racc = {k: [x["final"] for x in v] for k, v in recipes.items()}
    for k in RECIPES:
        stats.record(rec, f"recipe_{k}", racc[k])
    # No verdict recipe against recipe: at this rate a run either collapses to chance or partly
    # recovers, and which seeds recover changed with the CPU's vector paths (a rebuild flipped
    # one). What every build showed: all of them end below every run at the best rate.
    pooled = [a for k in RECIPES for a in racc[k]]
    rec.fact("recipe_vs_best", stats.verdict(pooled, final["vit_full"][best_lr["vit_full"]]))
    rec.fact("recipe_max", max(pooled), "{:.1%}", tol=stats.tolerance(pooled))
    rec.fact("recipe_lr", f"{RECIPE_LR:g}")
    rec.fact("sweep_epochs", lrsweep.SWEEP_EPOCHS)
    rec.fact("sweep_n", lrsweep.SWEEP_N)
    rec.fact("sweep_steps", lrsweep.SWEEP_EPOCHS * math.ceil(lrsweep.SWEEP_N / pretrain.BATCH))
    secs = sum(x["seconds"] for m in sweep.values() for v in m.values() for x in v)
    secs += sum(x["seconds"] for v in recipes.values() for x in v)
    rec.fact("sweep_seconds", secs, "{:.0f}", measured=True)
    curves = {lr: [x["val"] for x in sweep["vit_full"][lr]] for lr in LRS}
    return {"final": final, "recipes": racc, "curves": curves}


def _printed_gap(a: float, b: float) -> float:
    """``a - b`` in percentage points, computed from the two accuracies rounded as the page
    prints them (one decimal of a percent), so that the gap matches the printed numbers."""
    return round(float(f"{a:.1%}"[:-1]) - float(f"{b:.1%}"[:-1]), 1)


def _n_below(accs, threshold: float = COLLAPSE_BELOW) -> int:
    """How many runs ended below ``threshold`` test accuracy. Below it a run has learned
    little; whether it collapsed or is still slowly learning, the count does not say (the
    page reads that off the validation curves)."""
    return int(sum(a < threshold for a in accs))


def _n_reached(curves, threshold: float = COLLAPSE_BELOW) -> int:
    """How many runs reached ``threshold`` validation accuracy at some epoch (each curve: the
    accuracy after every epoch), whatever they ended at."""
    return int(sum(max(c) >= threshold for c in curves))


@lr_sweep.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a3, a2) = plot.subplots(v, 1, 3, width_ratios=[1.2, 1, 1], phone_cols=1)
    cols = {"cnn": c["purple"], "vit_full": c["green"]}
    for j, (m, name) in enumerate(SWEEP_MODELS.items()):
        per = 100 * np.array([d["final"][m][lr] for lr in LRS])  # (lrs, seeds)
        x = np.array(LRS) * 1.12 ** (j - 0.5)
        for i in range(per.shape[1]):
            a1.plot(x, per[:, i], "o", color=cols[m], ms=3.5, mfc="none", alpha=0.8)
        a1.plot(x, per.mean(1), color=cols[m], lw=2, label=name)
    plot.log_x(a1, LRS)
    a1.legend(loc="lower left", fontsize=7)
    a1.set(xlabel="Adam learning rate (constant; log)", ylabel="test accuracy (%)",
           ylim=(0, 102), title="Sweep (circles: seeds)")  # fmt: skip
    shades = plot.sequence(v, len(LRS))
    for lr, col in zip(LRS, shades, strict=True):
        curves = 100 * np.array(d["curves"][lr])  # (seeds, epochs)
        ep = np.arange(1, curves.shape[1] + 1)
        a3.plot(ep, curves.mean(0), color=col, lw=1.8, label=f"{lr:g}")
    a3.legend(loc="upper center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=7, title="rate",
              title_fontsize=7, handlelength=1.2, columnspacing=0.8)  # fmt: skip
    a3.set(xlabel="epoch", ylim=(0, 102), title="ViT, per epoch")
    for x, k in enumerate(RECIPES):
        vals = 100 * np.array(d["recipes"][k])
        a2.plot(np.full(len(vals), x), vals, "o", color=c["green"], ms=4, mfc="none")
        a2.plot([x - 0.25, x + 0.25], [vals.mean()] * 2, color=c["green"], lw=2)
    a2.set_xticks(range(len(RECIPES)), list(RECIPES.values()), rotation=30, ha="right",
                  fontsize=8)  # fmt: skip
    a2.set(ylim=(0, 102), title=f"ViT at {RECIPE_LR:g}", ylabel="test accuracy (%)")
    a3.set_ylabel("validation accuracy (%)")
    for ax in (a1, a3, a2):  # chance, and the line below which the page counts a run as failed
        ax.axhline(100 / len(FINETUNE_CLASSES), color=c["muted"], lw=0.8, ls="--")
        ax.axhline(100 * COLLAPSE_BELOW, color=c["muted"], lw=0.8, ls=":")
    for ax, side in ((a1, 0), (a3, 1)):  # named where no seed sits on the label
        x0, ha = ax.get_xlim()[side], ("left", "right")[side]
        ax.text(x0, 100 / len(FINETUNE_CLASSES) - 1, "chance", color=c["muted"], fontsize=7,
                ha=ha, va="top")  # fmt: skip
        ax.text(x0, 100 * COLLAPSE_BELOW + 1, f"{COLLAPSE_BELOW:.0%}", color=c["muted"],
                fontsize=7, ha=ha, va="bottom")  # fmt: skip
    return fig


@figure(chapter=9, id="interpolated-pos", size=(7.2, 3.6), trained=True, phone_size=7.2)
def interpolated_pos(rec):
    """Four dimensions of the learned position table on its 8×8 grid and after bicubic
    resampling to 12×12; accuracy at 48×48 with each table, before and after fine-tuning,
    and the controls that say whether the model uses positions at all."""
    import torch

    from vitbook.train import accuracy

    pre = runs.pretrained_shapes_vit()["model"]
    cfg48 = dataclasses.replace(pre.cfg, image_size=hires.HIRES)
    new_table = interpolate_pos_embed(pre.pos_embed.detach(), pre.cfg.grid, cfg48.grid)
    old = pre.pos_embed.detach()[0, 1:].numpy()  # (64, D)
    new = new_table[0, 1:].numpy()  # (144, D)
    (gh, gw), (nh, nw) = pre.cfg.grid, cfg48.grid
    dims = np.argsort(-old.var(axis=0))[:4]  # the four dimensions with the most variance
    rec.fact("old_grid", f"{gh}×{gw}")
    rec.fact("new_grid", f"{nh}×{nw}")
    rec.fact("hires_size", hires.HIRES)
    cls_same = bool(torch.equal(new_table[0, 0], pre.pos_embed[0, 0].detach()))
    rec.fact("cls_untouched", "yes" if cls_same else "no")
    # controls without any training: does the pre-trained model use its position table?
    train48, test48 = hires.hires_data()
    rec.fact("hires_n_train", len(train48[1]), "{:,}")
    rec.fact("hires_n_test", len(test48[1]))
    test32 = make_shapes(1000, classes=PRETRAIN_CLASSES, seed=pretrain.PRETRAIN_TEST_SEED).tensors()
    rec.fact("pos_n_test_32", len(test32[1]), "{:,}")
    torch.manual_seed(0)
    # the interpolated and the zero table are fixed; a fresh table is a random draw, so its
    # accuracy before fine-tuning is read from the five fine-tuning runs' own draws (below)
    before = {t: accuracy(hires.at_resolution(pre, hires.HIRES, t), test48)
              for t in ("interpolated", "zero")}  # fmt: skip
    at32 = {"learned": accuracy(pre, test32),
            "zero": accuracy(hires.at_resolution(pre, 32, "zero"), test32)}  # fmt: skip
    for t, a in before.items():
        rec.fact(f"hires_{t}_before", a, "{:.1%}", tol=0.03)
    rec.fact("pos_learned_32", at32["learned"], "{:.1%}", tol=0.03)
    rec.fact("pos_zero_32", at32["zero"], "{:.1%}", tol=0.03)
    rec.fact("pos_zero_drop", 100 * (at32["learned"] - at32["zero"]), "{:.1f}", tol=3.0)
    runs_ = {t: [runs.hires_run(table=t, seed=s) for s in SEEDS] for t in ("interpolated", "fresh")}
    after = {t: [x["after"] for x in v] for t, v in runs_.items()}
    drawn = {t: [x["before"] for x in v] for t, v in runs_.items()}  # before, as each run began
    stats.record(rec, "hires_fresh_before", drawn["fresh"])
    rec.fact("hires_before_verdict", stats.verdict(drawn["interpolated"], drawn["fresh"]))
    for t in after:
        stats.record(rec, f"hires_{t}_after", after[t])
    rec.fact("hires_verdict", stats.verdict(after["interpolated"], after["fresh"]))
    rec.fact("hires_seeds", len(SEEDS))
    rec.fact("hires_epochs", runs_["fresh"][0]["epochs"])
    rec.fact("hires_seconds", sum(x["seconds"] for v in runs_.values() for x in v), "{:.0f}",
             measured=True)  # fmt: skip
    rec.fact("pre_acc_32", at32["learned"], "{:.1%}", tol=0.03)
    return {
        "old": old[:, dims].T.reshape(4, gh, gw), "new": new[:, dims].T.reshape(4, nh, nw),
        "dims": dims.tolist(), "before": before, "fresh_before": drawn["fresh"], "after": after,
    }  # fmt: skip


@interpolated_pos.draw
def _(d, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    phone = plot.is_phone(v)
    grid = (
        fig.add_gridspec(3, 5, width_ratios=[1, 1, 1, 1, 0.12], height_ratios=[1, 1, 2.6])
        if phone
        else fig.add_gridspec(2, 6, width_ratios=[1, 1, 1, 1, 0.12, 1.9])
    )
    lim = max(np.abs(d["old"]).max(), np.abs(d["new"]).max())
    for i in range(4):
        for row, key in enumerate(("old", "new")):
            ax = fig.add_subplot(grid[row, i])
            im = ax.imshow(d[key][i], cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            g = d[key][i].shape[0]
            ax.set_title(f"dim {d['dims'][i]}{plot.pick(v, ', ', chr(10))}{g}×{g}", fontsize=8,
                         loc="center", fontweight="normal")  # fmt: skip
    cax = fig.add_subplot(grid[:2, 4] if phone else grid[:, 4])
    fig.colorbar(im, cax=cax, label="table value")
    ax = fig.add_subplot(grid[2, :] if phone else grid[:, 5])
    names = ["interpolated", "fresh"]
    for x, n in enumerate(names):
        if n in d["before"]:  # a fixed table: one value
            ax.plot([x - 0.2], [100 * d["before"][n]], "s", color=c["muted"], ms=6)
        else:  # fresh tables: the fine-tuning runs' own draws, one square each
            pre = 100 * np.array(d["fresh_before"])
            spread = x - 0.2 + np.linspace(-0.08, 0.08, len(pre))  # side by side, not stacked
            ax.plot(spread, pre, "s", color=c["muted"], ms=4)
        vals = 100 * np.array(d["after"][n])
        ax.plot(np.full(len(vals), x + 0.2), vals, "o", color=c["blue"], ms=4, mfc="none")
        ax.plot([x + 0.05, x + 0.35], [vals.mean()] * 2, color=c["blue"], lw=2)
    ax.plot([2 - 0.2], [100 * d["before"]["zero"]], "s", color=c["muted"], ms=6)
    ax.set_xticks([0, 1, 2], ["interpolated\ntable", "fresh\ntable", "zero\ntable"], fontsize=8)
    side = hires.HIRES
    ax.set(ylabel=f"test accuracy at {side}×{side} (%)", ylim=(0, 110), xlim=(-0.5, 2.5))
    handles = [
        Line2D([], [], ls="", marker="s", color=c["muted"], ms=5, label="before"),
        Line2D([], [], ls="", marker="o", color=c["blue"], mfc="none", ms=5,
                    label="after fine-tuning"),
    ]  # fmt: skip
    ax.legend(handles=handles, loc="upper left", fontsize=8, ncol=2, handletextpad=0.3,
              columnspacing=1.0)  # fmt: skip
    return fig


@figure(chapter=9, id="participant-leak", size=(7.2, 2.8), trained=True, phone_size=3.6)
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
    if plot.is_phone(v):
        rows = [("frame-level\n(KFold)", d["frame"], c["red"]),
                ("participant-\nlevel (Group-\nKFold)", d["person"], c["blue"])]  # fmt: skip
    for y, (_, scores, col) in enumerate(rows):
        ax.barh(y, 100 * scores.mean(), color=col, height=0.55)
        ax.plot(100 * scores, np.full(len(scores), y), "o", color=c["fg"], ms=4)
        if plot.is_phone(v):  # inside the bar: beside it the label would cover the dots
            ax.text(2, y - 0.2, f"mean {100 * scores.mean():.0f}%", va="center", fontsize=9,
                    color="white" if not v.dark else "#111111")  # fmt: skip
        else:
            ax.text(100 * max(scores.mean(), scores.max()) + 2, y,
                    f"mean {100 * scores.mean():.0f}%", va="center", fontsize=9)  # fmt: skip
    ax.axvline(100 * d["chance"], color=c["muted"], ls="--", lw=1)
    ax.text(100 * d["chance"] + 1, -0.45, "chance", color=c["muted"], fontsize=8)
    ax.set_yticks([0, 1], [r[0] for r in rows])
    ax.set(xlabel=plot.pick(v, "cross-validated accuracy (%); dots: the five folds",
                            "cross-validated accuracy (%);\ndots: the five folds"), xlim=(0, 118),
           ylim=(-0.5, 1.5))  # fmt: skip
    return fig


@facts(chapter=9, id="recipes")
def recipes(rec):
    """The paper's pre-training and fine-tuning settings (Dosovitskiy et al. 2021)."""
    quote(rec, "paper_pre_batch", 4096, "{:,}")
    quote(rec, "paper_adam_beta1", 0.9)  # section 4.1, "Training & Fine-tuning": Adam, beta1, beta2
    quote(rec, "paper_adam_beta2", 0.999)
    quote(rec, "paper_pre_wd", 0.1)  # Table 3: JFT-300M
    quote(rec, "paper_pre_wd_21k", 0.03)  # Table 3: ImageNet-21k
    quote(rec, "paper_pre_warmup", "10k")
    quote(rec, "paper_ft_batch", 512)
    quote(rec, "paper_ft_momentum", 0.9)
    ft_res = 384  # Table 4 caption: fine-tuning resolution, if not mentioned otherwise
    quote(rec, "paper_ft_res", ft_res)
    quote(rec, "paper_scratch_lr", "3e-3")
    quote(rec, "paper_scratch_wd", 0.3)
    quote(rec, "paper_scratch_epochs", 300)
    quote(rec, "paper_scratch_clip", 1)  # Table 3 caption: clipping at global norm 1 on ImageNet
    # Table 3: pre-training base rates (batch 4096, 10k warm-up steps for every model)
    quote(rec, "paper_pre_lr_b", 8e-4, "{:g}")  # ViT-B/16 and B/32 on JFT-300M, 7 epochs
    quote(rec, "paper_pre_lr_h", 3e-4, "{:g}")  # ViT-H/14 on JFT-300M, 14 epochs
    quote(rec, "paper_pre_lr_21k", 1e-3, "{:g}")  # ViT-B and ViT-L on ImageNet-21k
    quote(rec, "paper_pre_epochs_21k", 90)  # ViT-B on ImageNet-21k
    quote(rec, "paper_pre_epochs_jft_lo", 7)  # ViT-B, ViT-L/32 on JFT-300M
    quote(rec, "paper_pre_epochs_jft_hi", 14)  # ViT-H/14
    # fine-tuning (appendix B.1.1, Table 4): SGD with momentum, a grid of four base rates chosen
    # on a small split of the training set, cosine decay, batch 512, no weight decay, clipping
    quote(rec, "paper_ft_optimizer", "SGD with momentum 0.9")
    quote(rec, "paper_ft_lrs", "0.001, 0.003, 0.01, 0.03")  # CIFAR-10/100, Pets, Flowers
    quote(rec, "paper_ft_lrs_imagenet", "0.003, 0.01, 0.03, 0.06")
    quote(rec, "paper_ft_steps_imagenet", 20000, "{:,}")
    quote(rec, "paper_ft_steps_cifar", 10000, "{:,}")
    quote(rec, "paper_ft_steps_pets", 500)  # Oxford-IIIT Pets and Oxford Flowers-102
    quote(rec, "paper_ft_clip", 1)
    # the released fine-tuning code (google-research/vision_transformer, vit_jax/configs/common.py:
    # config.warmup_steps = 500, next to base_lr 0.03, decay_type 'cosine', batch 512,
    # grad_norm_clip 1.0); vit_jax/train.py feeds it to a linear warm-up before SGD, momentum 0.9
    quote(rec, "code_ft_warmup", 500)
    # ViT-B/16's patch grid at the pre-training and the fine-tuning resolution
    b16 = preset("vit-b/16")
    rec.fact("b16_grid_224", b16.grid[0])
    rec.fact("b16_grid_384", dataclasses.replace(b16, image_size=ft_res).grid[0])
    # section 4.1: Table 2's ImageNet results were fine-tuned larger, with Polyak averaging
    quote(rec, "paper_t2_res_l16", 512)
    quote(rec, "paper_t2_res_h14", 518)
    quote(rec, "paper_polyak", 0.9999, "{:g}")
    # Fig. 4: ViT-B/32 against ResNet50 on random subsets of JFT-300M
    quote(rec, "paper_fig4_small", "9M")
    quote(rec, "paper_fig4_large", "90M")
    quote(rec, "paper_fig4_largest", "300M")
    return {}
