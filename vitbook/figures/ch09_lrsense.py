"""Chapter 9, learning-rate sensitivity: a ViT from scratch against a CNN of its size, swept
over constant Adam rates on the digits, read at every budget along the validation curves."""

from __future__ import annotations

import math

import numpy as np

from vitbook import plot, runs
from vitbook.engine import figure
from vitbook.experiments import lrsense, stats

SEEDS = stats.seeds(5)
SEEDS10 = stats.seeds(10)  # at the largest rate, where a run can fail
#: the rates of the sweep (a subset of lrsense.SENSE_RATES): a decade apart
RATES = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
MODELS = {"vit": "ViT from scratch", "cnn": "small CNN"}
COLOURS = {"vit": "red", "cnn": "purple"}
#: a rate is in a model's band when its mean validation accuracy is within this many points
#: of the model's best rate, at the same budget
BAND = (0.02, 0.05)
CLASSES = 10  # the ten digits
FAIL_BELOW = 2 / CLASSES  # a run that ends below twice chance, or diverges, has failed
SHORT_STEPS = 50  # Run 4's first validation checkpoint: what a short sweep sees


def seeds_at(lr: float) -> tuple[int, ...]:
    """The seeds of one rate: ten at the largest, where a run can fail; five elsewhere."""
    return SEEDS10 if lr == RATES[-1] else SEEDS


def _padded(curve: list[float], n: int) -> list[float]:
    """A validation curve held at its last value to ``n`` points (a run that diverged
    stopped early; its weights, and so its accuracy, stay where they were)."""
    return list(curve) + [curve[-1]] * (n - len(curve))


def band(means: dict[float, float], points: float) -> list[float]:
    """The rates whose mean accuracy is within ``points`` of the best rate's."""
    best = max(means.values())
    return [lr for lr, a in means.items() if a >= best - points - 1e-12]


def width(rates: list[float]) -> float:
    """The span of ``rates`` in decades: log10(largest / smallest)."""
    return math.log10(max(rates) / min(rates))


@figure(chapter=9, id="lr-sense", size=(7.2, 5.2), trained=True, phone_size=11.0)
def lr_sense(rec):
    """The ViT from scratch and the small CNN on the digits at five constant Adam rates, five
    seeds each: the last validation accuracy against the rate, every rate's validation curve,
    and the width of each model's band of good rates at every budget."""
    r = {m: {lr: [runs.sense_run(model=m, lr=lr, seed=s) for s in seeds_at(lr)] for lr in RATES}
         for m in MODELS}  # fmt: skip
    first = r["vit"][RATES[0]][0]
    steps = first["val_steps"]
    rec.fact("sense_seeds", len(SEEDS))
    rec.fact("sense_seeds_top", len(SEEDS10))
    rec.fact("sense_steps", steps[-1])
    rec.fact("sense_every", lrsense.SENSE_EVERY)
    rec.fact("sense_n_rates", len(RATES))
    rec.fact("sense_lr_lo", f"{RATES[0]:g}")
    rec.fact("sense_lr_hi", f"{RATES[-1]:g}")
    rec.fact("sense_decades", round(width(list(RATES))))
    train, val, test = lrsense.sense_data()
    rec.fact("sense_n_train", len(train[1]), "{:,}")
    rec.fact("sense_n_val", len(val[1]))
    rec.fact("sense_n_test", len(test[1]))
    rec.fact("sense_fail_below", FAIL_BELOW, "{:.0%}")
    rec.fact("sense_chance", 1 / CLASSES, "{:.0%}")
    for i, lr in enumerate(RATES):
        rec.fact(f"sense_lr{i}", f"{lr:g}")
    for m in MODELS:
        rec.fact(f"sense_{m}_params", r[m][RATES[0]][0]["params"], "{:,}")
    curves, final, widths, bands = {}, {}, {}, {}
    for m in MODELS:
        curves[m] = {lr: np.array([_padded(x["val_acc"], len(steps)) for x in r[m][lr]])
                     for lr in RATES}  # (seeds, budgets)  # fmt: skip
        final[m] = {lr: curves[m][lr][:, -1] for lr in RATES}
        fails = 0
        for i, lr in enumerate(RATES):
            stats.record(rec, f"sense_{m}_{i}", final[m][lr])
            bad = sum(x["diverged"] or x["val_acc"][-1] < FAIL_BELOW for x in r[m][lr])
            rec.fact(f"sense_{m}_{i}_failed", bad, tol=1)
            rec.fact(f"sense_{m}_{i}_seeds", len(r[m][lr]))
            fails += bad
        rec.fact(f"sense_{m}_failed", fails, tol=1)
        # the largest rate, where the runs can fail, and the budget's last stretch at the best
        top = final[m][RATES[-1]]
        stats.record(rec, f"sense_{m}_top", top)
        rec.fact(f"sense_{m}_top_failed", sum(x["diverged"] or x["val_acc"][-1] < FAIL_BELOW
                                              for x in r[m][RATES[-1]]), tol=1)  # fmt: skip
        means = {lr: float(final[m][lr].mean()) for lr in RATES}
        best = max(means, key=means.get)
        rec.fact(f"sense_{m}_best", f"{best:g}")
        stats.record(rec, f"sense_{m}_best_test", [x["final"] for x in r[m][best]])
        # the best rate's gain over the last fifth of the budget, in points (mean of seeds)
        c = curves[m][best].mean(0)
        k = len(steps) - len(steps) // 5 - 1
        rec.fact(f"sense_{m}_best_tail", 100 * float(c[-1] - c[k]), "{:.1f}", tol=1.0)
        for points in BAND:
            tag = f"{round(100 * points)}"
            b = band(means, points)
            rec.fact(f"sense_{m}_band{tag}", ", ".join(f"{lr:g}" for lr in b))
            rec.fact(f"sense_{m}_band{tag}_width", width(b), "{:.0f}", tol=1)
            # the same band for each seed on its own: its best rate, and the rates within
            # ``points`` of it
            per = [width(band({lr: float(final[m][lr][s]) for lr in RATES}, points))
                   for s in SEEDS]  # fmt: skip
            rec.fact(f"sense_{m}_band{tag}_seed_lo", min(per), "{:.0f}", tol=1)
            rec.fact(f"sense_{m}_band{tag}_seed_hi", max(per), "{:.0f}", tol=1)
            widths.setdefault(m, {})[points] = per
        # the band's width at every budget along the curves (2 points)
        bands[m] = [width(band({lr: float(curves[m][lr][:, k].mean()) for lr in RATES}, BAND[0]))
                    for k in range(len(steps))]  # fmt: skip
        rec.fact(f"sense_{m}_lowest_best", f"{min(band(means, BAND[0])):g}")
        rec.fact(f"sense_{m}_highest_good", f"{max(band(means, BAND[0])):g}")
    for points in BAND:
        tag = f"{round(100 * points)}"
        rec.fact(f"sense_band{tag}_verdict",
                 stats.verdict(widths["vit"][points], widths["cnn"][points]))  # fmt: skip
        rec.fact(f"sense_band{tag}_points", 100 * points, "{:.0f}")
    # budgets at which the ViT's band is narrower, the same, wider than the CNN's
    rec.fact("sense_budgets", len(steps))
    pairs = list(zip(bands["vit"], bands["cnn"], strict=True))
    rec.fact("sense_budgets_vit_narrower", sum(a < b for a, b in pairs), tol=2)
    rec.fact("sense_budgets_vit_wider", sum(a > b for a, b in pairs), tol=2)
    # what a short sweep sees: Run 4's scratch ViT, 400 images, at its first checkpoint
    early = [runs.transfer_run(n_train=400, arm="vit_scratch", seed=s) for s in SEEDS]
    stats.record(rec, "sense_run4_early", [x["val_acc"][0] for x in early])
    rec.fact("sense_run4_early_step", early[0]["val_steps"][0])
    stats.record(rec, "sense_run4_best", [max(x["val_acc"]) for x in early])
    rec.fact("sense_run4_best_step_lo", min(x["best_step"] for x in early), "{:,}")
    secs = sum(x["seconds"] for m in r.values() for v in m.values() for x in v)
    rec.fact("sense_seconds", secs, "{:.0f}", measured=True)
    mean_curves = {m: {lr: c.mean(0) for lr, c in v.items()} for m, v in curves.items()}
    return {"steps": steps, "chance": 1 / CLASSES, "curves": mean_curves, "final": final,
            "bands": bands}  # fmt: skip


@lr_sense.draw
def draw_lr_sense(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 2, 2, phone_cols=1)
    (a1, a4), (a2, a3) = axes
    for j, (m, name) in enumerate(MODELS.items()):
        shift = 1.15 ** (j - 0.5)
        for lr in RATES:
            acc = 100 * np.asarray(d["final"][m][lr])
            a1.plot(np.full(len(acc), lr * shift), acc, "o", color=c[COLOURS[m]], ms=3.5,
                    mfc="none", alpha=0.8)  # fmt: skip
        means = [100 * np.mean(d["final"][m][lr]) for lr in RATES]
        a1.plot(np.array(RATES) * shift, means, color=c[COLOURS[m]], lw=2, label=name)
    plot.log_x(a1, RATES)
    a1.legend(loc="lower center", fontsize=7)
    a1.set(xlabel="Adam learning rate (constant; log)", ylabel="validation accuracy (%)",
           ylim=(0, 102), title=f"After {d['steps'][-1]} steps (circles: seeds)")  # fmt: skip
    shades = plot.sequence(v, len(RATES))
    for ax, m in ((a2, "vit"), (a3, "cnn")):
        for lr, col in zip(RATES, shades, strict=True):
            ax.plot(d["steps"], 100 * d["curves"][m][lr], color=col, lw=1.6, label=f"{lr:g}")
        ax.set(xlabel="full-batch steps", ylabel="validation accuracy (%)", ylim=(0, 102),
               title=f"{MODELS[m]}, mean of seeds")  # fmt: skip
        ax.axhline(100 * d["chance"], color=c["muted"], lw=0.8, ls="--")
    a3.legend(loc="lower right", ncol=2, fontsize=7, title="rate", title_fontsize=7,
              handlelength=1.2, columnspacing=0.8, framealpha=0.9)  # fmt: skip
    a1.axhline(100 * d["chance"], color=c["muted"], lw=0.8, ls="--")
    a1.text(a1.get_xlim()[1], 100 * d["chance"] + 1, "chance", color=c["muted"], fontsize=7,
            ha="right", va="bottom")  # fmt: skip
    for j, m in enumerate(MODELS):
        a4.step(d["steps"], np.array(d["bands"][m]) + 0.06 * (j - 0.5), where="post",
                color=c[COLOURS[m]], lw=1.8, label=MODELS[m])  # fmt: skip
    a4.set(xlabel="budget (full-batch steps)", ylabel="decades within 2 points of best",
           ylim=(-0.3, len(RATES) - 0.7), title="Good band, by budget")  # fmt: skip
    a4.set_yticks(range(len(RATES)))
    a4.legend(loc="upper left", fontsize=7)
    return fig
