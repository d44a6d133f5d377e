"""Chapter 10, Inside a trained ViT: the patch-embedding filters, the learned position table,
every finding measured on every pre-trained model, and the cost of windowed attention.
Everything is measured on the small ViTs pre-trained in Chapter 9; the attention distances,
rollout and the checks of the maps are in ``ch10_attention.py``."""

from __future__ import annotations

import matplotlib
import numpy as np
import torch

from vitbook import plot, runs
from vitbook.analysis import (
    cosine_similarity_map,
)
from vitbook.engine import facts, figure
from vitbook.experiments import stats
from vitbook.figures.ch10_attention import (
    DELETE_IMAGES,
    DIST_IMAGES,
    _checks,
    _dist_dip,
    _distances,
    _fresh_model,
    _in_box,
    _low_block,
    _model,
    _on_object,
    _overlap,
    _paired,
    _random_model,
    _test_set,
    _uniform_distance,
    localisation,
)
from vitbook.model import VisionTransformer

RANDOM_DRAWS = 200  # random filter banks for the spectrum's baseline
POS_SHUFFLES = 2000  # permutations of the position table over the grid: the similarities' null
POS_NULL_QUANTILE = 0.975  # the gap quoted for the shuffles: this share of them stays below it
POS_SCALE = 0.3  # the similarity maps' colour scale runs from -POS_SCALE to POS_SCALE (clipped)


def _rel_change(w: torch.Tensor, w0: torch.Tensor) -> float:
    """||w - w0|| / ||w0|| (Frobenius): how far ``w`` has moved from ``w0``, in units of
    ``w0``'s norm."""
    w, w0 = w.detach().double(), w0.detach().double()
    return float((w - w0).norm() / w0.norm())


def _random_spectra() -> np.ndarray:
    """The spectra of RANDOM_DRAWS i.i.d. Gaussian filter banks of the patch embedding's shape
    (the spectrum is scale-free): the baseline a trained bank is read against."""
    w = _model().patch_embed.proj.weight
    D, rest = w.shape[0], w[0].numel()
    gen = torch.Generator().manual_seed(0)
    return np.stack([_spectrum(torch.randn(D, rest, generator=gen, dtype=torch.float64))
                     for _ in range(RANDOM_DRAWS)])  # fmt: skip


def _vs_range(value: float, lo: float, hi: float) -> str:
    return "above" if value > hi else "below" if value < lo else "within"


def _spectrum(w: torch.Tensor) -> np.ndarray:
    """Share of variance of each principal component of a (D, ...) filter bank."""
    flat = w.reshape(len(w), -1).double()
    flat = flat - flat.mean(0, keepdim=True)
    s = torch.linalg.svdvals(flat)
    return (s**2 / (s**2).sum()).numpy()


@figure(chapter=10, id="embedding-filters", size=(7.2, 2.6), trained=True, phone_size=5.6)
def embedding_filters(rec):
    """Principal components of the patch-embedding filters (the Conv2d weight, D filters of
    3×4×4 values), each shown as a 4×4 RGB patch, with the variance each explains, against
    random filter banks of the same shape."""
    trained = _model().patch_embed.proj.weight.detach()
    w = trained.double()  # (D, 3, P, P)
    D, C, P, _ = w.shape
    flat = w.reshape(D, -1)  # (D, 3 P^2)
    flat = flat - flat.mean(0, keepdim=True)
    _, s, vt = torch.linalg.svd(flat, full_matrices=False)
    var = (s**2 / (s**2).sum()).numpy()
    comps = vt[:12].reshape(12, C, P, P).numpy()
    rand = _random_spectra()
    w0 = _random_model().patch_embed.proj.weight.detach()  # the filters seed 0 started from
    init = _spectrum(w0)
    r_pc1 = np.quantile(rand[:, 0], [0.025, 0.5, 0.975])
    r_90 = (np.cumsum(rand, 1) < 0.9).sum(1) + 1
    rec.fact("filter_count", D)
    rec.fact("filter_values", C * P * P)
    rec.fact("pc1_var", var[0], "{:.0%}", tol=0.03)
    rec.fact("pc12_var", var[:12].sum(), "{:.0%}", tol=0.03)
    rec.fact("pcs_for_90", int(np.searchsorted(np.cumsum(var), 0.9) + 1), tol=2)
    rec.fact("rand_pc1_lo", r_pc1[0], "{:.0%}")
    rec.fact("rand_pc1_hi", r_pc1[2], "{:.0%}")
    rec.fact("rand_pc12", float(np.median(rand[:, :12].sum(1))), "{:.0%}")
    rec.fact("rand_pcs_for_90", int(np.median(r_90)))
    rec.fact("rand_draws", RANDOM_DRAWS)
    rec.fact("init_pc1_var", init[0], "{:.0%}")
    rec.fact("pc1_vs_random", _vs_range(var[0], r_pc1[0], r_pc1[2]))
    # did training move the filters? their change from the true initialisation, against their
    # distance from random filters they did not start from
    rec.fact("filter_rel_change", _rel_change(trained, w0), "{:.0%}", tol=0.05)
    other = _fresh_model().patch_embed.proj.weight
    rec.fact("filter_rel_change_other", _rel_change(trained, other), "{:.0%}", tol=0.05)
    return {"comps": comps, "var": var, "rand_lo": np.quantile(rand, 0.025, 0),
            "rand_hi": np.quantile(rand, 0.975, 0)}  # fmt: skip


@embedding_filters.draw
def _(d, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    phone = plot.is_phone(v)
    grid = (
        fig.add_gridspec(3, 6, height_ratios=[1, 1, 2.4])
        if phone
        else fig.add_gridspec(2, 8, width_ratios=[1] * 6 + [0.3, 3.2])
    )
    for i, comp in enumerate(d["comps"]):
        ax = fig.add_subplot(grid[i // 6, i % 6])
        img = comp.transpose(1, 2, 0)
        img = 0.5 + 0.5 * img / np.abs(img).max()  # each component scaled to fill [0, 1]
        plot.show_image(ax, img)
        ax.set_title(f"PC {i + 1}", fontsize=8, loc="center", fontweight="normal")
    ax = fig.add_subplot(grid[2, :] if phone else grid[:, 7])
    k = np.arange(1, len(d["var"]) + 1)
    ax.bar(k, 100 * d["var"], color=c["blue"], width=0.7, label="trained filters")
    ax.fill_between(k, 100 * d["rand_lo"], 100 * d["rand_hi"], color=c["fg"], alpha=0.35,
                    lw=0, step="mid", zorder=3, label="random filters (95%)")  # fmt: skip
    ax.legend(loc="upper right", fontsize=8)
    ax.set(xlabel="component", ylabel="variance explained (%)",
           ylim=(0, 1.25 * 100 * max(d["var"][0], d["rand_hi"][0])))  # fmt: skip
    return fig


@figure(chapter=10, id="pos-similarity", size=(5.6, 5.2), trained=True, phone_size=4.0)
def pos_similarity(rec):
    """Cosine similarity between the learned position embedding of each patch (one small map
    per patch, at its place in the grid) and those of all the others."""
    model = _model()
    gh, gw = model.cfg.grid
    sim = cosine_similarity_map(model.pos_embed.detach(), (gh, gw)).numpy()  # (gh, gw, gh, gw)
    for name, value in position_summary(model).items():
        rec.fact(f"sim_{name}", value, "{:.2f}")
    # the gaps the text reads, against the same table's vectors shuffled over the grid
    for name, (gap, null_hi) in position_null(model).items():
        rec.fact(f"sim_gap_{name}", gap, "{:.2f}")
        rec.fact(f"sim_{name}_null_hi", null_hi, "{:.2f}")
    rec.fact("pos_shuffles", POS_SHUFFLES, "{:,}")
    rec.fact("pos_null_quantile", POS_NULL_QUANTILE, "{:.1%}")
    # what a patch's distance from the centre says about the task: how often the object's box
    # covers the patch's centre, on the innermost and the outermost ring of patches
    s, _ = _test_set()
    cover = _in_box(s.boxes, (gh, gw), model.cfg.patch_size).mean(0)  # (N,)
    ring = _rings((gh, gw))
    rec.fact("cover_inner", float(cover[ring == ring.min()].mean()), "{:.0%}")
    rec.fact("cover_outer", float(cover[ring == ring.max()].mean()), "{:.0%}")
    rec.fact("pos_grid", f"{gh}×{gw}")
    # the maps' colour scale, and how many similarities between two different patches it clips
    off = ~np.eye(gh * gw, dtype=bool)
    rec.fact("pos_scale", POS_SCALE, "{:.1f}")
    rec.fact("pos_clipped_share", float((np.abs(sim.reshape(gh * gw, -1)[off]) > POS_SCALE).mean()),
             "{:.0%}")  # fmt: skip
    return {"sim": sim}


def _rings(grid: tuple[int, int]) -> np.ndarray:
    """(N,): each patch's square ring around the grid's centre, 1 for the innermost (in units
    of half a patch: 1, 3, 5, ...)."""
    gh, gw = grid
    r, c = np.divmod(np.arange(gh * gw), gw)
    return np.maximum(np.abs(2 * r - (gh - 1)), np.abs(2 * c - (gw - 1)))


def position_summary(model: VisionTransformer) -> dict[str, float]:
    """Mean cosine similarity of the learned position embeddings over kinds of patch pairs:
    neighbours, far apart (Manhattan distance of a grid width or more), the same row, the same
    column, neither, mirror images across the vertical and the horizontal midline, and pairs
    far apart (half a grid width or more) at the same or another distance from the centre
    (the ring of a square around it)."""
    gh, gw = model.cfg.grid
    flat = _pos_similarity(model)
    return {name: float(flat[mask].mean()) for name, mask in _pair_kinds((gh, gw)).items()}


def _pos_similarity(model: VisionTransformer) -> np.ndarray:
    """(N, N) cosine similarity between the learned position vectors of the patches."""
    gh, gw = model.cfg.grid
    sim = cosine_similarity_map(model.pos_embed.detach(), (gh, gw)).numpy()
    return sim.reshape(gh * gw, -1)


#: The gaps the text reads in the position table: (kind of pairs, kind it is compared with).
POS_GAPS = {"neighbour": ("neighbour", "far"), "ring": ("far_same_ring", "far_other_ring"),
            "row": ("same_row", "other"),
            # the ring gap with every pair that shares a row or a column left out
            "ring_no_rowcol": ("far_same_ring_no_rowcol", "far_other_ring_no_rowcol")}  # fmt: skip


def position_null(model: VisionTransformer, draws: int = POS_SHUFFLES, seed: int = 0):
    """For each gap of :data:`POS_GAPS`: the gap in ``model``'s table, and the 97.5% quantile of
    the same gap when the table's vectors are shuffled over the grid (``draws`` seeded
    permutations), which keeps every similarity and breaks only where the vectors sit."""
    gh, gw = model.cfg.grid
    n = gh * gw
    sim = _pos_similarity(model)
    kinds = _pair_kinds((gh, gw))
    rng = np.random.default_rng(seed)
    perm = np.stack([rng.permutation(n) for _ in range(draws)])  # (draws, N)
    shuffled = sim[perm[:, :, None], perm[:, None, :]]  # (draws, N, N); the diagonal stays put
    out = {}
    for name, (a, b) in POS_GAPS.items():
        gap = sim[kinds[a]].mean() - sim[kinds[b]].mean()
        null = shuffled[:, kinds[a]].mean(1) - shuffled[:, kinds[b]].mean(1)
        out[name] = (float(gap), float(np.quantile(null, POS_NULL_QUANTILE)))
    return out


def _pair_kinds(grid: tuple[int, int]) -> dict[str, np.ndarray]:
    """(N, N) bool masks of the kinds of patch pairs :func:`position_summary` averages over."""
    gh, gw = grid
    r, c = np.divmod(np.arange(gh * gw), gw)
    dist = np.abs(r[:, None] - r[None]) + np.abs(c[:, None] - c[None])  # Manhattan, in patches
    ring = _rings((gh, gw))
    same_r, same_c = r[:, None] == r[None], c[:, None] == c[None]
    apart = dist > 0
    far = dist >= max(gh, gw) // 2
    return {
        "neighbour": dist == 1,
        "far": dist >= gh,
        "same_row": same_r & apart,
        "same_col": same_c & apart,
        "other": ~same_r & ~same_c,
        "mirror_lr": same_r & (c[:, None] + c[None] == gw - 1) & apart,
        "mirror_tb": same_c & (r[:, None] + r[None] == gh - 1) & apart,
        "far_same_ring": far & (ring[:, None] == ring[None]),
        "far_other_ring": far & (ring[:, None] != ring[None]),
        "far_same_ring_no_rowcol": far & (ring[:, None] == ring[None]) & ~same_r & ~same_c,
        "far_other_ring_no_rowcol": far & (ring[:, None] != ring[None]) & ~same_r & ~same_c,
    }


@pos_similarity.draw
def _(d, v):
    c = plot.colors(v)
    sim = d["sim"]
    gh, gw = sim.shape[:2]
    # a patch's similarity with itself (1) is masked: it would set the scale for nothing
    off = ~np.eye(gh * gw, dtype=bool).reshape(gh, gw, gh, gw)
    lim = POS_SCALE
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=c["muted"])
    fig, axes = plot.subplots(v, gh, gw, gridspec_kw={"wspace": 0.05, "hspace": 0.05})
    for i in range(gh):
        for j in range(gw):
            ax = axes[i, j]
            m = np.ma.masked_where(~off[i, j], sim[i, j])
            im = ax.imshow(m, cmap=cmap, vmin=-lim, vmax=lim)
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(str(i + 1), fontsize=8, rotation=0, labelpad=6, va="center")
            if i == gh - 1:
                ax.set_xlabel(str(j + 1), fontsize=8)
    fig.supxlabel("input patch column", fontsize=9)
    fig.supylabel("input patch row", fontsize=9)
    fig.colorbar(im, ax=axes, shrink=0.6, extend="both",
                 label="cosine similarity (grey: the patch itself)")  # fmt: skip
    return fig


# --8<-- [start:findings]
def findings(model: VisionTransformer, seed: int = 0) -> dict[str, float | str]:
    """The chapter's measurements of one pre-trained model (from pre-training ``seed``), each
    as the figures compute it: test accuracy, the first filter component against random banks
    and how far the filters moved from their initialisation, the position similarities and
    their gaps against shuffled tables, attention distances and the attention on the object,
    the localisation hit rates with their verdicts, the randomisation check and the deletion
    verdict."""
    s, x = _test_set()
    w = model.patch_embed.proj.weight
    var = _spectrum(w.detach())
    r_pc1 = np.quantile(_random_spectra()[:, 0], [0.025, 0.975])
    dist = _distances(model, x[:DIST_IMAGES])
    share, area, shuffled = _on_object(model, s, x, DIST_IMAGES)
    hits, _, (_, _, pred) = localisation(model, s, x)
    corr, _, area_del, _ = _checks(model, s, x[:DELETE_IMAGES], levels=1)
    null = position_null(model)
    return {
        "acc": float((pred == s.labels).mean()),
        "pc1_var": float(var[0]),
        "pc1_vs_random": _vs_range(var[0], *r_pc1),
        # the filters the model started from, against the same random banks
        "init_pc1_vs_random": _vs_range(
            _spectrum(_random_model(seed).patch_embed.proj.weight.detach())[0], *r_pc1
        ),
        "filter_moved": _rel_change(w, _random_model(seed).patch_embed.proj.weight),
        **{f"sim_{k}": v for k, v in position_summary(model).items()},
        **{f"gap_{k}": gap for k, (gap, _) in null.items()},
        **{f"null_{k}": hi for k, (_, hi) in null.items()},
        "dist_l1_mean": float(dist[0].mean()),
        "dist_last_mean": float(dist[-1].mean()),
        "dist_min": float(dist.min()),
        "dist_max": float(dist.max()),
        "dist_low_block": _low_block(dist),
        "dist_dip": _dist_dip(dist),
        "on_object": float(share.mean()),
        "on_object_shuffled": float(shuffled.mean()),
        # "higher": more attention on the image's own box than on another image's, image by image
        "on_object_vs_shuffled": _paired(share, shuffled),
        # "higher": more attention on the object than uniform attention would give it
        "on_object_vs_uniform": {"below": "higher", "above": "lower"}.get(
            _vs_range(float(area.mean()), *stats.interval(share)), "indistinguishable"
        ),
        "loc_rollout": float(hits["rollout"].mean()),
        "loc_raw": float(hits["raw"].mean()),
        "rollout_vs_raw": _overlap(hits["rollout"], hits["raw"]),
        "rollout_vs_saliency": _overlap(hits["rollout"], hits["saliency"]),
        "rand_corr_roll_top": float(corr["roll"][:, 0].mean()),
        "del_rollout_vs_raw": _paired(area_del["rollout"], area_del["raw"]),
    }
    # --8<-- [end:findings]


#: How each finding is printed (fractions as percentages, similarities and correlations as
#: two decimals, distances in pixels with one).
FINDING_FORMAT = {"acc": "{:.1%}", "pc1_var": "{:.0%}", "on_object": "{:.0%}",
                  "loc_rollout": "{:.1%}", "loc_raw": "{:.1%}", "dist_l1_mean": "{:.1f}",
                  "dist_last_mean": "{:.1f}", "dist_min": "{:.1f}", "dist_max": "{:.1f}",
                  "dist_low_block": "{:d}", "filter_moved": "{:.0%}", "dist_dip": "{:.1f}",
                  "on_object_shuffled": "{:.0%}"}  # fmt: skip


def _finding_format(name: str) -> str:
    """How finding ``name`` is printed: :data:`FINDING_FORMAT`, else two decimals, three for
    the position gaps and their shuffled nulls (a gap and its null can differ in the third)."""
    if name in FINDING_FORMAT:
        return FINDING_FORMAT[name]
    return "{:.3f}" if name.startswith(("gap_", "null_")) else "{:.2f}"


#: Every verdict a finding can give: the across-seeds check counts the models with each.
VERDICTS = ("higher", "lower", "indistinguishable", "above", "below", "within")


@facts(chapter=10, id="across-seeds", trained=True)
def across_seeds(rec):
    """Every finding of the chapter measured on every pre-trained model (seeds 0 to N - 1 of
    Chapter 9's pre-training): which of them hold for every model, and which for seed 0 only."""
    rows = {seed: findings(_model(seed), seed) for seed in runs.PRE_SEEDS}
    rec.fact("pre_seeds", len(runs.PRE_SEEDS))
    rec.fact("pre_seeds_more", len(runs.PRE_SEEDS) - 1)
    rec.fact("pre_seed_last", max(runs.PRE_SEEDS))
    for name in rows[0]:
        values = [rows[seed][name] for seed in runs.PRE_SEEDS]
        for seed, value in zip(runs.PRE_SEEDS, values, strict=True):
            if isinstance(value, str):
                rec.fact(f"s{seed}_{name}", value)
            else:
                rec.fact(f"s{seed}_{name}", value, _finding_format(name))
        if isinstance(values[0], str):  # a verdict: the same for every model, or not
            rec.fact(f"all_{name}", values[0] if len(set(values)) == 1 else "mixed")
            for verdict in VERDICTS:  # and in how many models each verdict came out
                rec.fact(f"n_{name}_is_{verdict}", values.count(verdict))
        else:  # the range over the models
            fmt = _finding_format(name)
            rec.fact(f"min_{name}", min(values), fmt)
            rec.fact(f"max_{name}", max(values), fmt)
    # how far the block means of the attention distance stray from uniform attention's
    uniform = _uniform_distance(_model().cfg)
    blocks = ("dist_l1_mean", "dist_last_mean")
    dev = max(abs(r[k] - uniform) for r in rows.values() for k in blocks)
    rec.fact("dist_max_dev", _round_up(dev), "{:.2f}")  # a bound: rounded up, never down
    # ... and every head of every block, and where the dip is: the block with the lowest mean
    # is a middle one (neither the first nor the last) in how many models
    head_dev = max(abs(r[k] - uniform) for r in rows.values() for k in ("dist_min", "dist_max"))
    rec.fact("dist_head_max_dev", _round_up(head_dev), "{:.2f}")
    depth = _model().cfg.depth
    rec.fact("n_dist_low_middle", sum(1 < r["dist_low_block"] < depth for r in rows.values()))
    # ... against chance: each block equally likely to be the lowest, at least that many models
    k, n = sum(1 < r["dist_low_block"] < depth for r in rows.values()), len(rows)
    rec.fact("n_middle_blocks", depth - 2)
    rec.fact("dist_low_middle_chance", _binomial_tail(k, n, (depth - 2) / depth), "{:.2f}")
    # the position gaps against their shuffled-table null: in how many models above it
    for name in POS_GAPS:
        rec.fact(f"n_gap_{name}_above_null",
                 sum(r[f"gap_{name}"] > r[f"null_{name}"] for r in rows.values()))  # fmt: skip
    # the position code: how many models have each ordering of similarities
    for a, b in (("neighbour", "far"), ("mirror_lr", "neighbour"), ("mirror_tb", "neighbour"),
                 ("far_same_ring", "far_other_ring"), ("same_row", "same_col")):  # fmt: skip
        rec.fact(f"n_{a}_gt_{b}", sum(r[f"sim_{a}"] > r[f"sim_{b}"] for r in rows.values()))
    # the ring gap against the other two gaps: the largest of the three in how many models
    largest = _shortfall_tests(depth)["gap_ring_largest"]
    rec.fact("n_gap_ring_largest", sum(largest(r) for r in rows.values()))
    # the ring gap without row and column pairs: the model where it clears its shuffles least
    margin = {s: r["gap_ring_no_rowcol"] - r["null_ring_no_rowcol"] for s, r in rows.items()}
    narrowest = min(margin, key=margin.get)
    rec.fact("ring_no_rowcol_margin_seed", narrowest)
    rec.fact("ring_no_rowcol_margin", margin[narrowest], "{:+.4f}")
    # does the distance grow with depth? the last block's mean at most the first's
    rec.fact("n_dist_not_growing",
             sum(r["dist_last_mean"] <= r["dist_l1_mean"] for r in rows.values()))  # fmt: skip
    # the models whose first component stands out: did they start inside the random range?
    above = [r for r in rows.values() if r["pc1_vs_random"] == "above"]
    rec.fact("pc1_above_started_within",
             bool(above) and all(r["init_pc1_vs_random"] == "within" for r in above))  # fmt: skip
    weak = weakness(rows, depth)
    for name, value in weak.items():
        rec.fact(name, value, "{:.1%}" if name == "weakest_acc" else None)
    return rows


def _binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    from math import comb

    return float(sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def _round_up(x: float, decimals: int = 2) -> float:
    """``x`` rounded up at ``decimals``: a bound printed below its value would not be a bound."""
    return float(np.ceil(x * 10**decimals - 1e-9) / 10**decimals)


def _seed_list(seeds: list[int]) -> str:
    """ "3", "1 and 3", "0, 1 and 3"."""
    names = [str(s) for s in sorted(seeds)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


#: The per-model tests behind the counts the text prints: a model "falls short" of a finding
#: when its test is False.
def _shortfall_tests(depth: int) -> dict:
    return {
        "rollout_vs_raw": lambda r: r["rollout_vs_raw"] == "higher",
        "on_object_vs_uniform": lambda r: r["on_object_vs_uniform"] == "higher",
        "on_object_vs_shuffled": lambda r: r["on_object_vs_shuffled"] == "higher",
        "dist_low_middle": lambda r: 1 < r["dist_low_block"] < depth,
        "dist_not_growing": lambda r: r["dist_last_mean"] <= r["dist_l1_mean"],
        "neighbour_gt_far": lambda r: r["sim_neighbour"] > r["sim_far"],
        "far_same_ring_gt_far_other_ring": (
            lambda r: r["sim_far_same_ring"] > r["sim_far_other_ring"]
        ),
        **{f"gap_{k}_above_null": (lambda r, k=k: r[f"gap_{k}"] > r[f"null_{k}"])
           for k in POS_GAPS},
        "gap_ring_largest": lambda r: r["gap_ring"] > max(r["gap_neighbour"], r["gap_row"]),
        "del_rollout_vs_raw": lambda r: r["del_rollout_vs_raw"] == "lower",
    }  # fmt: skip


def weakness(rows: dict[int, dict], depth: int) -> dict[str, object]:
    """Which model learned least (lowest test accuracy), how many of the shortfalls of
    :func:`_shortfall_tests` are its own, whether every test holds in every model, and which
    models' first filter component stands out above random banks (and whether they are the
    ones that learned least)."""
    seeds = sorted(rows)
    by_acc = sorted(seeds, key=lambda s: rows[s]["acc"])
    weakest = by_acc[0]
    fails = {s: [k for k, t in _shortfall_tests(depth).items() if not t(rows[s])] for s in seeds}
    above = [s for s in seeds if rows[s]["pc1_vs_random"] == "above"]
    return {
        "weakest_seed": weakest,
        "weakest_acc": rows[weakest]["acc"],
        "n_shortfalls": sum(len(f) for f in fails.values()),
        "n_shortfalls_weakest": len(fails[weakest]),
        "all_findings_shared": not any(fails.values())
        and len({r["pc1_vs_random"] for r in rows.values()}) == 1,
        "pc1_above_seeds": _seed_list(above) if above else "none",
        # the models whose component stands out are exactly the ones that learned least
        "pc1_above_are_weakest": bool(above) and sorted(above) == sorted(by_acc[: len(above)]),
    }


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
