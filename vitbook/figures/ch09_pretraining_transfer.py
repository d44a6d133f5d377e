"""Chapter 9, Run 4 from every pre-training: the smallest set fine-tuned (head only and fully)
from each pre-training seed, against how well that pre-training went, with the models trained
from scratch on the same set as the baseline.

A module of its own, so that Chapter 9's other figures keep their keys when this one changes.
"""

from __future__ import annotations

import numpy as np

from vitbook import plot, runs
from vitbook.data.shapes import FINETUNE_CLASSES
from vitbook.engine import figure
from vitbook.experiments import stats
from vitbook.experiments.transfer_pre import PRE_TRANSFER_ARMS, PRE_TRANSFER_SIZE

SEEDS = stats.seeds(5)  # fine-tuning seeds per pre-trained model
NAMES = {"vit_head": "head only", "vit_full": "full fine-tune"}
BASELINES = {"vit_scratch": "ViT from scratch", "cnn": "small CNN"}  # no pre-training at all


def transfer_run(pre_seed: int, arm: str, seed: int) -> dict:
    """One fine-tuning run on the smallest set from pre-training seed ``pre_seed``: seed 0's are
    Run 4's own runs, the others' are ``vitbook.runs.transfer_from``."""
    if pre_seed == 0:
        return runs.transfer_run(n_train=PRE_TRANSFER_SIZE, arm=arm, seed=seed)
    return runs.transfer_from(pre_seed=pre_seed, arm=arm, seed=seed)


@figure(chapter=9, id="transfer-by-pretraining", size=(7.2, 3.2), trained=True)
def transfer_by_pretraining(rec):
    """Test accuracy on the four new shapes from the smallest training set, fine-tuned head only
    and fully from each pre-training seed, against that pre-training's own test accuracy; the
    models trained from scratch on the same set as bands."""
    pre = runs.PRE_SEEDS
    pre_acc = [runs.pretrained_shapes_vit(seed=p)["history"].final_test_acc for p in pre]
    r = {arm: [[transfer_run(p, arm, s) for s in SEEDS] for p in pre] for arm in PRE_TRANSFER_ARMS}
    acc = {arm: [[x["acc"] for x in row] for row in r[arm]] for arm in PRE_TRANSFER_ARMS}
    base = {k: [runs.transfer_run(n_train=PRE_TRANSFER_SIZE, arm=k, seed=s)["acc"] for s in SEEDS]
            for k in BASELINES}  # fmt: skip
    rec.fact("tp_size", PRE_TRANSFER_SIZE)
    rec.fact("tp_seeds", len(SEEDS))
    rec.fact("tp_pre_seeds", len(pre))
    rec.fact("tp_runs", len(pre) * len(SEEDS) * len(PRE_TRANSFER_ARMS))
    worst, best = int(np.argmin(pre_acc)), int(np.argmax(pre_acc))
    up = np.argsort(pre_acc)  # the pre-trainings from the weakest to the strongest
    rec.fact("tp_pre_worst", pre_acc[worst], "{:.1%}")
    rec.fact("tp_pre_best", pre_acc[best], "{:.1%}")
    for k in BASELINES:
        stats.record(rec, f"tp_{k}", base[k])
    for arm in PRE_TRANSFER_ARMS:
        means = [float(np.mean(row)) for row in acc[arm]]
        stats.record(rec, f"tp_{arm}_worst", acc[arm][worst])
        stats.record(rec, f"tp_{arm}_best", acc[arm][best])
        # neighbouring pre-trainings (in the order of their own accuracy): does each step up
        # separate the fine-tuned runs, every run above every run?
        neighbours = zip(up[:-1], up[1:], strict=True)
        steps = [stats.verdict(acc[arm][b], acc[arm][a]) == "higher" for a, b in neighbours]
        rec.fact(f"tp_{arm}_steps", len(steps))
        rec.fact(f"tp_{arm}_steps_resolved", sum(steps))
        top = int(np.argmax(means))
        rec.fact(f"tp_{arm}_top", means[top], "{:.1%}", tol=stats.tolerance(acc[arm][top]))
        rec.fact(f"tp_{arm}_top_seed", pre[top])
        rec.fact(f"tp_{arm}_top_is_best", top == best)
        # every fine-tuning seed from the best pre-training against every one from the worst
        rec.fact(f"tp_{arm}_best_vs_worst", stats.verdict(acc[arm][best], acc[arm][worst]))
        # against no pre-training: pre-trained models whose every run is above (below) every
        # run of each model trained from scratch on the same images
        for k in BASELINES:
            rec.fact(f"tp_{arm}_above_{k}", sum(stats.verdict(row, base[k]) == "higher"
                                                 for row in acc[arm]))  # fmt: skip
            rec.fact(f"tp_{arm}_below_{k}", sum(stats.verdict(row, base[k]) == "lower"
                                                 for row in acc[arm]))  # fmt: skip
    # full fine-tuning against head only, per pre-trained model
    pairs = zip(acc["vit_full"], acc["vit_head"], strict=True)
    rec.fact("tp_full_over_head", sum(stats.verdict(f, h) == "higher" for f, h in pairs))
    # the new runs' training time (pre-training seed 0's are Run 4's own, counted there)
    secs = sum(x["seconds"] for arm in PRE_TRANSFER_ARMS for row in r[arm][1:] for x in row)
    rec.fact("tp_seconds", secs, "{:.0f}", measured=True)
    return {"pre": pre_acc, "acc": acc, "base": base}


@transfer_by_pretraining.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    x = 100 * np.array(d["pre"])
    order = np.argsort(x)
    cols = {"vit_head": c["blue"], "vit_full": c["green"]}
    bands = {"vit_scratch": c["red"], "cnn": c["purple"]}
    for k, name in BASELINES.items():
        vals = 100 * np.array(d["base"][k])
        ax.axhspan(vals.min(), vals.max(), color=bands[k], alpha=0.15, lw=0)
        ax.text(x.min() - 1, vals.mean(), f"{name}, no pre-training", color=bands[k],
                fontsize=8, va="center", ha="left")  # fmt: skip
    for j, (arm, name) in enumerate(NAMES.items()):
        vals = 100 * np.array(d["acc"][arm])  # (pre seeds, fine-tuning seeds)
        dx = 1.6 * (j - 0.5)
        for i in range(vals.shape[0]):
            ax.plot(np.full(vals.shape[1], x[i] + dx), vals[i], "o", color=cols[arm], ms=3.5,
                    mfc="none", alpha=0.8)  # fmt: skip
        ax.plot(x[order] + dx, vals.mean(1)[order], color=cols[arm], lw=2, marker="s", ms=4,
                label=name)  # fmt: skip
    top = 100 * max(np.mean(d["acc"][arm][0]) for arm in NAMES)  # seed 0: Run 4's model
    ax.annotate("seed 0: Run 4's model", (x[0], top), xytext=(-6, 16), textcoords="offset points",
                ha="right", fontsize=8, color=c["muted"],
                arrowprops={"arrowstyle": "-", "color": c["muted"], "lw": 0.8})  # fmt: skip
    chance = 100 / len(FINETUNE_CLASSES)
    ax.axhline(chance, color=c["muted"], lw=0.8, ls="--")
    ax.text(x.max() + 1, chance - 1, "chance", color=c["muted"], fontsize=8, ha="right", va="top")
    ax.legend(loc="lower right", fontsize=8)
    ax.set(xlabel="the pre-training's own test accuracy (%)",
           ylabel="test accuracy, new shapes (%)", ylim=(0, 102),
           title="Fine-tuned from each pre-training")  # fmt: skip
    return fig
