"""Chapter 10, Inside a trained ViT: where the attention goes. Mean attention distance of every
head and block, attention rollout against the last layer's class-token row and their baselines,
and the checks of the maps (randomisation, deletion). Everything is measured on the small ViTs
pre-trained in Chapter 9; the filters, the position table and the across-seeds check are in
``ch10_inside.py``, which reads the models and the test set from here."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import torch

from vitbook import plot, runs
from vitbook.analysis import (
    attention_rollout,
    mean_attention_distance,
    rollout_cls_map,
)
from vitbook.data.shapes import PRETRAIN_CLASSES, make_shapes
from vitbook.engine import figure
from vitbook.experiments import stats
from vitbook.experiments.pretrain import PRETRAIN_TEST_SEED, SHAPES_CFG
from vitbook.model import VisionTransformer

N_TEST = 1000  # test images for the measured scores
DIST_IMAGES = 256  # test images behind the attention distances
SHOW = 6  # images drawn in the rollout figure
DELETE_IMAGES = 300  # test images of the deletion curve
DELETE_STEPS = np.linspace(0, 0.5, 9)  # shares of patches deleted
# Random weights that no pre-training started from: the randomisation check re-initialises with
# the draws of torch seeds FRESH_SEED, FRESH_SEED + 1, ... (the pre-training seeds are 0 to N - 1)
FRESH_SEED = 1000
FRESH_DRAWS = 6  # fully random models: the check's last point and its null (pairs of them)
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


@figure(chapter=10, id="attention-distance-seeds", size=(7.2, 3.2), trained=True, phone_size=5.4)
def attention_distance_seeds(rec):
    """Every block's mean attention distance (mean over its heads, the patch queries and
    ``DIST_IMAGES`` test images) for each pre-trained model, and for the weights that model's
    pre-training started from (its own initialisation, the baseline)."""
    _, x = _test_set()
    x = x[:DIST_IMAGES]
    trained = np.stack([_distances(_model(s), x).mean(1) for s in runs.PRE_SEEDS])  # (models, L)
    init = np.stack([_distances(_random_model(s), x).mean(1) for s in runs.PRE_SEEDS])
    uniform = _uniform_distance(SHAPES_CFG)
    depth = trained.shape[1]
    rec.fact("dseed_models", len(runs.PRE_SEEDS))
    for b in range(depth):
        rec.fact(f"dseed_b{b + 1}_lo", float(trained[:, b].min()), "{:.1f}", tol=0.5)
        rec.fact(f"dseed_b{b + 1}_hi", float(trained[:, b].max()), "{:.1f}", tol=0.5)
        rec.fact(f"dseed_b{b + 1}_init_lo", float(init[:, b].min()), "{:.1f}")
        rec.fact(f"dseed_b{b + 1}_init_hi", float(init[:, b].max()), "{:.1f}")
        rec.fact(f"dseed_b{b + 1}_below_init", int((trained[:, b] < init[:, b]).sum()))
    below = trained < init  # (models, L): the block looks closer than where it started
    middle = below[:, 1:-1]
    rec.fact("dseed_middle_pairs", int(middle.size))
    rec.fact("dseed_middle_below_init", int(middle.sum()))
    rec.fact("dseed_all_pairs", int(below.size))
    rec.fact("dseed_all_below_init", int(below.sum()))
    gap = init - trained  # pixels closer than the initialisation (negative: further)
    rec.fact("dseed_gap_away", float(max(0.0, -gap.min())), "{:.2f}", tol=0.5)
    rec.fact("dseed_gap_max", float(gap.max()), "{:.1f}", tol=0.5)
    rec.fact("dseed_init_max_dev", float(np.abs(init - uniform).max()), "{:.2f}")
    # the block that looks closest, model by model, and its gap to the model's own start
    low = trained.argmin(1)
    rec.fact("dseed_low_blocks", _block_list(low + 1))
    rec.fact("dseed_low_gap_min", float(gap[np.arange(len(low)), low].min()), "{:.1f}", tol=0.5)
    return {"trained": trained, "init": init, "uniform": uniform, "seeds": list(runs.PRE_SEEDS)}


def _block_list(blocks) -> str:
    """ "2, 3, 3, 2 and 4": the blocks in the models' order."""
    names = [str(int(b)) for b in blocks]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@attention_distance_seeds.draw
def draw_attention_distance_seeds(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    trained, init = d["trained"], d["init"]
    depth = trained.shape[1]
    blocks = np.arange(1, depth + 1)
    for k, seed in enumerate(d["seeds"]):
        colour = c[plot.CYCLE[k % len(plot.CYCLE)]]
        ax.plot(blocks, trained[k], "o-", ms=4, lw=1.4, color=colour, label=f"seed {seed}")
        ax.plot(blocks, init[k], ":", lw=1.0, color=colour)
    ax.axhline(d["uniform"], color=c["muted"], ls="--", lw=0.8)
    label = plot.pick(v, "uniform attention (dashed); every initialisation (dotted) lies on it",
                      "uniform (dashed);\ninitialisations (dotted) on it")  # fmt: skip
    ax.text(0.8, d["uniform"] + 0.03, label, color=c["muted"], fontsize=8, va="bottom")
    ax.set_xticks(blocks)
    ax.set_xlim(0.7, depth + 0.3)
    every = np.concatenate([trained.ravel(), init.ravel(), [d["uniform"]]])
    lo, hi = every.min() - plot.pick(v, 0.4, 0.6), every.max() + 0.35
    ax.set(xlabel="layer (block)", ylabel="block mean distance (pixels)", ylim=(lo, hi))
    ax.legend(fontsize=8, ncols=plot.pick(v, 5, 3), loc="lower center", frameon=False,
              title="pre-trained (solid), by pre-training seed", title_fontsize=8)  # fmt: skip
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
