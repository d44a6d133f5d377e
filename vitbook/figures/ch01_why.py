"""Chapter 1, Why a transformer for images?: receptive fields measured by gradients, a seeded
long-range task (ViT against a CNN of the same size), and what the paper found about data."""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from vitbook import plot, runs
from vitbook.data.longrange import mirror_strips, pair_distance
from vitbook.engine import facts, figure
from vitbook.experiments import longrange, stats
from vitbook.model import VisionTransformer
from vitbook.quoted import quote
from vitbook.train import SmallCNN

# --- receptive fields --------------------------------------------------------------------------

RF_SIZE = 129  # input side for the gradient probes; the probed unit sits at the centre
RF_DEPTHS = 64  # plain 3x3 stacks of 1..64 layers
RF_EXAMPLE_D = 16  # the distance the text and quiz 2 relate two pixels over
RF_SHOWN = (1, 4, 16)  # the plain stacks the figure shows
RF_CROP = 49  # the side of the crops it shows, centred on the probed unit


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


@figure(chapter=1, id="receptive-field", size=(7.2, 3.4), phone_size=7.0)
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
    rec.fact("rf_example_d", RF_EXAMPLE_D)
    rec.fact("rf_example_span", RF_EXAMPLE_D + 1)  # the width the field must reach: d + 1 pixels
    rec.fact("layers_for_d16", int(layers[RF_EXAMPLE_D - 1]))
    rec.fact("layers_for_d112", int(layers[111]))
    rec.fact("layers_for_d223", (223 + 1) // 2)  # the closed form, checked above up to d = 128
    rec.fact("rf_shown", ", ".join(map(str, RF_SHOWN[:-1])) + f" and {RF_SHOWN[-1]}")
    rec.fact("rf_crop", RF_CROP)
    h = RF_CROP // 2
    c = RF_SIZE // 2
    crop = slice(c - h, c + h + 1)
    shown = {k: maps[k - 1][crop, crop] for k in RF_SHOWN}
    cc = cnn_map.shape[0] // 2
    shown["cnn"] = cnn_map[cc - h : cc + h + 1, cc - h : cc + h + 1]
    return {"shown": shown, "widths": widths, "d": distances, "layers": layers, "cnn_rf": cnn_width}


@receptive_field.draw
def _(data, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    phone = plot.is_phone(v)
    grid = (
        fig.add_gridspec(3, 3, width_ratios=[1, 1, 0.09], height_ratios=[1, 1, 1.5])
        if phone
        else fig.add_gridspec(2, 4, width_ratios=[1, 1, 0.09, 2.5])
    )
    titles = {k: f"{k} layer{'' if k == 1 else 's'}" for k in data["shown"] if k != "cnn"}
    titles["cnn"] = "SmallCNN unit"
    for i, key in enumerate(titles):
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
    # one colour bar for the four maps: each is on a log scale relative to its own maximum
    cax = fig.add_subplot(grid[:2, 2] if phone else grid[:, 2])
    bar = fig.colorbar(
        plot.plt.cm.ScalarMappable(norm=plot.plt.Normalize(-12, 0), cmap="magma"), cax=cax
    )
    bar.set_ticks([-12, -8, -4, 0], labels=["10⁻¹²", "10⁻⁸", "10⁻⁴", "1"])
    bar.ax.tick_params(labelsize=8)
    bar.set_label("|gradient| / largest (black: 0)", fontsize=8)
    bar.ax.yaxis.set_label_position("left")
    ax = fig.add_subplot(grid[2, :] if phone else grid[:, 3])
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
        plot.pick(v, 40, 55),  # on the phone the text is wider: above the staircase
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
# The runs live in vitbook.experiments.longrange (frozen per model, seed and budget by
# vitbook.runs): a change to the drawing below retrains nothing.

TASK = longrange.TASK
FAR = 32  # SmallCNN sees at most 32 px: partners this far apart are out of its reach
NARROW = 8  # the narrow strip: 8 cells, partners at most 28 px apart, all within the CNN's reach
SEEDS = stats.seeds(10)  # a run can fail to leave chance: ten seeds, every one reported
ARMS = {"vit": "ViT", "vit_mean": "ViT, mean read-out", "vit_local": "ViT, local attention",
        "vit_nopos": "ViT, no positions", "cnn": "SmallCNN"}  # fmt: skip
SHORT_ARMS = ("vit", "cnn")  # the first edition's budget, for the two main models
WARMUP_LONG = 5  # epochs of warm-up of the ViT's rescue recipe (the book's runs warm up for 1)
#: A run has failed when its test accuracy is no better than guessing could be: below the
#: score that a fair coin on the test parts stays below in CHANCE_CONF of tries (normal
#: approximation of the binomial).
CHANCE_CONF = 0.99
SOLVED = 0.98  # a run that scores this much on the test set has solved the task
LATE = 0.8  # a best epoch (or the epoch a run left chance) after this share of the budget is "late"
SAMPLES_SEED = 7  # the strips drawn in longrange-samples
CHANCE_BOUND = 0.5 + NormalDist().inv_cdf(CHANCE_CONF) * math.sqrt(0.25 / longrange.N_TEST)


def local_reach_px() -> int:
    """Pixels of strip that one token of ``vit_local`` has heard from after its last block:
    each block reaches LOCAL_RADIUS cells further on either side, and the token's own cell
    counts too (the "+1" of a receptive field's 2L + 1)."""
    blocks = longrange.task_config().depth
    return (2 * blocks * longrange.LOCAL_RADIUS + 1) * TASK["cell"]


@figure(chapter=1, id="longrange-samples", size=(7.2, 2.6))
def longrange_samples(rec):
    """Six parts from the task, intact and defective, with the defect's distance."""
    x, y, dist = mirror_strips(6, seed=SAMPLES_SEED, **TASK)
    rec.fact("samples_seed", SAMPLES_SEED)
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


def scores(run: dict, far: int = FAR) -> dict:
    """One run's scores: accuracy, intact parts passed, defects found (near and far), whether
    it failed (never left chance) and the epoch it left chance."""
    hit, dist = run["hit"], run["distance"]
    near, far_ = (dist > 0) & (dist < far), dist >= far
    acc = float(hit.mean())
    left = next((i + 1 for i, a in enumerate(run["val_acc"]) if a >= longrange.FAILED), None)
    return {
        "acc": acc,
        "intact": float(hit[dist == 0].mean()),  # intact parts called intact
        "defects": float(hit[dist > 0].mean()),  # defective parts flagged
        "near": float(hit[near].mean()) if near.any() else float("nan"),
        "far": float(hit[far_].mean()) if far_.any() else float("nan"),
        "failed": acc < CHANCE_BOUND,
        "left_chance": left,  # the first epoch above FAILED on the validation set, or None
        "by_distance": {int(d): float(hit[dist == d].mean()) for d in np.unique(dist) if d},
    }


def far_margin(run: dict, far: int = FAR) -> float:
    """How much more often one run flags the defective parts whose partners are at least ``far``
    pixels apart than it flags intact parts: 0 for a run that ignores the marks (it flags both
    alike), 1 for one that flags every far defect and no intact part."""
    flagged, dist = np.asarray(run["flagged"], dtype=bool), np.asarray(run["distance"])
    return float(flagged[dist >= far].mean() - flagged[dist == 0].mean())


def fisher_p(a: int, n_a: int, b: int, n_b: int) -> float:
    """Two-sided Fisher exact test: the chance, with the margins fixed and no difference between
    the two groups, of a split of the ``a + b`` events at most as likely as ``a`` of ``n_a``
    against ``b`` of ``n_b`` (the tables are summed as likely or less likely than the one seen)."""
    k, n = a + b, n_a + n_b

    def prob(x: int) -> float:
        return math.comb(n_a, x) * math.comb(n_b, k - x) / math.comb(n, k)

    seen = prob(a)
    tables = range(max(0, k - n_b), min(k, n_a) + 1)
    return min(1.0, sum(prob(x) for x in tables if prob(x) <= seen * (1 + 1e-9)))


def _runs(model: str, budget: str = "plateau", cols: int = 16) -> list[dict]:
    if model == "vit_mean":  # the read-out control, in its own module (longrange_readout)
        return [runs.longrange_readout_run(seed=s, budget=budget, cols=cols) for s in SEEDS]
    return [runs.longrange_run(model=model, seed=s, budget=budget, cols=cols) for s in SEEDS]


def vit_macs(cols: int = 16) -> int:
    """Multiply-adds of one ViT forward pass, the attention matmuls (Q K^T and A V) included:
    counted on the explicit attention path, whose matmuls the counter sees."""
    cfg = dataclasses.replace(longrange.task_config(cols), fused_attn=False)
    with FlopCounterMode(display=False) as counter:
        VisionTransformer(cfg=cfg)(torch.zeros(1, 1, *cfg.image_hw))
    return counter.get_total_flops() // 2  # one MAC = two FLOPs


@figure(chapter=1, id="longrange-budget", size=(7.2, 3.0), trained=True, phone_size=8.0)
def longrange_budget(rec):
    """The ViT's validation accuracy per epoch under the short budget (cosine decay over a
    few epochs), the plateau budget (a constant rate, long), and the plateau budget with a
    longer warm-up; every seed, the CNN's curves in the first two for comparison."""
    short = {m: _runs(m, "short") for m in SHORT_ARMS}
    plateau = {m: _runs(m) for m in SHORT_ARMS}
    warm = [runs.longrange_run(model="vit", seed=s, warmup=WARMUP_LONG) for s in SEEDS]
    rec.fact("seeds", len(SEEDS))
    rec.fact("short_epochs", longrange.SHORT_EPOCHS)
    rec.fact("plateau_epochs", longrange.MAX_EPOCHS)
    rec.fact("warmup_long", WARMUP_LONG)
    rec.fact("failed_below", CHANCE_BOUND, "{:.1%}")
    rec.fact("chance_conf", CHANCE_CONF, "{:.0%}")
    rec.fact("left_above", longrange.FAILED, "{:.0%}")
    fails = {}
    for budget, rr in (("short", short), ("plateau", plateau), ("warm", {"vit": warm})):
        for m, rows in rr.items():
            sc = [scores(r) for r in rows]
            fails[m, budget] = [s for s, x in zip(SEEDS, sc, strict=True) if x["failed"]]
            rec.fact(f"{m}_{budget}_failed", len(fails[m, budget]), tol=1)
            rec.fact(f"{m}_{budget}_failed_seeds", ", ".join(map(str, fails[m, budget])) or "none")
            if budget != "plateau":  # the plateau budget's scores are in longrange-results
                stats.record(rec, f"{m}_{budget}_acc", [x["acc"] for x in sc])
    # does the budget change the CNN's accuracy? (non-overlapping min-max ranges over seeds)
    cnn_acc = {b: [scores(r)["acc"] for r in rr["cnn"]]
               for b, rr in (("short", short), ("plateau", plateau))}  # fmt: skip
    rec.fact("cnn_short_vs_plateau", stats.verdict(cnn_acc["short"], cnn_acc["plateau"]))
    # how long the ViT sat at chance, in the runs that left it (plateau budget)
    left = [e for e in (scores(r)["left_chance"] for r in plateau["vit"]) if e is not None]
    spread = max(1, max(left) - min(left)) if left else 1
    rec.fact("vit_left_lo", min(left) if left else 0, tol=spread)
    rec.fact("vit_left_hi", max(left) if left else 0, tol=spread)
    # which of the short budget's failures the plateau budget, or the longer warm-up, rescued
    rescued = [s for s in fails["vit", "short"] if s not in fails["vit", "plateau"]]
    rec.fact("vit_rescued_by_budget", len(rescued), tol=1)
    both = [s for s in fails["vit", "plateau"] if s not in fails["vit", "warm"]]
    rec.fact("vit_rescued_by_warmup", len(both), tol=1)
    # a failed run answers one class for every part: its validation accuracy is then that
    # class's share of its validation set, not one half (the two classes are drawn at random)
    shares, one_class = [], 0
    for s, r in zip(SEEDS, plateau["vit"], strict=True):
        if s not in fails["vit", "plateau"]:
            continue
        y = mirror_strips(longrange.N_VAL, seed=2000 + s, **TASK)[1].float().mean().item()
        shares += [y, 1 - y]
        one_class += all(min(abs(a - y), abs(a - (1 - y))) < 1e-6 for a in r["val_acc"])
    rec.fact("vit_failed_one_class", one_class, tol=1)
    rec.fact("vit_failed_val_lo", min(shares, default=0.5), "{:.1%}")
    rec.fact("vit_failed_val_hi", max(shares, default=0.5), "{:.1%}")
    # the lowest seed whose ViT run failed (plateau budget), or the number of seeds if none did:
    # fewer seeds than this would have shown no failure
    rec.fact("vit_first_failed_seed", min(fails["vit", "plateau"], default=len(SEEDS)))
    return {
        "short": [r["val_acc"] for r in short["vit"]],
        "plateau": [r["val_acc"] for r in plateau["vit"]],
        "warm": [r["val_acc"] for r in warm],
        "cnn_short": [r["val_acc"] for r in short["cnn"]],
        "cnn_plateau": [r["val_acc"] for r in plateau["cnn"]],
    }


@longrange_budget.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 3, phone_cols=1, width_ratios=[1, 1.6, 1.6], sharey=True)
    panels = ((axes[0], "short", "Short budget"), (axes[1], "plateau", "Plateau budget"),
              (axes[2], "warm", f"Plateau, {WARMUP_LONG}-epoch warm-up"))  # fmt: skip
    for ax, key, title in panels:
        for curve in d.get(f"cnn_{key}", []):
            ep = np.arange(1, len(curve) + 1)
            ax.plot(ep, 100 * np.array(curve), color=c["blue"], lw=0.6, alpha=0.5)
        for curve in d[key]:
            ep = np.arange(1, len(curve) + 1)
            failed = max(curve) < longrange.FAILED
            ax.plot(ep, 100 * np.array(curve), color=c["red"] if failed else c["orange"],
                    lw=1.4 if failed else 0.8, ls="--" if failed else "-", alpha=0.9)  # fmt: skip
        ax.axhline(50, color=c["muted"], lw=1, ls=":")
        ax.set(xlabel="epoch", ylim=(40, 102), title=title)
    axes[0].set_ylabel("validation accuracy (%)")
    axes[-1].text(0.97, 0.2, "one half", color=c["muted"], fontsize=8, ha="right",
                  transform=axes[-1].transAxes)  # fmt: skip
    for i, (name, col) in enumerate((("ViT", c["orange"]), ("SmallCNN", c["blue"]),
                                     ("never left chance (dashed)", c["red"]))):  # fmt: skip
        axes[1].text(0.97, 0.6 - 0.08 * i, name, color=col, transform=axes[1].transAxes,
                     ha="right", fontsize=8.5)  # fmt: skip
    return fig


@figure(chapter=1, id="longrange-results", size=(7.2, 3.3), trained=True, phone_size=7.0)
def longrange_results(rec):
    """Every model under the plateau budget: test accuracy per seed, and defects found by
    the distance between the partners; the CNN on a narrow strip too."""
    arms = {m: _runs(m) for m in ARMS}
    narrow = _runs("cnn", cols=NARROW)
    sc = {m: [scores(r, FAR) for r in rows] for m, rows in arms.items()}
    sc["cnn_narrow"] = [scores(r, FAR) for r in narrow]
    rec.fact("vit_params", arms["vit"][0]["params"])
    cfg = longrange.task_config()
    rec.fact("vit_dim", cfg.dim)
    rec.fact("vit_depth", cfg.depth)
    rec.fact("vit_heads", cfg.heads)
    rec.fact("cnn_params", arms["cnn"][0]["params"])
    rec.fact("cnn_width", longrange.cnn_width())
    rec.fact("n_train", longrange.N_TRAIN)
    rec.fact("n_val", longrange.N_VAL)
    rec.fact("n_test", longrange.N_TEST)
    rec.fact("batch", longrange.BATCH)
    rec.fact("lr", longrange.LR, "{:g}")
    rec.fact("local_radius", longrange.LOCAL_RADIUS)
    rec.fact("local_reach_px", local_reach_px())
    rec.fact("narrow_cols", NARROW)
    rec.fact("narrow_max_dist", pair_distance(0, cols=NARROW, cell=TASK["cell"]))
    rec.fact("far_threshold", FAR)
    for name, rows in sc.items():
        for key in ("acc", "intact", "defects", "near", "far"):
            vals = [r[key] for r in rows]
            if np.all(np.isnan(vals)):
                continue
            stats.record(rec, f"{name}_{key}_acc" if key != "acc" else f"{name}_acc", vals)
        rec.fact(f"{name}_failed", sum(r["failed"] for r in rows), tol=1)
    # intact parts passed by the ViT runs that did not fail (a failed run may flag them all)
    stats.record(rec, "vit_ok_intact_acc", [r["intact"] for r in sc["vit"] if not r["failed"]])
    # the share of intact parts each model flags, in the runs that trained: the baseline of its
    # curve of defects found by distance (a model that ignores the marks flags both alike)
    for name in ARMS:
        stats.record(rec, f"{name}_intact_flagged",
                     [1 - r["intact"] for r in sc[name] if not r["failed"]])  # fmt: skip
    # the comparisons the text makes, decided over seeds (non-overlapping min-max ranges)
    acc = {k: [r["acc"] for r in rows] for k, rows in sc.items()}
    rec.fact("vit_vs_cnn", stats.verdict(acc["vit"], acc["cnn"]))
    ok = [a for a, r in zip(acc["vit"], sc["vit"], strict=True) if not r["failed"]]
    rec.fact("vit_ok_vs_cnn", stats.verdict(ok, acc["cnn"]))  # the ViT runs that did not fail
    rec.fact("solved_above", SOLVED, "{:.0%}")
    for name, vals in acc.items():  # runs that solve the task, not merely leave chance
        rec.fact(f"{name}_solved", sum(a >= SOLVED for a in vals), tol=1)
    # whether the budget decided an arm: runs still improving (best epoch in the last fifth)
    # and runs that left chance only then, without solving the task
    late = LATE * longrange.MAX_EPOCHS
    rec.fact("late_share", 1 - LATE, "{:.0%}")
    for name in ARMS:
        rec.fact(f"{name}_best_late", sum(r["best_epoch"] > late for r in arms[name]), tol=1)
        rec.fact(f"{name}_late_unsolved", sum((s["left_chance"] or 0) > late and s["acc"] < SOLVED
                                               for s in sc[name]), tol=1)  # fmt: skip
    # by distance, only the runs that trained: a failed run that flags every part "finds"
    # every defect, near or far, and would count as a win
    far_ok = {k: [r["far"] for r in rows if not r["failed"]] for k, rows in sc.items()}
    # (the comparisons below and the curves by distance in the figure: every arm)
    rec.fact("far_failed_left_out", sum(r["failed"] for k in ARMS for r in sc[k]))
    rec.fact("vit_far_vs_cnn_far", stats.verdict(far_ok["vit"], far_ok["cnn"]))
    rec.fact("nopos_vs_vit", stats.verdict(acc["vit_nopos"], acc["vit"]))
    rec.fact("local_far_vs_vit_far", stats.verdict(far_ok["vit_local"], far_ok["vit"]))
    rec.fact("local_far_vs_cnn_far", stats.verdict(far_ok["vit_local"], far_ok["cnn"]))
    # the read-out control: global attention with vit_local's mean read-out
    rec.fact("mean_far_vs_vit_far", stats.verdict(far_ok["vit_mean"], far_ok["vit"]))
    rec.fact("mean_far_vs_local_far", stats.verdict(far_ok["vit_mean"], far_ok["vit_local"]))
    rec.fact("mean_vs_vit", stats.verdict(acc["vit_mean"], acc["vit"]))
    rec.fact("mean_vs_local", stats.verdict(acc["vit_mean"], acc["vit_local"]))
    # the seeds on which the ViT failed, trained by the control from the same initial weights
    # (the two builds draw them alike, tests/test_ch01_why.py), the same parts and order
    rec.fact("mean_on_vit_failed_solved", sum(m["acc"] >= SOLVED for v_, m in zip(
        sc["vit"], sc["vit_mean"], strict=True) if v_["failed"]), tol=1)  # fmt: skip
    # the no-position ViT keeps the class token: does it solve the seeds the full ViT failed?
    rec.fact("nopos_on_vit_failed_solved", sum(m["acc"] >= SOLVED for v_, m in zip(
        sc["vit"], sc["vit_nopos"], strict=True) if v_["failed"]), tol=1)  # fmt: skip
    rec.fact("vit_nopos_failed_seeds", ", ".join(str(s) for s, r in zip(
        SEEDS, sc["vit_nopos"], strict=True) if r["failed"]) or "none")  # fmt: skip
    # can the seeds tell the full ViT's failure rate from the control's? (Fisher exact test)
    n_fail = {k: sum(r["failed"] for r in sc[k]) for k in ("vit", "vit_mean")}
    rec.fact("mean_vs_vit_failed_p", fisher_p(n_fail["vit"], len(SEEDS), n_fail["vit_mean"],
                                              len(SEEDS)), "{:.2g}")  # fmt: skip
    # a read-out that adds what tokens found about each mark apart can still flag some
    # mismatched pairs: far defects flagged more often than intact parts, in the runs that trained
    for name in ("vit_local", "cnn"):
        ok = [r for r, s in zip(arms[name], sc[name], strict=True) if not s["failed"]]
        margins = [100 * far_margin(r) for r in ok]  # percentage points
        rec.fact(f"{name}_trained", len(ok), tol=1)
        rec.fact(f"{name}_far_over_intact", sum(m > 0 for m in margins), tol=1)
        stats.record(rec, f"{name}_far_margin", margins, "{:.0f}")
    left = [e for e in (s["left_chance"] for s in sc["vit_mean"]) if e is not None]
    spread = max(1, max(left) - min(left)) if left else 1
    rec.fact("vit_mean_left_lo", min(left) if left else 0, tol=spread)
    rec.fact("vit_mean_left_hi", max(left) if left else 0, tol=spread)
    rec.fact("cnn_narrow_vs_wide", stats.verdict(acc["cnn_narrow"], acc["cnn"]))
    gaps = {n: [r["train_acc"][r["best_epoch"] - 1] - s["acc"]
                for r, s in zip(arms[n], sc[n], strict=True)] for n in ("vit", "cnn")}  # fmt: skip
    for n, g in gaps.items():  # a difference of two accuracies, in percentage points
        rec.fact(f"{n}_train_gap", 100 * float(np.mean(g)), "{:.1f}",
                 tol=100 * stats.tolerance(g))  # fmt: skip
    tr = [r["train_acc"][r["best_epoch"] - 1] for r in arms["cnn"]]
    rec.fact("cnn_train_acc", float(np.mean(tr)), "{:.1%}", tol=stats.tolerance(tr))
    rec.fact("vit_macs", vit_macs())
    cnn = SmallCNN(in_chans=1, num_classes=2, width=longrange.cnn_width())
    with FlopCounterMode(display=False) as counter:
        cnn(torch.zeros(1, 1, *longrange.task_config().image_hw))
    rec.fact("cnn_macs", counter.get_total_flops() // 2)
    macs = {k: rec.facts[f"{k}_macs"]["value"] for k in ("vit", "cnn")}
    rec.fact("macs_ratio", macs["cnn"] / macs["vit"], "{:.1f}")
    secs = [r["seconds"] for rows in (*arms.values(), narrow) for r in rows]
    rec.fact("longrange_seconds", sum(secs), "{:.0f}", measured=True)
    return {
        "acc": acc,
        "failed": {k: [r["failed"] for r in rows] for k, rows in sc.items()},
        "by": {k: [s["by_distance"] for s in sc[k]] for k in ARMS},
    }


@longrange_results.draw
def _(data, v):
    c = plot.colors(v)
    fig, (ax1, ax2) = plot.subplots(v, 1, 2, width_ratios=[1.3, 1], phone_cols=1)
    cols = {"vit": c["orange"], "vit_mean": c["fg"], "vit_nopos": c["purple"],
            "vit_local": c["green"], "cnn": c["blue"]}  # fmt: skip
    for key, label in ARMS.items():  # the ViT first, wide, so that the control's line shows on it
        dists = sorted(data["by"][key][0])
        # the runs that trained only: a failed run flags every part (or none), near or far
        ok = [b for b, f in zip(data["by"][key], data["failed"][key], strict=True) if not f]
        per_seed = 100 * np.array([[b[dd] for dd in dists] for b in ok])
        style = dict(fmt="o-", lw=1.8, ms=3.5)
        if key == "vit":  # a wide line under the control's dashed one, which lies on it
            style = dict(fmt="o-", lw=3.5, ms=5)
        elif key == "vit_mean":  # dashed, open squares: the ViT's line shows through
            style = dict(fmt="s--", lw=1.8, ms=4.5, mfc="none")
        fmt = style.pop("fmt")
        ax1.plot(dists, per_seed.mean(0), fmt, color=cols[key], label=label, **style)
    ax1.axvline(FAR, color=c["muted"], lw=0.8, ls="--")
    ax1.text(FAR + 1, 6, "CNN's reach", color=c["muted"], fontsize=8)
    ax1.set(xlabel="distance to the partner (px)", ylim=(0, 105), title="Defects by distance",
            ylabel="defects found (%, mean of\nthe runs that trained)")  # fmt: skip
    ax1.legend(loc="lower left", fontsize=8)
    rows = [*ARMS, "cnn_narrow"]
    names = {"vit": "ViT", "vit_mean": "ViT,\nmean", "vit_local": "ViT,\nlocal",
             "vit_nopos": "ViT,\nno pos.", "cnn": "Small-\nCNN",
             "cnn_narrow": f"Small-\nCNN,\n{NARROW} cells"}  # fmt: skip
    rng = np.random.default_rng(0)  # a fixed jitter, so that overlapping seeds show
    for x, key in enumerate(rows):
        col = cols.get(key, c["muted"])
        vals = 100 * np.array(data["acc"][key])
        jitter = x + rng.uniform(-0.18, 0.18, len(vals))
        failed = np.array(data["failed"][key])
        ax2.plot(jitter[~failed], vals[~failed], "o", color=col, ms=4, mfc="none")
        ax2.plot(jitter[failed], vals[failed], "x", color=c["fg"], ms=6, mew=1.5)
        ax2.plot([x - 0.28, x + 0.28], [vals.mean()] * 2, color=col, lw=2)
    ax2.axhline(50, color=c["muted"], lw=1, ls=":")
    ax2.set_xticks(range(len(rows)), [names[k] for k in rows], fontsize=8)
    ax2.set(ylabel="test accuracy (%)", ylim=(40, 102), xlim=(-0.6, len(rows) - 0.4),
            title="Every seed")  # fmt: skip
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
            quote(rec, f"t5_{data}_{model}", acc, "{:.2f}%")
    quote(rec, "deit_b", 81.8, "{:.1f}%")  # Touvron et al. 2021, ImageNet-1k only
    quote(rec, "deit_b_distilled", 83.4, "{:.1f}%")
    quote(rec, "finetune_res", 384)
    rec.fact("wide_image", 224)
    rec.fact("exercise_image", 512)
    quote(rec, "in1k_images", "1.3 million", text="1.3 million")
    quote(rec, "in21k_images", "14 million", text="14 million")
    quote(rec, "jft_images", "300 million", text="300 million")
    # Both trained 300 epochs on ImageNet-1k: ViT's Table 3 / appendix B.1; DeiT section 6.
    quote(rec, "in1k_epochs", 300)
    quote(rec, "deit_res", 224)
    quote(rec, "deit_b_384", 83.1, "{:.1f}%")  # DeiT-B fine-tuned at 384 (Touvron et al., Table 7)
    # Weight decay on ImageNet-1k. ViT's run from scratch: 0.3 (the paper's Table 3, with
    # dropout 0.1 and cosine decay; its caption adds the 10k-step warm-up and clipping at
    # global norm 1; section 4.1 names the optimiser Adam, and how its decay was applied is not
    # in the paper or its repository's fine-tuning code, so the book does not compare the
    # optimisers). DeiT: 0.05 with AdamW (the --opt and --weight-decay defaults of main.py in
    # facebookresearch/deit), no dropout (--drop 0.0), stochastic depth 0.1 (--drop-path),
    # label smoothing 0.1 (--smoothing), no clipping (--clip-grad None), 5 warm-up epochs.
    # Label smoothing is one of the "three basic regularization parameters" (with weight decay
    # and dropout) the ViT paper tuned for its smaller pre-training sets (section 4.3).
    quote(rec, "vit_weight_decay", 0.3, "{:g}")
    quote(rec, "deit_weight_decay", 0.05, "{:g}")
    # ViT paper, Table 2: ImageNet top-1 and TPUv3-core-days of pre-training.
    table2 = {
        "h14_jft": (88.55, 2.5),
        "l16_jft": (87.76, 0.68),
        "l16_in21k": (85.30, 0.23),
        "bit_l": (87.54, 9.9),
        # the paper's own entry is "88.4/88.5*": 88.4 with the 12.3k core-days; the starred
        # 88.5 is a later, slightly improved result the paper quotes from Touvron et al. (2020)
        "noisy_student": (88.4, 12.3),
    }
    for name, (acc, days) in table2.items():
        quote(rec, f"t2_{name}", acc, "{:.2f}%" if name != "noisy_student" else "{:.1f}%")
        quote(rec, f"t2_{name}_days", days, "{:g}k")
    quote(rec, "t2_noisy_student_fixres", 88.5, "{:.1f}%")  # Table 2's starred 88.5
    rec.fact("t2_bit_over_h14_days", 9.9 / 2.5, "{:.1f}")  # computed from the table
    # ViT paper, section 4.4 / Fig. 5: compute to reach the same transfer accuracy.
    quote(rec, "fig5_saving", "2-4", text="2–4")
    quote(rec, "jft_subset_small", "9 million", text="9 million")
    quote(rec, "jft_subset_large", "90 million", text="90 million")
    # ViT paper, section 4.6 and appendix B.1.2: self-supervised masked patch prediction.
    quote(rec, "ssl_mask_share", 0.5, "{:.0%}")  # share of patch embeddings corrupted
    quote(rec, "ssl_b16", 79.9, "{:.1f}%")  # ImageNet top-1, ViT-B/16, after fine-tuning
    quote(rec, "ssl_gain_over_scratch", 2, "{:d}")  # percentage points, as the paper rounds them
    quote(rec, "ssl_gap_to_supervised", 4, "{:d}")
    quote(rec, "mae_mask_share", 0.75, "{:.0%}")  # MAE (He et al. 2022): patches masked
    return table5
