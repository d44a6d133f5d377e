"""Chapter 3, Patch embedding: one shared linear map, a strided convolution, and what E learns."""

from __future__ import annotations

import time

import numpy as np
import torch
from matplotlib.patches import Rectangle

from vitbook import plot
from vitbook.calc import param_breakdown
from vitbook.data.face import face, face_tensor
from vitbook.engine import facts, figure
from vitbook.handset import patch_pca, pca_reconstruct
from vitbook.model import PatchEmbed, VisionTransformer, preset
from vitbook.patches import patchify

IMAGE = 224
P = 16  # ViT-B/16's patch size: 14 x 14 = 196 patches of 16 x 16 x 3 = 768 numbers
D = 768  # ViT-B's width
CHOSEN = 105  # a 16 x 16 patch at the corner of the mouth (row 7, column 7 of the 14 x 14 grid)
KS = (1, 2, 4, 8, 16, 32, 64, 128, 195)  # numbers of components to rebuild from (rank <= 195)
#: The bound the book prints for a float32 difference at rounding level (sums of 768 products
#: of numbers near 1): the page says "less than 1e-5", the same on every CPU.
F32_ROUNDING = 1e-5


# --8<-- [start:naive]
def embed_naive(images: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, patch: int):
    """Patch embedding as a first attempt: slice every patch in a Python loop, flatten it,
    apply the shared Linear. weight: (D, C*P*P), bias: (D,). Returns (B, N, D)."""
    B, C, H, W = images.shape
    tokens = []
    for top in range(0, H, patch):  # rows of patches, top to bottom
        for left in range(0, W, patch):  # then left to right: raster order
            x = images[:, :, top : top + patch, left : left + patch]  # (B, C, P, P)
            tokens.append(x.reshape(B, -1) @ weight.T + bias)  # (B, C*P*P) -> (B, D)
    return torch.stack(tokens, dim=1)  # (B, N, D)
    # --8<-- [end:naive]


# --8<-- [start:linear]
def embed_linear(images: torch.Tensor, proj: torch.nn.Conv2d, patch: int) -> torch.Tensor:
    """The same map written as patchify + one matrix product, reusing the Conv2d's weights."""
    E = proj.weight.reshape(proj.out_channels, -1)  # (D, C, P, P) -> (D, C*P*P): (C, P, P) order
    return patchify(images, patch) @ E.T + proj.bias  # (B, N, C*P*P) @ (C*P*P, D) -> (B, N, D)
    # --8<-- [end:linear]


# --8<-- [start:wrong-order]
def embed_wrong_order(images: torch.Tensor, proj: torch.nn.Conv2d, patch: int) -> torch.Tensor:
    """A classic bug: patches flattened as (P, P, C), pixel by pixel; the weight as (C, P, P)."""
    B, C, H, W = images.shape
    x = images.permute(0, 2, 3, 1)  # (B, H, W, C): channels last, as in an image file
    x = x.reshape(B, H // patch, patch, W // patch, patch, C).permute(0, 1, 3, 2, 4, 5)
    x = x.reshape(B, -1, patch * patch * C)  # (B, N, P*P*C): R, G, B of pixel 0, then pixel 1...
    return x @ proj.weight.reshape(proj.out_channels, -1).T + proj.bias  # (B, N, D), wrong
    # --8<-- [end:wrong-order]


def _b16_embed() -> PatchEmbed:
    return PatchEmbed(patch_size=P, in_chans=3, dim=D)  # the model's own module, PyTorch's init


@figure(chapter=3, id="conv-equals-linear", size=(7.2, 3.2), phone_size=7.0)
def conv_equals_linear(rec):
    """Conv2d(kernel = stride = 16) against patchify + Linear on the face, and the wrong order."""
    embed = _b16_embed()
    x = face_tensor(IMAGE)  # (1, 3, 224, 224)
    with torch.no_grad():
        conv = embed(x)[0]  # (196, 768)
        lin = embed_linear(x, embed.proj, P)[0]
        naive = embed_naive(x, embed.proj.weight.reshape(D, -1), embed.proj.bias, P)[0]
        wrong = embed_wrong_order(x, embed.proj, P)[0]
    rec.fact("tokens", conv.shape[0])
    rec.fact("dim", conv.shape[1])
    rec.fact("values", conv.numel())
    rec.fact("max_diff", float((conv - lin).abs().max()), "{:.1e}", tol=F32_ROUNDING)
    rec.fact("max_diff_naive", float((conv - naive).abs().max()), "{:.1e}", tol=F32_ROUNDING)
    rec.fact("max_diff_wrong", float((conv - wrong).abs().max()), "{:.2f}")
    rec.fact("conv_abs_max", float(conv.abs().max()), "{:.2f}")
    rec.fact("corr_wrong", float(np.corrcoef(conv.flatten(), wrong.flatten())[0, 1]), "{:.2f}")
    g = np.random.default_rng(0)
    pick = g.choice(conv.numel(), size=4000, replace=False)
    return {
        "conv": conv.flatten().numpy()[pick],
        "lin": lin.flatten().numpy()[pick],
        "wrong": wrong.flatten().numpy()[pick],
        "bound": F32_ROUNDING,  # drawn as the bound: the value itself changes with the CPU
        "max_wrong": float((conv - wrong).abs().max()),
    }


@conv_equals_linear.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 2, sharex=True, sharey=True, phone_cols=1)
    lim = float(np.abs(d["conv"]).max()) * 1.05
    for ax, key, color, title, note in (
        (axes[0], "lin", c["blue"], "patchify (C, P, P) + Linear",
         f"max |difference| < {d['bound']:.0e}".replace("e-0", "e-")),
        (axes[1], "wrong", c["red"], "flattened (P, P, C) + Linear",
         f"max |difference| = {d['max_wrong']:.2f}"),
    ):  # fmt: skip
        ax.plot([-lim, lim], [-lim, lim], color=c["muted"], lw=0.8)
        ax.scatter(d["conv"], d[key], s=3, color=color, alpha=0.5, lw=0)
        ax.set_title(title, fontsize=10)
        ax.text(0.03, 0.95, note, transform=ax.transAxes, va="top", fontsize=9, color=c["fg"])
        ax.set_xlabel(plot.pick(v, "Conv2d output (one token value)", "Conv2d output"))
        ax.set_aspect("equal")
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
    for ax in axes[: 1 + plot.is_phone(v)]:
        ax.set_ylabel("other path's output")
    return fig


def _best_ms(fn, repeats: int) -> float:
    """The fastest of ``repeats`` runs after a warm-up, in milliseconds: other work on the
    machine can only slow a run down, so the fastest is the least disturbed."""
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * min(times)


BATCHES = (1, 2, 4, 8, 16, 32, 64)  # images per call: where the loop's fixed cost shows
REPEATS = 7


def time_embeddings(patch: int, dim: int, batches=BATCHES, repeats: int = REPEATS) -> dict:
    """Milliseconds (fastest of ``repeats``) of the loop, patchify + matmul and the
    convolution, per batch size, for a patch embedding of the given patch size and width on
    copies of the face."""
    embed = PatchEmbed(patch_size=patch, in_chans=3, dim=dim)
    w, b = embed.proj.weight.reshape(dim, -1), embed.proj.bias
    ms = {"naive": [], "linear": [], "conv": []}
    with torch.no_grad():
        for batch in batches:
            x = face_tensor(IMAGE).expand(batch, -1, -1, -1).contiguous()  # (B, 3, 224, 224)
            runs = {
                "naive": lambda x=x: embed_naive(x, w, b, patch),
                "linear": lambda x=x: embed_linear(x, embed.proj, patch),
                "conv": lambda x=x: embed(x),
            }
            for k, fn in runs.items():
                ms[k].append(_best_ms(fn, repeats))
    return {k: np.array(v) for k, v in ms.items()}


@figure(chapter=3, id="timing", size=(7.2, 2.9), deterministic=False, phone_size=6.2)
def timing(rec):
    """Measured on this machine's CPU: the loop, patchify + matmul and the convolution, at
    batch sizes from 1 to 64; what one call of the loop costs with almost no arithmetic; and
    the loop against the convolution for ViT-B/32 at batch 1."""
    ms = time_embeddings(P, D)
    batches = np.array(BATCHES)
    ratio = ms["naive"] / ms["conv"]
    rec.fact("batches_min", int(batches[0]))
    rec.fact("batches_max", int(batches[-1]))
    rec.fact("repeats", REPEATS)
    n = torch.get_num_threads()
    rec.fact("threads", n, text=f"{n} CPU thread{'s' * (n != 1)}")
    for i, batch in enumerate(BATCHES):
        rec.fact(f"naive_over_conv_b{batch}", float(ratio[i]), "{:.1f}", measured=True)
        rec.fact(
            f"linear_over_conv_b{batch}", float(ms["linear"][i] / ms["conv"][i]), "{:.1f}",
            measured=True,
        )  # fmt: skip
        for k in ms:
            rec.fact(f"ms_{k}_b{batch}", float(ms[k][i]), "{:.1f}", measured=True)
            rec.fact(f"ms_{k}_per_image_b{batch}", float(ms[k][i] / batch), "{:.1f}",
                     measured=True)  # fmt: skip
    lin = ms["linear"] / ms["conv"]
    rec.fact("linear_over_conv_lo", float(lin.min()), "{:.1f}", measured=True)
    rec.fact("linear_over_conv_hi", float(lin.max()), "{:.1f}", measured=True)
    # one call of the loop costs two things that do not grow with the batch: Python's and
    # PyTorch's dispatch (slice, reshape, matmul, add), measured with an 8-wide weight that
    # leaves almost no arithmetic, and reading the whole 768 x 768 weight again
    calls = (IMAGE // P) ** 2
    rec.fact("calls", calls)
    x = face_tensor(IMAGE)
    w8 = torch.randn(8, 3 * P * P, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        tiny = _best_ms(lambda: embed_naive(x, w8, torch.zeros(8), P), REPEATS)
    rec.fact("dispatch_us", 1000 * tiny / calls, "{:.0f}", measured=True)
    rec.fact("call_us_b1", 1000 * ms["naive"][0] / calls, "{:.0f}", measured=True)
    rec.fact("weight_mb", D * 3 * P * P * 4 / 1e6, "{:.1f}")  # float32
    # ViT-B/32: a quarter of the calls, each with four times the arithmetic
    b32 = time_embeddings(32, D, batches=(1,))
    rec.fact("calls_b32", (IMAGE // 32) ** 2)
    rec.fact(
        "b32_naive_over_conv_b1", float(b32["naive"][0] / b32["conv"][0]), "{:.1f}",
        measured=True,
    )  # fmt: skip
    return {"batches": batches, **ms}


@timing.draw
def _(d, v):
    c = plot.colors(v)
    fig, (ax, ax2) = plot.subplots(v, 1, 2, phone_cols=1)
    b = d["batches"]
    colors = {"conv": c["blue"], "linear": c["green"], "naive": c["orange"]}
    per_image = {k: d[k] / b for k in ("naive", "linear", "conv")}
    for k, y in per_image.items():
        ax.plot(b, y, "o-", color=colors[k], ms=4)
    lo = min(float(y.min()) for y in per_image.values())
    hi = max(float(y.max()) for y in per_image.values())
    ax.set_yscale("log")
    ax.set_ylim(lo / 2.2, hi * 2.2)  # room for the labels above and below the lines
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200) if lo / 2.2 <= t <= hi * 2.2]
    ax.set_yticks(ticks, labels=[str(t) for t in ticks])
    # direct labels at the left end: the loop above its line, the two fast forms below theirs
    ax.annotate(
        "Python loop over 196 patches",
        (b[0], per_image["naive"][0]),
        xytext=(2, 7),
        textcoords="offset points",
        va="bottom",
        fontsize=9,
        color=colors["naive"],
    )
    fast = min(per_image["linear"][0], per_image["conv"][0])
    ax.annotate(
        "Conv2d (blue), patchify + matmul\n(green)",
        (b[0], fast),
        xytext=(2, -8),
        textcoords="offset points",
        va="top",
        fontsize=9,
        color=c["fg"],
    )
    ax.set_ylabel("ms per image (log scale)")
    ax.set_title(f"time per image\n(fastest of {REPEATS} runs)", fontsize=10)
    ratio = d["naive"] / d["conv"]
    ax2.plot(b, ratio, "o-", color=colors["naive"], ms=4)
    ax2.plot(b, d["linear"] / d["conv"], "o-", color=colors["linear"], ms=4)
    ax2.axhline(1, color=c["muted"], lw=0.8, ls="--")
    for i, (x, r) in enumerate(zip(b, ratio, strict=True)):
        # above the point, away from a line that comes down to it or climbs away from it
        if i > 0 and ratio[i - 1] > r:
            dx, ha = 3, "left"
        elif i + 1 < len(b) and ratio[i + 1] > r:
            dx, ha = -3, "right"
        else:
            dx, ha = 0, "center"
        ax2.annotate(f"{r:.1f}×", (x, r), xytext=(dx, 5), textcoords="offset points", ha=ha,
                     fontsize=8, color=colors["naive"])  # fmt: skip
    ax2.set_ylim(0, float(ratio.max()) * 1.25)
    ax2.set_ylabel("time / Conv2d's time")
    ax2.set_title("against Conv2d: loop (orange),\npatchify + matmul (green)", fontsize=10)
    for a in (ax, ax2):
        a.set_xscale("log", base=2)
        a.set_xticks(b, labels=[str(x) for x in b])
        a.minorticks_off()
        a.set_xlim(b[0] / 1.4, b[-1] * 1.6)
        a.set_xlabel("images per call (batch)")
    return fig


@facts(chapter=3, id="param-count")
def param_count(rec):
    """P^2 C D + D from the calculator and from the real model's module."""
    for name in ("vit-ti/16", "vit-s/16", "vit-b/16", "vit-b/32", "vit-l/16", "vit-h/14"):
        tag = name.replace("vit-", "").replace("/", "_")
        p = param_breakdown(preset(name))
        rec.fact(f"params_{tag}", p["patch_embed"])
        rec.fact(f"share_{tag}", p["patch_embed"] / p["total"], "{:.2%}")
    cfg = preset("vit-b/16")
    rec.fact("b16_weight", cfg.in_chans * cfg.patch_size**2 * cfg.dim)
    rec.fact("b16_bias", cfg.dim)
    model = VisionTransformer(cfg=preset("vit-b/16", depth=0, num_classes=0))  # embedding only
    rec.fact("params_b16_model", sum(p.numel() for p in model.patch_embed.parameters()))
    face_cfg = preset("face")
    rec.fact("params_face", param_breakdown(face_cfg)["patch_embed"])


@figure(chapter=3, id="pca-filters", size=(7.2, 2.2), phone_size=4.4)
def pca_filters(rec):
    """The first 16 principal components of the face's 196 patches, as 16 x 16 x 3 images."""
    patches = patchify(face_tensor(IMAGE), P)[0]  # (196, 768)
    comps, mean, share = patch_pca(patches, 16)
    rec.fact("pca_patches", patches.shape[0])
    rec.fact("pca_len", patches.shape[1])
    rec.fact("share_first", float(share[0]), "{:.0%}")
    rec.fact("share_8", float(share[:8].sum()), "{:.0%}")
    rec.fact("share_16", float(share.sum()), "{:.0%}")
    imgs = comps.reshape(16, 3, P, P).permute(0, 2, 3, 1).numpy()  # (16, P, P, 3)
    return {"comps": imgs, "share": share.numpy()}


@pca_filters.draw
def _(d, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 2, 8, phone_cols=4)
    lim = float(np.abs(d["comps"]).max())
    for k, ax in enumerate(axes.flat):
        plot.show_image(ax, np.clip(0.5 + 0.5 * d["comps"][k] / lim, 0, 1))
        ax.set_title(
            f"{k + 1}: {d['share'][k]:.1%}",
            fontsize=8.5,
            loc="center",
            fontweight="normal",
            color=c["fg"],
        )
    return fig


HELD_OUT = ("chelsea", "coffee")  # scikit-image photographs the components never saw


def held_out_patches() -> torch.Tensor:
    """Patches of two other scikit-image photographs (centre crops of IMAGE x IMAGE pixels, no
    resampling), flattened like the face's: (2 * 196, 768) in [0, 1]."""
    from skimage import data

    out = []
    for name in HELD_OUT:
        img = getattr(data, name)()  # (H, W, 3) uint8, ships with scikit-image
        h, w = img.shape[:2]
        top, left = (h - IMAGE) // 2, (w - IMAGE) // 2
        crop = torch.from_numpy(img[top : top + IMAGE, left : left + IMAGE].copy())
        x = crop.permute(2, 0, 1)[None].double() / 255.0  # (1, 3, IMAGE, IMAGE)
        out.append(patchify(x, P)[0])
    return torch.cat(out)


@figure(chapter=3, id="pca-rebuild", size=(7.2, 3.6), phone_size=6.0)
def pca_rebuild(rec):
    """One patch rebuilt from its first k components, and the error against k for all patches."""
    patches = patchify(face_tensor(IMAGE), P)[0].double()  # (196, 768)
    comps, mean, _ = patch_pca(patches, max(KS))
    rebuilt = {k: pca_reconstruct(patches[CHOSEN], comps, mean, k) for k in KS}
    err = {}  # root-mean-square pixel error, chosen patch and mean over all patches
    for k in KS:
        scores = (patches - mean) @ comps[:k].T  # (196, k): every patch's embedding
        approx = mean + scores @ comps[:k]  # (196, 768)
        rms = ((patches - approx) ** 2).mean(dim=1).sqrt()  # (196,)
        err[k] = (float(((patches[CHOSEN] - rebuilt[k]) ** 2).mean().sqrt()), float(rms.mean()))
    # the same face components on patches they were not fitted to
    other = held_out_patches()
    held = {}
    for k in KS:
        approx = mean + ((other - mean) @ comps[:k].T) @ comps[:k]
        held[k] = float(((other - approx) ** 2).mean(dim=1).sqrt().mean())
    for k in (8, 64):
        rec.fact(f"rms_heldout_k{k}", held[k], "{:.3f}")
    rec.fact("rms_heldout_full", held[max(KS)], "{:.3f}")
    rec.fact("heldout_patches", other.shape[0])
    rec.fact("chosen", CHOSEN)
    for k in (8, 16, 64):
        rec.fact(f"rms_chosen_k{k}", err[k][0], "{:.3f}")
        rec.fact(f"rms_mean_k{k}", err[k][1], "{:.3f}")
    rec.fact("rms_mean_full", err[max(KS)][1], "{:.0e}", tol=1e-13)
    rec.fact("k_full", max(KS))
    rec.fact("rms_mean_k0", float(((patches - mean) ** 2).mean(dim=1).sqrt().mean()), "{:.3f}")

    def img(t: torch.Tensor) -> np.ndarray:
        return t.reshape(3, P, P).permute(1, 2, 0).clamp(0, 1).numpy()

    return {"original": img(patches[CHOSEN]), "rebuilt": {k: img(r) for k, r in rebuilt.items()},
            "err": err, "held": held, "image": face(IMAGE)}  # fmt: skip


@pca_rebuild.draw
def _(d, v):
    c = plot.colors(v)
    fig = plot.new_figure(v)
    phone = plot.is_phone(v)
    grid = fig.add_gridspec(2, 1, height_ratios=[1.4, 1.5] if phone else [1, 1.5])
    shown = (1, 4, 8, 16, 64, 195)
    sub = grid[0].subgridspec(2, 4) if phone else grid[0].subgridspec(1, len(shown) + 2)
    top = [sub[i] for i in range(len(shown) + 2)]
    ax = fig.add_subplot(top[0])
    plot.show_image(ax, d["image"])
    r, col = divmod(CHOSEN, IMAGE // P)
    ax.add_patch(
        Rectangle((col * P - 0.5, r * P - 0.5), P, P, fill=False, ec=c["highlight"], lw=1.5)
    )
    ax.set_title(f"patch {CHOSEN}", fontsize=8.5, loc="center")
    ax = fig.add_subplot(top[1])
    plot.show_image(ax, d["original"])
    ax.set_title("original", fontsize=8.5, loc="center")
    for i, k in enumerate(shown):
        ax = fig.add_subplot(top[i + 2])
        plot.show_image(ax, d["rebuilt"][k])
        ax.set_title(f"k = {k}", fontsize=8.5, loc="center", fontweight="normal")
    ax = fig.add_subplot(grid[1])
    ks = [k for k in sorted(d["err"]) if k < max(KS)]  # at k = 195 the error is ~1e-15
    chosen = [d["err"][k][0] for k in ks]
    mean = [d["err"][k][1] for k in ks]
    held = [d["held"][k] for k in ks]
    ax.plot(ks, mean, "o-", color=c["blue"], ms=4)
    ax.plot(ks, chosen, "o-", color=c["orange"], ms=4)
    ax.plot(ks, held, "s--", color=c["green"], ms=3.5)
    plot.label_line(ax, ks[-1], mean[-1], "mean over\nall 196 patches", c["blue"])
    plot.label_line(ax, ks[-1], chosen[-1], f"patch {CHOSEN}", c["orange"])
    plot.label_line(ax, ks[-1], held[-1], "held-out photos", c["green"])
    ax.set_xlim(0.8, 600)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ks, labels=[str(k) for k in ks])
    ax.minorticks_off()
    ax.set_xlabel(
        plot.pick(
            v,
            "components kept, k (D of an embedding that keeps only these)",
            "components kept, k\n(D of an embedding that keeps only these)",
        )
    )
    ax.set_ylabel("RMS pixel error\n(pixels in [0, 1])")
    ax.grid(True, axis="y")
    return fig
