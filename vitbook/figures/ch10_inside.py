"""Chapter 10, Inside a trained ViT: filters, positions, attention distance, rollout, and cost
of windowed attention. Everything is measured on the small ViT pre-trained in Chapter 9."""

from __future__ import annotations

from itertools import combinations

import matplotlib
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
from vitbook.experiments import stats
from vitbook.experiments.pretrain import PRETRAIN_TEST_SEED, SHAPES_CFG
from vitbook.model import VisionTransformer

N_TEST = 1000  # test images for the measured scores
DIST_IMAGES = 256  # test images behind the attention distances
SHOW = 6  # images drawn in the rollout figure


RANDOM_DRAWS = 200  # random filter banks for the spectrum's baseline
DELETE_IMAGES = 300  # test images of the deletion curve
DELETE_STEPS = np.linspace(0, 0.5, 9)  # shares of patches deleted
# Random weights that no pre-training started from: the randomisation check re-initialises with
# the draws of torch seeds FRESH_SEED, FRESH_SEED + 1, ... (the pre-training seeds are 0 to N - 1)
FRESH_SEED = 1000
FRESH_DRAWS = 6  # fully random models: the check's last point and its null (pairs of them)
POS_SHUFFLES = 2000  # permutations of the position table over the grid: the similarities' null
POS_NULL_QUANTILE = 0.975  # the gap quoted for the shuffles: this share of them stays below it
POS_SCALE = 0.3  # the similarity maps' colour scale runs from -POS_SCALE to POS_SCALE (clipped)
BOX_SHUFFLES = 20  # each image's attention scored against another image's box: the centre prior


def _model(seed: int = 0) -> VisionTransformer:
    """The small ViT pre-trained in Chapter 9 with ``seed`` (seed 0: the one every figure
    shows)."""
    return runs.pretrained_shapes_vit(seed=seed)["model"]


def _random_model(seed: int = 0) -> VisionTransformer:
    """The weights pre-training ``seed`` started from: ``pretrain`` seeds torch and builds the
    model before anything else draws from the generator, and so does this (loading a frozen
    model first would draw from it and give other weights)."""
    torch.manual_seed(seed)
    return VisionTransformer(cfg=SHAPES_CFG).eval()


def _fresh_model(draw: int = 0) -> VisionTransformer:
    """Random weights of the same architecture that no pre-training started from (torch seed
    ``FRESH_SEED + draw``): what the randomisation check re-initialises with."""
    return _random_model(FRESH_SEED + draw)


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


def _test_set():
    s = make_shapes(N_TEST, classes=PRETRAIN_CLASSES, seed=PRETRAIN_TEST_SEED)
    return s, s.tensors()[0]


@torch.no_grad()
def _attn(model, x):
    out = model.forward_intermediates(x, attn=True)
    return out["attn"], out["logits"]


def _in_box(boxes: np.ndarray, grid: tuple[int, int], patch: int) -> np.ndarray:
    """(n, gh * gw) bool: is each patch's centre inside the image's box?"""
    gh, gw = grid
    cy = np.repeat(np.arange(gh), gw) * patch + patch / 2
    cx = np.tile(np.arange(gw), gh) * patch + patch / 2
    x0, y0, x1, y1 = (boxes[:, i : i + 1] for i in range(4))
    return (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)


@figure(chapter=10, id="attention-distance", size=(7.2, 3.2), trained=True)
def attention_distance(rec):
    """Mean attention distance of every head in every layer, averaged over test images, for
    the trained model and for the same model with random weights."""
    model = _model()
    s, x = _test_set()
    n = DIST_IMAGES
    cfg = model.cfg
    dist = _distances(model, x[:n])
    rdist = _distances(_random_model(), x[:n])
    for name, val in (
        ("dist_l1_min", dist[0].min()),
        ("dist_l1_max", dist[0].max()),
        ("dist_last_min", dist[-1].min()),
        ("dist_last_max", dist[-1].max()),
        ("dist_l1_mean", dist[0].mean()),
        ("dist_last_mean", dist[-1].mean()),
    ):
        rec.fact(name, float(val), "{:.1f}", tol=0.5)  # fmt: skip
    # every block and head, and the depth where the heads look closest
    rec.fact("dist_all_min", float(dist.min()), "{:.1f}", tol=0.5)
    rec.fact("dist_all_max", float(dist.max()), "{:.1f}", tol=0.5)
    block = dist.mean(1)
    rec.fact("dist_low_block", _low_block(dist))
    rec.fact("dist_low_block_mean", float(block.min()), "{:.1f}", tol=0.5)
    rec.fact("dist_random_min", float(rdist.min()), "{:.1f}")
    rec.fact("dist_random_max", float(rdist.max()), "{:.1f}")
    uniform = _uniform_distance(cfg)
    rec.fact("dist_uniform", uniform, "{:.1f}")
    # the claim behind the numbers: patch queries (not the class token) attend to the object
    share, area, shuffled = _on_object(model, s, x, n)
    lo, hi = stats.interval(share)
    rec.fact("patch_on_object", float(share.mean()), "{:.0%}", tol=max(0.03, hi - lo))
    rec.fact("patch_on_object_lo", lo, "{:.0%}", tol=max(0.03, hi - lo))
    rec.fact("patch_on_object_hi", hi, "{:.0%}", tol=max(0.03, hi - lo))
    rec.fact("object_area", float(area.mean()), "{:.0%}")
    rec.fact("patch_on_object_shuffled", float(shuffled.mean()), "{:.0%}", tol=0.03)
    rec.fact("box_shuffles", BOX_SHUFFLES)
    rec.fact("patch_on_object_vs_shuffled", _paired(share, shuffled))
    rec.fact("depth", cfg.depth)
    rec.fact("heads", cfg.heads)
    rec.fact("image_px", cfg.image_hw[0])
    rec.fact("dist_images", n)
    return {"dist": dist, "rdist": rdist, "uniform": uniform}


def _low_block(dist: np.ndarray) -> int:
    """The block (counted from 1) whose heads' mean attention distance is lowest."""
    return int(dist.mean(1).argmin()) + 1


def _dist_dip(dist: np.ndarray) -> float:
    """How far (pixels) the lowest middle block's mean attention distance lies below the mean
    of the first and the last block's (negative: above it)."""
    block = dist.mean(1)
    return float((block[0] + block[-1]) / 2 - block[1:-1].min())


def _distances(model: VisionTransformer, x: torch.Tensor) -> np.ndarray:
    """(layers, heads): mean attention distance of every head over the images ``x``."""
    attns, _ = _attn(model, x)
    cfg = model.cfg
    return np.stack([mean_attention_distance(a, cfg.grid, cfg.patch_size).numpy() for a in attns])


def _uniform_distance(cfg) -> float:
    """The mean distance between patch centres: what uniform attention over the patches gives."""
    ys, xs = np.meshgrid(np.arange(cfg.grid[0]), np.arange(cfg.grid[1]), indexing="ij")
    centres = np.stack([ys.ravel(), xs.ravel()], -1) * cfg.patch_size
    return float(np.linalg.norm(centres[:, None] - centres[None], axis=-1).mean())


def _other_image(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n,): for each of ``n`` images the index of another one, never itself (a random cycle
    through all of them)."""
    order = rng.permutation(n)
    other = np.empty(n, dtype=int)
    other[order] = np.roll(order, 1)
    return other


def _on_object(model: VisionTransformer, s, x: torch.Tensor, n: int):
    """Per image: the share of the last block's patch-to-patch attention (mean over heads and
    patch queries) that lands on the object's patches, the object's share of the patches
    (what uniform attention would give), and the share the same attention sends to another
    image's box (mean over :data:`BOX_SHUFFLES` seeded shuffles of the boxes): that keeps any
    preference for where boxes usually lie and removes the object itself."""
    cfg = model.cfg
    attns, _ = _attn(model, x[:n])
    inside = _in_box(s.boxes[:n], cfg.grid, cfg.patch_size)  # (n, N)
    last = attns[-1][:, :, 1:, 1:].double()  # patch queries, patch keys (B, heads, N, N)
    last = last / last.sum(-1, keepdim=True)
    per_key = last.mean((1, 2))  # (B, N): the attention each patch receives, on average
    on_obj = (per_key * torch.from_numpy(inside)).sum(-1)  # (B,)
    rng = np.random.default_rng(0)
    shuffled = np.mean([(per_key * torch.from_numpy(inside[_other_image(rng, n)])).sum(-1).numpy()
                        for _ in range(BOX_SHUFFLES)], axis=0)  # fmt: skip
    return on_obj.numpy(), inside.mean(1), shuffled


@attention_distance.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    dist = d["dist"]
    L, H = dist.shape
    for h in range(H):
        ax.plot(np.arange(1, L + 1) + (h - (H - 1) / 2) * 0.05, dist[:, h], "o", ms=6,
                color=c[plot.CYCLE[h % len(plot.CYCLE)]], alpha=0.9)  # fmt: skip
        ax.plot(np.arange(1, L + 1) + 0.3 + (h - (H - 1) / 2) * 0.04, d["rdist"][:, h], "x",
                ms=5, color=c["muted"])  # fmt: skip
    ax.plot(np.arange(1, L + 1), dist.mean(1), color=c["muted"], lw=1)
    ax.axhline(d["uniform"], color=c["muted"], ls="--", lw=0.8)
    ax.text(L + 0.45, d["uniform"], "uniform\nattention", color=c["muted"], fontsize=8,
            va="center")  # fmt: skip
    ax.set_xticks(np.arange(1, L + 1))
    ax.set_xlim(0.6, L + 1.3)
    # the heads differ by fractions of a pixel: the axis covers only the band they lie in
    every = np.concatenate([dist.ravel(), d["rdist"].ravel(), [d["uniform"]]])
    lo, hi = np.floor(2 * every.min()) / 2 - 0.5, np.ceil(2 * every.max()) / 2 + 0.5
    ax.set(xlabel="layer (block)", ylabel="mean attention distance (pixels)", ylim=(lo, hi))
    note = "dots: the heads of the trained model; ×: random weights; line: each block's mean"
    ax.text(0.02, 0.04, note.replace("; ", ";\n") if plot.is_phone(v) else note,
            fontsize=8, color=c["fg"], transform=ax.transAxes)  # fmt: skip
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


def _maps(model, x, grid):
    """Raw last-layer CLS attention (heads averaged) and rollout maps, (n, gh, gw) each, and
    the predictions."""
    raw_maps, roll_maps, preds = [], [], []
    for i in range(0, len(x), 250):
        attns, logits = _attn(model, x[i : i + 250])
        last = attns[-1].mean(1)[:, 0, 1:]  # (B, N): CLS row of the last layer, heads averaged
        raw_maps.append(last.reshape(-1, *grid))
        roll_maps.append(rollout_cls_map(attention_rollout(attns), grid))  # (B, gh, gw)
        preds.append(logits.argmax(-1))
    return torch.cat(raw_maps).numpy(), torch.cat(roll_maps).numpy(), torch.cat(preds).numpy()


def colour_saliency(images: np.ndarray, patch: int) -> np.ndarray:
    """The trivial heuristic: each patch's mean saturation (max minus min over the RGB
    channels), (n, gh, gw). The objects are saturated and the background is not."""
    sat = images.max(1) - images.min(1)  # (n, H, W)
    n, h, w = sat.shape
    return sat.reshape(n, h // patch, patch, w // patch, patch).mean((2, 4))


# --8<-- [start:localisation]
def localisation(model: VisionTransformer, s, x: torch.Tensor):
    """For each test image and each map (rollout and last-layer CLS attention of ``model``,
    the colour-saliency heuristic, and both maps of the same model with random weights): is
    the map's peak inside the object's box? Also the maps and the predictions, and chance."""
    cfg = model.cfg
    raw, roll, pred = _maps(model, x, cfg.grid)
    r_raw, r_roll, _ = _maps(_random_model(), x, cfg.grid)
    hits = {
        "rollout": _peak_inside(roll, s.boxes, cfg.patch_size),
        "raw": _peak_inside(raw, s.boxes, cfg.patch_size),
        "saliency": _peak_inside(
            colour_saliency(s.images, cfg.patch_size), s.boxes, cfg.patch_size
        ),  # fmt: skip
        "random_rollout": _peak_inside(r_roll, s.boxes, cfg.patch_size),
        "random_raw": _peak_inside(r_raw, s.boxes, cfg.patch_size),
    }
    chance = _chance(s.boxes, cfg.grid, cfg.patch_size)
    return hits, chance, (raw, roll, pred)
    # --8<-- [end:localisation]


def _overlap(a: np.ndarray, b: np.ndarray) -> str:
    """Higher or lower when the 95% bootstrap intervals of two hit rates do not overlap."""
    la, ha = stats.interval(a)
    lb, hb = stats.interval(b)
    return "higher" if la > hb else "lower" if ha < lb else "indistinguishable"


@figure(chapter=10, id="rollout", size=(7.2, 4.3), trained=True, phone_size=8.4)
def rollout(rec):
    """Raw last-layer CLS attention (mean over heads) and attention rollout on test images of
    the six shapes, and how often each map's peak lands inside the object's box, against
    chance, a colour-saliency heuristic and the same model with random weights."""
    model = _model()
    s, x = _test_set()
    hits, chance, (raw, roll, pred) = localisation(model, s, x)
    correct = pred == s.labels
    rec.fact("loc_images", len(x), "{:,}")
    for k, h in hits.items():
        lo, hi = stats.interval(h)
        tol = max(0.02, hi - lo) if "random" not in k and k != "saliency" else None
        rec.fact(f"loc_{k}", h.mean(), "{:.1%}", tol=tol)
        rec.fact(f"loc_{k}_lo", lo, "{:.1%}", tol=tol)
        rec.fact(f"loc_{k}_hi", hi, "{:.1%}", tol=tol)
    rec.fact("loc_chance", chance, "{:.1%}")
    rec.fact("loc_rollout_vs_raw", _overlap(hits["rollout"], hits["raw"]))
    rec.fact("loc_rollout_vs_saliency", _overlap(hits["rollout"], hits["saliency"]))
    rec.fact("loc_rollout_vs_random", _overlap(hits["rollout"], hits["random_rollout"]))
    wrong = hits["rollout"][~correct]
    rec.fact("loc_rollout_correct", hits["rollout"][correct].mean(), "{:.1%}", tol=0.03)
    rec.fact("loc_rollout_wrong", wrong.mean() if len(wrong) else float("nan"), "{:.1%}",
             tol=0.15)  # fmt: skip
    rec.fact("loc_n_wrong", int((~correct).sum()), tol=15)
    # "higher"/"lower" only when the two hit rates' 95% intervals do not overlap
    rec.fact("loc_rollout_wrong_vs_correct", _overlap(wrong, hits["rollout"][correct]))
    rec.fact("loc_acc", correct.mean(), "{:.1%}", tol=0.03)
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
    fig = plot.new_figure(v)
    # on a phone the images come in two blocks of three rows, half of them in each
    per = -(-n // 2) if plot.is_phone(v) else n
    blocks = -(-n // per)
    grid = fig.add_gridspec(3 * blocks, per + 1, width_ratios=[1] * per + [0.12])
    rows = [("image", None), ("last-layer\nCLS attention", "raw"), ("attention\nrollout", "roll")]
    for j in range(n):
        for i, (name, key) in enumerate(rows):
            ax = fig.add_subplot(grid[3 * (j // per) + i, j % per])
            if key is None:
                plot.show_image(ax, d["images"][j])
                ok = d["labels"][j] == d["preds"][j]
                # a phone's columns are narrower than "(model: diamond)": no brackets there
                said = plot.pick(v, f"(model: {d['preds'][j]})", f"model: {d['preds'][j]}")
                ax.set_title(f"{d['labels'][j]}\n{said}", fontsize=8, loc="center",
                             fontweight="normal", color=c["fg"] if ok else c["red"])  # fmt: skip
                edge = c["fg"]
            else:
                # the map alone, in grey levels: its intensity cannot pass for an object's colour
                m = d[key][j]
                im = ax.imshow(m / m.max(), cmap="gray", vmin=0, vmax=1, interpolation="nearest",
                               extent=(-0.5, 31.5, 31.5, -0.5))  # fmt: skip
                ax.set_xticks([])
                ax.set_yticks([])
                for spine in ax.spines.values():
                    spine.set_visible(False)
                edge = c["orange"]
            x0, y0, x1, y1 = d["boxes"][j]
            ax.add_patch(plot.Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False,
                                        ec=edge, lw=1.2, ls="--"))  # fmt: skip
            if j % per == 0:
                ax.set_ylabel(name, fontsize=8)
    cax = fig.add_subplot(grid[1:3, per] if blocks > 1 else grid[1:, n])
    fig.colorbar(im, cax=cax, label="weight / image's maximum")
    return fig


def _rank_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman rank correlation between paired maps, one value per image."""
    ra = a.reshape(len(a), -1).argsort(1).argsort(1).astype(float)
    rb = b.reshape(len(b), -1).argsort(1).argsort(1).astype(float)
    ra -= ra.mean(1, keepdims=True)
    rb -= rb.mean(1, keepdims=True)
    return (ra * rb).sum(1) / np.sqrt((ra**2).sum(1) * (rb**2).sum(1))


def _randomised(model, k: int, draw: int = 0):
    """``model`` with its top ``k`` blocks (and for k > depth the final norm, the
    embeddings too) replaced by fresh weights (:func:`_fresh_model` ``draw``): cascading
    randomisation (Adebayo et al.)."""
    import copy

    fresh = _fresh_model(draw)
    m = copy.deepcopy(model)
    depth = len(m.blocks)
    for i in range(depth - 1, depth - 1 - min(k, depth), -1):
        m.blocks[i].load_state_dict(fresh.blocks[i].state_dict())
    if k > depth:
        m.load_state_dict(fresh.state_dict())
    return m.eval()


@torch.no_grad()
def _deletion(model, x, order, steps, grid, patch):
    """(n, steps): probability of each image's predicted class as the top-ranked patches
    (``order``: (n, N) patch indices, most important first) are replaced by flat mid-grey (0
    after normalisation), not by the textured background."""
    gh, gw = grid
    n = len(x)
    pred = model(x).argmax(-1)
    out = []
    for share in steps:
        k = int(round(share * gh * gw))
        xd = x.clone()
        mask = torch.zeros(n, gh * gw, dtype=torch.bool)
        if k:
            mask.scatter_(1, torch.from_numpy(order[:, :k]), True)
        pix = mask.reshape(n, 1, gh, 1, gw, 1).expand(n, 1, gh, patch, gw, patch)
        pix = pix.reshape(n, 1, gh * patch, gw * patch).expand_as(xd)
        xd[pix] = 0.0  # 0 after normalisation is the grey MEAN
        out.append(model(xd).softmax(-1).gather(1, pred[:, None])[:, 0].numpy())
    return np.stack(out, 1)


@figure(chapter=10, id="map-checks", size=(7.2, 3.0), trained=True, phone_size=6.4)
def map_checks(rec):
    """Left: how much the maps change when the model's weights are randomised from the top
    block down (rank correlation with the trained model's maps), and how much the maps of two
    unrelated random models agree. Right: the predicted class's probability as patches are
    deleted in the order each map ranks them, and at random."""
    model = _model()
    s, x = _test_set()
    n = DELETE_IMAGES
    depth = model.cfg.depth
    corr, curves, area, maps = _checks(model, s, x[:n])
    full, null = _fully_random(maps, x[:n], model.cfg.grid)
    # each step a mean over the fresh draws, with its lowest and highest draw
    for key in ("roll", "raw"):
        for step, level in (("top", 0), ("blocks", depth - 1)):
            per_draw = corr[key][:, level]
            rec.fact(f"rand_corr_{key}_{step}", float(per_draw.mean()), "{:.2f}", tol=0.1)
            rec.fact(f"rand_corr_{key}_{step}_lo", float(per_draw.min()), "{:.2f}", tol=0.1)
            rec.fact(f"rand_corr_{key}_{step}_hi", float(per_draw.max()), "{:.2f}", tol=0.1)
    # two different random top blocks, every pair of draws: do their maps agree with each other?
    for key in ("roll", "raw"):
        top_pairs = corr[f"{key}_top_pairs"]
        rec.fact(f"rand_corr_{key}_top_pairs", float(np.mean(top_pairs)), "{:.2f}", tol=0.1)
        rec.fact(f"rand_corr_{key}_top_pairs_lo", min(top_pairs), "{:.2f}", tol=0.1)
        rec.fact(f"rand_corr_{key}_top_pairs_hi", max(top_pairs), "{:.2f}", tol=0.1)
    # every weight random: one value per fresh draw, against pairs of fresh draws (the null)
    for key in ("roll", "raw"):
        rec.fact(f"rand_corr_{key}_all", float(np.mean(full[key])), "{:.2f}", tol=0.1)
        rec.fact(f"rand_corr_{key}_all_lo", min(full[key]), "{:.2f}", tol=0.1)
        rec.fact(f"rand_corr_{key}_all_hi", max(full[key]), "{:.2f}", tol=0.1)
        # the null trains nothing, but its mean lies near zero, where another CPU's last bits
        # (AVX2: -0.0221027 -> -0.0221052) are a large relative move: one printed step allowed
        rec.fact(f"rand_corr_{key}_null_lo", min(null[key]), "{:.2f}", tol=0.01)
        rec.fact(f"rand_corr_{key}_null_hi", max(null[key]), "{:.2f}", tol=0.01)
        rec.fact(f"rand_corr_{key}_null", float(np.mean(null[key])), "{:.2f}", tol=0.01)
        rec.fact(f"rand_corr_{key}_all_vs_null", _draws_vs_pairs(full[key], null[key]))
    rec.fact("rand_fresh_draws", FRESH_DRAWS)
    rec.fact("rand_null_pairs", len(null["roll"]))
    for k, a in area.items():
        rec.fact(f"del_{k}", float(a.mean()), "{:.2f}", tol=0.05)
    step = int(np.searchsorted(DELETE_STEPS, 0.25))
    for k, cur in curves.items():
        rec.fact(f"del_{k}_25", cur[step], "{:.0%}", tol=0.05)
    rec.fact("del_start", curves["rollout"][0], "{:.0%}", tol=0.05)  # nothing deleted yet
    eighth = int(np.searchsorted(DELETE_STEPS, 0.125))
    rec.fact("del_eighth_share", DELETE_STEPS[eighth], "{:.1%}")
    for k in ("rollout", "saliency"):
        rec.fact(f"del_{k}_eighth", curves[k][eighth], "{:.0%}", tol=0.05)
    # both curves near an even guess over the classes (within 3 points) by then, and after
    floor = 1 / len(PRETRAIN_CLASSES)
    near = max(curves[k][eighth:].max() for k in ("rollout", "saliency")) < floor + 0.03
    rec.fact("del_floor_by_eighth", bool(near))
    rec.fact("del_images", n)
    rec.fact("del_max_share", DELETE_STEPS[-1], "{:.0%}")
    for other in ("raw", "saliency"):
        lo, hi = stats.interval(area["rollout"] - area[other])
        rec.fact(f"del_rollout_minus_{other}_lo", lo, "{:+.2f}", tol=0.05)
        rec.fact(f"del_rollout_minus_{other}_hi", hi, "{:+.2f}", tol=0.05)
        rec.fact(f"del_rollout_vs_{other}", _paired(area["rollout"], area[other]))
    return {"corr": corr, "full": full, "null": null, "curves": curves, "steps": DELETE_STEPS,
            "depth": depth}  # fmt: skip


def _draws_vs_pairs(draws: list[float], pairs: list[float]) -> str:
    """The fully random models' correlations with the trained map (one per draw) against the
    correlations of pairs of random models (the null), value by value, not a mean against a
    range: above or below when every draw lies beyond every pair, else within."""
    return "above" if min(draws) > max(pairs) else "below" if max(draws) < min(pairs) else "within"


def _paired(a: np.ndarray, b: np.ndarray) -> str:
    """``a`` against ``b``, paired per image: lower or higher when the 95% bootstrap interval
    (over images) of the mean difference a - b excludes zero, else indistinguishable."""
    lo, hi = stats.interval(a - b)
    return "lower" if hi < 0 else "higher" if lo > 0 else "indistinguishable"


def _checks(model: VisionTransformer, s, x: torch.Tensor, levels: int | None = None):
    """The randomisation check (rank correlation of each map with the maps of ``model`` with
    its top 1, 2, ..., ``levels`` blocks re-initialised, (draws, levels): once with each of the
    :data:`FRESH_DRAWS` fresh draws) and the deletion curves (by rollout, raw attention, colour
    saliency and at random) with each image's area under them, on ``x``; also the trained
    model's maps."""
    cfg = model.cfg
    n = len(x)
    raw, roll, _ = _maps(model, x, cfg.grid)
    levels = cfg.depth if levels is None else levels
    corr = {"raw": np.zeros((FRESH_DRAWS, levels)), "roll": np.zeros((FRESH_DRAWS, levels))}
    top = []  # each draw's maps with only the top block random
    for draw in range(FRESH_DRAWS):
        for k in range(1, levels + 1):
            r_raw, r_roll, _ = _maps(_randomised(model, k, draw), x, cfg.grid)
            corr["raw"][draw, k - 1] = _rank_corr(raw, r_raw).mean()
            corr["roll"][draw, k - 1] = _rank_corr(roll, r_roll).mean()
            if k == 1:
                top.append((r_raw, r_roll))
    # two different random top blocks against each other: how much the draw itself moves a map
    pairs = list(combinations(top, 2))
    corr["raw_top_pairs"] = [float(_rank_corr(a[0], b[0]).mean()) for a, b in pairs]
    corr["roll_top_pairs"] = [float(_rank_corr(a[1], b[1]).mean()) for a, b in pairs]
    rng = np.random.default_rng(0)
    N = cfg.num_patches
    orders = {
        "rollout": np.argsort(-roll.reshape(n, -1), axis=1, kind="stable"),
        "raw": np.argsort(-raw.reshape(n, -1), axis=1, kind="stable"),
        "saliency": np.argsort(
            -colour_saliency(s.images[:n], cfg.patch_size).reshape(n, -1), axis=1, kind="stable"
        ),  # fmt: skip
        "random": np.stack([rng.permutation(N) for _ in range(n)]),
    }
    probs = {k: _deletion(model, x, o, DELETE_STEPS, cfg.grid, cfg.patch_size)
             for k, o in orders.items()}  # fmt: skip
    curves = {k: p.mean(0) for k, p in probs.items()}
    area = {k: np.trapezoid(p, DELETE_STEPS, axis=1) / DELETE_STEPS[-1] for k, p in probs.items()}
    return corr, curves, area, (raw, roll)


def _fully_random(maps, x: torch.Tensor, grid):
    """The randomisation check's last step, every weight random, on :data:`FRESH_DRAWS` fresh
    draws: each draw's rank correlation with the trained ``maps`` (raw, rollout), and its null,
    the rank correlation between the maps of every pair of draws (two models that learned
    nothing, so whatever they share comes from the input and the method)."""
    raw, roll = maps
    drawn = [_maps(_fresh_model(i), x, grid)[:2] for i in range(FRESH_DRAWS)]
    full = {"raw": [float(_rank_corr(raw, r).mean()) for r, _ in drawn],
            "roll": [float(_rank_corr(roll, r).mean()) for _, r in drawn]}  # fmt: skip
    pairs = list(combinations(drawn, 2))
    null = {"raw": [float(_rank_corr(a[0], b[0]).mean()) for a, b in pairs],
            "roll": [float(_rank_corr(a[1], b[1]).mean()) for a, b in pairs]}  # fmt: skip
    return full, null


@map_checks.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2) = plot.subplots(v, 1, 2, phone_cols=1)
    depth = d["depth"]
    x = np.arange(1, depth + 2)
    for key, name, mark, col in (("roll", "rollout", "o", "green"),
                                 ("raw", "last-layer CLS", "s", "blue")):  # fmt: skip
        # (draws, steps): each fresh draw's cascade, then its fully random model
        per_draw = np.column_stack([d["corr"][key], d["full"][key]])
        line = "-" if key == "roll" else "--"
        a1.plot(x, per_draw.mean(0), mark + line, color=c[col], label=name)
        off = 0.12 if key == "roll" else -0.12
        for draw in per_draw:
            a1.plot(x + off, draw, mark, ms=2.5, color=c[col], alpha=0.5, lw=0)
        # the null: two random models against each other, every pair of draws
        null = d["null"][key]
        a1.plot(np.full(len(null), depth + 2 + off), null, mark, ms=2.5, color=c[col],
                alpha=0.5, lw=0)  # fmt: skip
        a1.plot([depth + 2], [np.mean(null)], mark, color=c[col])
    a1.axvline(depth + 1.5, color=c["muted"], lw=0.8, ls=":")
    a1.set_xticks(np.arange(1, depth + 3),
                  [f"top {k}" for k in range(1, depth + 1)] + ["all", "random\npair"],
                  fontsize=8)  # fmt: skip
    a1.axhline(0, color=c["muted"], lw=0.8)
    a1.set(xlabel="blocks re-initialised", ylabel="rank correlation with trained map",
           ylim=(-0.5, 1.05), title="Randomisation check")  # fmt: skip
    a1.legend(fontsize=8, loc="upper right")
    cols = {"rollout": c["green"], "raw": c["blue"], "saliency": c["orange"], "random": c["muted"]}
    names = {"rollout": "rollout", "raw": "last-layer CLS", "saliency": "colour saliency",
             "random": "random order"}  # fmt: skip
    # rollout's and saliency's curves nearly coincide: saliency dashed beneath, rollout on top
    style = {"rollout": dict(ls="-", lw=2.5, zorder=3), "saliency": dict(ls="--", lw=1.5, zorder=4)}
    for k in ("random", "raw", "saliency", "rollout"):
        a2.plot(100 * d["steps"], 100 * d["curves"][k], marker="o", ms=3, color=cols[k],
                label=names[k], **style.get(k, dict(ls="-", lw=1.5, zorder=2)))  # fmt: skip
    a2.set(
        xlabel="patches deleted (%), most important first",
        ylabel="probability of predicted class (%)",
        ylim=(0, 102),
        title="Deletion curve",
    )
    a2.legend(fontsize=8, loc="upper right")
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
