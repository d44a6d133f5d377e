"""Chapter 7, The encoder block: pre-norm residuals, LayerNorm, GELU and what a block holds."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.patches import FancyBboxPatch
from scipy import optimize, special
from torch import nn

from vitbook import plot
from vitbook.calc import param_breakdown
from vitbook.engine import facts, figure
from vitbook.model import Block, preset
from vitbook.quoted import quote

B16 = "vit-b/16"

# The deep-stack experiment: a 24-block stack of the book's Block at a small width, fed 49 patch
# tokens plus a class token, with a linear classifier on the class token and random labels.
INIT_STD = 0.02  # the book's model: timm's trunc-normal std for every Linear
STACK = {"dim": 128, "heads": 4, "depth": 24, "tokens": 50, "batch": 4, "classes": 10}


# ---------------------------------------------------------------------------------------------
# The block diagram
# ---------------------------------------------------------------------------------------------


@figure(chapter=7, id="block-diagram", size=(7.2, 5.4), phone_size=9.6)
def block_diagram(rec):
    """The shapes a ViT-B/16 block sees, for the two orders of LayerNorm and residual."""
    cfg = preset(B16)
    T, D, M, h = cfg.seq_len, cfg.dim, cfg.mlp_dim, cfg.heads
    rec.fact("b16_tokens", T)
    rec.fact("b16_dim", D)
    rec.fact("b16_mlp", M)
    rec.fact("b16_heads", h)
    rec.fact("b16_head_dim", cfg.head_dim)
    rec.fact("b16_mlp_ratio", M // D)
    return {"T": T, "D": D, "M": M, "heads": h, "Dh": cfg.head_dim}


def _stack(ax, steps, skips, c, title):
    """Boxes top to bottom joined by arrows; ``skips`` are (from step, to '+' step) bypasses."""
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title(title, fontsize=10.5)
    n = len(steps)
    ys = np.linspace(0.93, 0.05, n)
    fill = {
        "io": c["bg"],
        "norm": c["purple"],
        "attn": c["blue"],
        "mlp": c["orange"],
        "add": c["bg"],
    }
    x0, width = 0.38, 0.5
    for i, (kind, label) in enumerate(steps):
        y = ys[i]
        if kind == "add":
            ax.add_patch(
                plot.plt.Circle(
                    (x0, y), 0.032, fc=c["bg"], ec=c["fg"], lw=1.3, transform=ax.transAxes
                )
            )
            ax.text(x0, y, "+", ha="center", va="center", fontsize=13, fontweight="bold")
            if label:
                ax.text(x0 + 0.06, y, label, ha="left", va="center", fontsize=8.5, color=c["muted"])
        else:
            box = FancyBboxPatch(
                (x0 - width / 2, y - 0.042),
                width,
                0.084,
                boxstyle="round,pad=0.004,rounding_size=0.02",
                fc=fill[kind],
                ec=c["fg"] if kind == "io" else fill[kind],
                alpha=1.0 if kind == "io" else 0.22,
                lw=1.2,
            )
            ax.add_patch(box)
            if kind != "io":
                ax.add_patch(
                    FancyBboxPatch(
                        (x0 - width / 2, y - 0.042),
                        width,
                        0.084,
                        boxstyle="round,pad=0.004,rounding_size=0.02",
                        fc="none",
                        ec=fill[kind],
                        lw=1.4,
                    )
                )
            ax.text(x0, y, label, ha="center", va="center", fontsize=8.5)
        if i:
            top = ys[i - 1] - (0.032 if steps[i - 1][0] == "add" else 0.046)
            bottom = y + (0.032 if kind == "add" else 0.046)
            ax.annotate(
                "",
                xy=(x0, bottom),
                xytext=(x0, top),
                arrowprops={"arrowstyle": "-|>", "color": c["fg"], "lw": 1.2},
            )
    for k, (src, dst) in enumerate(skips):
        # leave from just below the source box, run down the left side, enter '+' from the left
        y_from = ys[src] - (0.032 if steps[src][0] == "add" else 0.046) - 0.018
        y_to = ys[dst]
        xl = 0.06 + 0.05 * k
        ax.plot(
            [x0, xl, xl], [y_from, y_from, y_to], color=c["green"], lw=1.4, solid_capstyle="round"
        )
        ax.annotate(
            "",
            xy=(x0 - 0.034, y_to),
            xytext=(xl, y_to),
            arrowprops={"arrowstyle": "-|>", "color": c["green"], "lw": 1.4},
        )
    ax.text(
        0.03,
        ys[skips[0][1]] + 0.055,
        "residual",
        color=c["green"],
        fontsize=8.5,
        ha="left",
        rotation=90,
        va="bottom",
    )
    return ys


@block_diagram.draw
def _(d, v):
    c = plot.colors(v)
    fig, (a1, a2) = plot.subplots(v, 1, 2, phone_cols=1)
    T, D, M, h, Dh = d["T"], d["D"], d["M"], d["heads"], d["Dh"]
    tok = f"({T} × {D})"
    pre = [
        ("io", f"$z_{{\\ell-1}}$  {tok}"),
        ("norm", "LayerNorm (norm1)"),
        ("attn", f"MSA: {h} heads × {Dh}  (attn)"),
        ("add", "$z'_\\ell$"),
        ("norm", "LayerNorm (norm2)"),
        ("mlp", f"MLP {D} → {M} → {D}\nGELU in between"),
        ("add", ""),
        ("io", f"$z_\\ell$  {tok}"),
    ]
    _stack(a1, pre, [(0, 3), (3, 6)], c, "Pre-norm: ViT (the paper's Eq. 2–3)")
    post = [
        ("io", f"$z_{{\\ell-1}}$  {tok}"),
        ("attn", f"MSA: {h} heads × {Dh}"),
        ("add", ""),
        ("norm", "LayerNorm"),
        ("mlp", f"MLP {D} → {M} → {D}\nGELU in between"),
        ("add", ""),
        ("norm", "LayerNorm"),
        ("io", f"$z_\\ell$  {tok}"),
    ]
    _stack(a2, post, [(0, 2), (3, 5)], c, "Post-norm: original Transformer")
    a1.text(
        0.97,
        0.5,
        "the identity path\nruns from input\nto output untouched",
        ha="right",
        va="center",
        fontsize=8,
        color=c["green"],
        transform=a1.transAxes,
    )
    a2.text(
        0.97,
        0.5,
        "every path passes\nthrough a LayerNorm",
        ha="right",
        va="center",
        fontsize=8,
        color=c["muted"],
        transform=a2.transAxes,
    )
    return fig


# ---------------------------------------------------------------------------------------------
# LayerNorm against BatchNorm
# ---------------------------------------------------------------------------------------------


@figure(chapter=7, id="layernorm-vs-batchnorm", size=(7.2, 3.6), phone_size=7.4)
def layernorm_vs_batchnorm(rec):
    """What each norm averages over, and whether a token's output depends on the rest of the
    batch: change image 1 of a batch and measure how image 0's normalised tokens move."""
    B, T, D = 4, 5, 8
    scale = torch.linspace(0.5, 3.0, D)  # features with different spreads and offsets
    x = torch.randn(B, T, D) * scale + torch.linspace(-2, 2, D)  # (B, T, D)
    # --8<-- [start:ln-bn]
    ln = F.layer_norm(x, (D,))  # per token: mean and variance over its D features
    bn = F.batch_norm(x.reshape(B * T, D), None, None, training=True)  # per feature, over B*T
    # --8<-- [end:ln-bn]
    bn = bn.reshape(B, T, D)
    x2 = x.clone()
    x2[1] = torch.randn(T, D) * 4 + 3  # a very different image 1 in the same batch
    ln2 = F.layer_norm(x2, (D,))
    bn2 = F.batch_norm(x2.reshape(B * T, D), None, None, training=True).reshape(B, T, D)
    ln_change = (ln2[0] - ln[0]).abs().max().item()
    bn_change = (bn2[0] - bn[0]).abs().max().item()
    rec.fact("lnbn_batch", B)
    rec.fact("lnbn_tokens", T)
    rec.fact("lnbn_dim", D)
    rec.fact("ln_change", ln_change, text="0" if ln_change == 0 else f"{ln_change:.1e}")
    rec.fact("bn_change", bn_change, "{:.2f}")
    rec.fact("ln_row_mean_max", ln.mean(-1).abs().max().item(), "{:.0e}", tol=1e-6)  # rounding
    rec.fact("bn_col_mean_max", bn.reshape(-1, D).mean(0).abs().max().item(), "{:.0e}", tol=1e-6)
    return {
        "x": x.reshape(B * T, D).numpy(),
        "B": B,
        "T": T,
        "D": D,
        "ln_change": ln_change,
        "bn_change": bn_change,
    }


@layernorm_vs_batchnorm.draw
def _(d, v):
    c = plot.colors(v)
    fig, (ax, bx) = plot.subplots(v, 1, 2, width_ratios=[1.35, 1], phone_cols=1)
    x, B, T, D = d["x"], d["B"], d["T"], d["D"]
    lim = float(np.abs(x).max())
    im = ax.imshow(x, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    bar = fig.colorbar(im, ax=ax, location="bottom", shrink=0.7, aspect=30, pad=0.02)
    bar.set_label(
        plot.pick(
            v,
            "value (seeded draws, a different spread and offset per feature)",
            "value (seeded draws, a different spread\nand offset per feature)",
        ),
        fontsize=8,
    )
    bar.ax.tick_params(labelsize=8)
    ax.set_xticks(range(D), labels=[str(i) for i in range(D)])
    ax.set_yticks([b * T + T / 2 - 0.5 for b in range(B)], labels=[f"image {b}" for b in range(B)])
    ax.tick_params(length=0)
    for b in range(1, B):
        ax.axhline(b * T - 0.5, color=c["bg"], lw=2)
    ax.set_xlabel("feature (D = 8)")
    ax.set_title(f"A batch: {B} images × {T} tokens", fontsize=10)
    ax.add_patch(plot.Rectangle((-0.5, 1.5), D, 1, fill=False, ec=c["orange"], lw=2.5))
    ax.add_patch(plot.Rectangle((4.5, -0.5), 1, B * T, fill=False, ec=c["green"], lw=2.5, ls="--"))
    ax.annotate(
        "LayerNorm: one token,\nover its D features",
        (D - 0.5, 2),
        xytext=(D + 0.2, 2),
        fontsize=8.5,
        color=c["orange"],
        va="center",
        annotation_clip=False,
    )
    ax.annotate(
        "BatchNorm: one feature,\nover all B × T tokens",
        (D - 0.5, 12),
        xytext=(D + 0.2, 12),
        fontsize=8.5,
        color=c["green"],
        va="center",
        annotation_clip=False,
    )
    vals = [d["ln_change"], d["bn_change"]]
    bars = bx.bar([0, 1], vals, color=[c["orange"], c["green"]], width=0.55)
    bx.set_xticks([0, 1], labels=["LayerNorm", "BatchNorm"])
    for bar, val in zip(bars, vals, strict=True):
        bx.text(
            bar.get_x() + bar.get_width() / 2,
            val + 0.03 * max(vals),
            "exactly 0" if val == 0 else f"{val:.2f}",
            ha="center",
            va="bottom",
            fontsize=9,
        )
    bx.set_ylim(0, max(vals) * 1.25)
    bx.set_ylabel("largest change in image 0's output")
    bx.set_title("Replace image 1:\ndoes image 0 change?", fontsize=10)
    fig.get_layout_engine().set(w_pad=0.3)
    return fig


# ---------------------------------------------------------------------------------------------
# Pre-norm against post-norm in a deep stack
# ---------------------------------------------------------------------------------------------


# --8<-- [start:post-norm]
def post_norm_forward(block: Block, x: torch.Tensor) -> torch.Tensor:
    """The original Transformer's order with the same modules: add first, normalise after."""
    x = block.norm1(x + block.attn(x)[0])  # LN(z + MSA(z))
    return block.norm2(x + block.mlp(x))  # LN(z' + MLP(z'))
    # --8<-- [end:post-norm]


def _stack_blocks(init: str, seed: int = 0, depth: int = STACK["depth"]) -> nn.ModuleList:
    """``depth`` blocks, seeded; Linear weights by ``init`` ("timm" or "xavier")."""
    torch.manual_seed(seed)
    blocks = nn.ModuleList(Block(dim=STACK["dim"], heads=STACK["heads"])
                           for _ in range(depth))  # fmt: skip
    for m in blocks.modules():
        if isinstance(m, nn.Linear):
            if init == "timm":
                nn.init.trunc_normal_(m.weight, std=INIT_STD)  # the book's model (timm)
            else:
                nn.init.xavier_uniform_(m.weight)  # the paper's JAX code (models_vit.py)
            nn.init.zeros_(m.bias)
    return blocks


# --8<-- [start:gradient-profile]
def gradient_profile(
    init: str, order: str, *, seed: int = 0, final_norm: bool = True, depth: int = STACK["depth"]
) -> dict[str, list[float]]:
    """Per block: the gradient norm of its parameters and the RMS size of the token vectors that
    enter it, for one seeded batch through a deep stack at initialisation.

    Args:
        init: "timm" (std ``INIT_STD``, the book's model) or "xavier" (uniform, as the official
            JAX ViT initialises its Dense kernels).
        order: "pre" (ViT) or "post" (original Transformer), with the same modules.
        seed: seeds the weights (``seed``) and the batch, labels and head (``1000 + seed``).
        final_norm: for "pre", the last LayerNorm of Eq. 4 (``False``: exercise 2).
        depth: how many blocks (``STACK["depth"]``; ViT-B's 12 for the shallower check).
    """
    blocks = _stack_blocks(init, seed, depth)
    torch.manual_seed(1000 + seed)
    x = torch.randn(STACK["batch"], STACK["tokens"], STACK["dim"])  # (B, T, D)
    labels = torch.randint(0, STACK["classes"], (STACK["batch"],))
    head = nn.Linear(STACK["dim"], STACK["classes"])
    norm = nn.LayerNorm(STACK["dim"], eps=1e-6)
    sizes = []
    z = x
    for blk in blocks:
        sizes.append(z.pow(2).mean().sqrt().item())  # RMS of the residual stream
        z = blk(z)[0] if order == "pre" else post_norm_forward(blk, z)
    if order == "pre" and final_norm:
        z = norm(z)  # Eq. 4: pre-norm needs a last LayerNorm; post-norm ends with one
    loss = F.cross_entropy(head(z[:, 0]), labels)
    loss.backward()
    grads = [math.sqrt(sum(p.grad.pow(2).sum().item() for p in blk.parameters())) for blk in blocks]
    return {"grad": grads, "rms": sizes}
    # --8<-- [end:gradient-profile]


#: The stack experiment is repeated for seeds 0 .. NORM_SEEDS - 1 (weights and batch), none
#: picked: one seed's ratios are not the experiment's.
NORM_SEEDS = 10
#: The same measurement at ViT-B's depth: does the post-norm profile keep its direction when the
#: stack is half as deep?
SHALLOW_DEPTH = 12


def _spread(rec, name: str, values, fmt: str) -> None:
    """Mean, lowest and highest over the seeds, as facts ``name``, ``name_lo``, ``name_hi``."""
    values = np.asarray(values)
    rec.fact(name, values.mean(), fmt, seeds=len(values))
    rec.fact(f"{name}_lo", values.min(), fmt)
    rec.fact(f"{name}_hi", values.max(), fmt)


@figure(chapter=7, id="pre-vs-post-norm", size=(7.2, 3.5), phone_size=7.0)
def pre_vs_post_norm(rec):
    """Gradient norm per block at initialisation, pre-norm against post-norm, two inits, over
    seeds 0-9; and the pre-norm stack without its final LayerNorm (exercise 2)."""
    runs = {
        (init, order): [gradient_profile(init, order, seed=s) for s in range(NORM_SEEDS)]
        for init in ("xavier", "timm")
        for order in ("pre", "post")
    }
    bare = [gradient_profile("xavier", "pre", seed=s, final_norm=False) for s in range(NORM_SEEDS)]
    arr = {key: {k: np.array([r[k] for r in rs]) for k in ("grad", "rms")}
           for key, rs in runs.items()}  # (seeds, depth) each  # fmt: skip
    for key, value in STACK.items():
        rec.fact(f"stack_{key}", value)
    rec.fact("init_std", INIT_STD, "{:g}")
    rec.fact("norm_seeds", NORM_SEEDS)
    xp, xq = arr["xavier", "pre"], arr["xavier", "post"]
    tp, tq = arr["timm", "pre"], arr["timm", "post"]
    last_ratio = xq["grad"][:, -1] / xp["grad"][:, -1]
    pre_trend = xp["grad"][:, 0] / xp["grad"][:, -1]
    post_trend = xq["grad"][:, 0] / xq["grad"][:, -1]
    _spread(rec, "xavier_last_post_over_pre", last_ratio, "{:.1f}")
    _spread(rec, "xavier_pre_first_over_last", pre_trend, "{:.1f}")
    _spread(rec, "xavier_post_first_over_last", post_trend, "{:.2f}")
    _spread(rec, "xavier_pre_rms_growth", xp["rms"][:, -1] / xp["rms"][:, 0], "{:.1f}")
    _spread(rec, "xavier_post_rms_growth", xq["rms"][:, -1] / xq["rms"][:, 0], "{:.2f}")
    # in how many seeds each statement of the text holds
    rec.fact("n_post_last_larger", int((last_ratio > 1).sum()))
    rec.fact("n_pre_falls", int((pre_trend > 1).sum()))
    rec.fact("n_post_falls", int((post_trend > 1).sum()))
    rec.fact("n_post_rises", int((post_trend < 1).sum()))
    _spread(rec, "timm_last_post_over_pre", tq["grad"][:, -1] / tp["grad"][:, -1], "{:.2f}")
    _spread(rec, "timm_pre_spread", tp["grad"].max(1) / tp["grad"].min(1), "{:.2f}")
    _spread(rec, "timm_post_spread", tq["grad"].max(1) / tq["grad"].min(1), "{:.2f}")
    # exercise 2: without the final LayerNorm, every block's gradient is scaled by about the
    # same factor (block by block, seed by seed)
    factor = np.array([r["grad"] for r in bare]) / xp["grad"]  # (seeds, depth)
    _spread(rec, "no_final_ln_factor", factor.mean(axis=1), "{:.1f}")
    rec.fact("no_final_ln_block_lo", factor.min(), "{:.1f}")
    rec.fact("no_final_ln_block_hi", factor.max(), "{:.1f}")
    rec.fact("last_stream_rms", xp["rms"][:, -1].mean(), "{:.1f}")
    # the same stacks at ViT-B's depth, Xavier weights: which way each order's profile leans
    rec.fact("shallow_depth", SHALLOW_DEPTH)
    for order in ("pre", "post"):
        g = np.array([gradient_profile("xavier", order, seed=s, depth=SHALLOW_DEPTH)["grad"]
                      for s in range(NORM_SEEDS)])  # fmt: skip
        trend = g[:, 0] / g[:, -1]  # first block over last: below 1, rising toward the output
        _spread(rec, f"shallow_{order}_first_over_last", trend, "{:.2f}")
        rec.fact(f"n_shallow_{order}_rises", int((trend < 1).sum()))
        rec.fact(f"n_shallow_{order}_falls", int((trend > 1).sum()))
    return {f"{i}-{o}": r for (i, o), r in arr.items()}


def steady(values) -> np.ndarray:
    """Values rounded to 3 significant digits (0.1 %, a third of a pixel here) for drawing:
    float32 sums on another CPU move their last bits, which would move antialiased pixels."""
    return np.array([float(f"{x:.3g}") for x in np.ravel(values)]).reshape(np.shape(values))


@pre_vs_post_norm.draw
def draw_pre_vs_post_norm(runs, v):
    c = plot.colors(v)
    fig, (ax, bx) = plot.subplots(v, 1, 2, phone_cols=1)
    layers = np.arange(1, STACK["depth"] + 1)
    style = {"pre": (c["blue"], "pre-norm"), "post": (c["orange"], "post-norm")}
    for init, ls in (("xavier", "-"), ("timm", "--")):
        for order in ("pre", "post"):
            color, name = style[order]
            g = steady(runs[f"{init}-{order}"]["grad"])  # (seeds, depth)
            mean = g.mean(axis=0)
            if init == "xavier":  # the lowest and highest seed as a band
                ax.fill_between(layers, g.min(axis=0), g.max(axis=0), color=color, alpha=0.18,
                                lw=0)  # fmt: skip
            ax.plot(layers, mean, ls=ls, color=color, lw=1.8 if init == "xavier" else 1.3)
            if init == "xavier":
                plot.label_line(ax, layers[-1], mean[-1], f"{name},\nXavier", color, fontsize=8.5)
    ax.text(
        1.5,
        0.12,
        "dashed: the same stacks with the book's\nstd-0.02 initialisation (both orders)",
        fontsize=8,
        color=c["muted"],
        va="bottom",
    )
    ax.set_ylim(0, None)
    ax.set_xlim(0.5, STACK["depth"] + 10.5)
    ax.set_xticks([1, 6, 12, 18, 24])
    ax.set_xlabel("block (1 = nearest the input)")
    ax.set_ylabel("gradient norm of the block's weights")
    ax.set_title("Gradient per block at initialisation", fontsize=10)
    for order in ("pre", "post"):
        color, name = style[order]
        r = steady(runs[f"xavier-{order}"]["rms"])
        bx.fill_between(layers, r.min(axis=0), r.max(axis=0), color=color, alpha=0.18, lw=0)
        bx.plot(layers, r.mean(axis=0), color=color)
        plot.label_line(bx, layers[-1], r.mean(axis=0)[-1], name, color)
    bx.set_xlim(0.5, STACK["depth"] + 6)
    bx.set_ylim(0, None)
    bx.set_xticks([1, 6, 12, 18, 24])
    bx.set_xlabel("block (1 = nearest the input)")
    bx.set_ylabel("RMS of the tokens entering it")
    bx.set_title("Size of the residual stream (Xavier)", fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# GELU against ReLU
# ---------------------------------------------------------------------------------------------


# --8<-- [start:gelu-minimum]
def gelu_exact(x: np.ndarray | float) -> np.ndarray | float:
    """GELU(x) = x Phi(x), with Phi the standard normal CDF written through erf."""
    return 0.5 * x * (1.0 + special.erf(x / math.sqrt(2.0)))


def gelu_minimum() -> tuple[float, float]:
    """(x, GELU(x)) at GELU's minimum, found numerically (bounded Brent search)."""
    res = optimize.minimize_scalar(
        gelu_exact, bounds=(-3.0, 0.0), method="bounded", options={"xatol": 1e-10}
    )
    return float(res.x), float(res.fun)
    # --8<-- [end:gelu-minimum]


def gelu_tanh_gap() -> tuple[float, float]:
    """Largest |GELU_tanh(x) - GELU(x)| on [-10, 10] (step 1e-5, float64) and the |x| where it
    occurs. flax's ``nn.gelu`` (the paper's JAX code) defaults to the tanh form; timm and
    ``torch.nn.GELU()`` use the exact erf form. Beyond |x| = 10 both agree to float64."""
    x = torch.linspace(-10, 10, 2_000_001, dtype=torch.float64)
    gap = (F.gelu(x, approximate="tanh") - F.gelu(x)).abs()
    i = int(gap.argmax())
    return gap[i].item(), abs(x[i].item())


@figure(chapter=7, id="gelu-vs-relu", size=(7.2, 3.2), phone_size=6.6)
def gelu_vs_relu(rec):
    """GELU (exact erf form, as torch.nn.GELU computes it) and ReLU, values and slopes."""
    x_min, y_min = gelu_minimum()
    rec.fact("gelu_min_x", x_min, "{:.4f}")
    rec.fact("gelu_min_y", y_min, "{:.4f}")
    t = torch.tensor([x_min], dtype=torch.float64, requires_grad=True)
    F.gelu(t).backward()
    # both at rounding level (the search stops within 1e-10 of the minimum): the page prints
    # the bound tol, never the value
    rec.fact("gelu_slope_at_min", abs(t.grad.item()), "{:.0e}", tol=1e-7)
    rec.fact("torch_gelu_min_diff", abs(F.gelu(t.detach()).item() - y_min), "{:.0e}", tol=1e-15)
    x = torch.linspace(-4, 3, 701, dtype=torch.float64, requires_grad=True)
    y = F.gelu(x)
    (slope,) = torch.autograd.grad(y.sum(), x)
    tanh_err, tanh_at = gelu_tanh_gap()
    rec.fact("gelu_tanh_max_err", tanh_err, "{:.1e}")
    rec.fact("gelu_tanh_max_at", tanh_at, "{:.2f}")
    m1 = torch.tensor([-1.0], dtype=torch.float64, requires_grad=True)
    F.gelu(m1).backward()
    rec.fact("gelu_slope_m1", m1.grad.item(), "{:.3f}")
    x = x.detach()
    return {
        "x": x.numpy(),
        "gelu": y.detach().numpy(),
        "relu": F.relu(x).numpy(),
        "gelu_slope": slope.numpy(),
        "relu_slope": (x > 0).double().numpy(),
        "min": (x_min, y_min),
    }


@gelu_vs_relu.draw
def _(d, v):
    c = plot.colors(v)
    fig, (ax, bx) = plot.subplots(v, 1, 2, phone_cols=1)
    x = d["x"]
    ax.plot(x, d["relu"], color=c["muted"], lw=1.6)
    ax.plot(x, d["gelu"], color=c["blue"])
    ax.axhline(0, color=c["grid"], lw=0.8, zorder=0)
    ax.axvline(0, color=c["grid"], lw=0.8, zorder=0)
    xm, ym = d["min"]
    ax.plot([xm], [ym], "o", color=c["orange"], zorder=5)
    # in the empty upper left, clear of both axes lines and of the curves
    ax.annotate(
        f"minimum\n({xm:.3f}, {ym:.3f})",
        (xm, ym),
        xytext=(-3.8, 0.8),
        fontsize=8.5,
        va="bottom",
        color=c["orange"],
        arrowprops={"arrowstyle": "->", "color": c["orange"], "lw": 1},
    )
    ax.text(1.2, 1.9, "ReLU", color=c["muted"], fontsize=9, ha="right")
    ax.text(1.5, 0.35, "GELU", color=c["blue"], fontsize=9, ha="left")
    ax.set_xlim(-4, 3)
    ax.set_ylim(-0.6, 3.1)
    ax.set_xlabel("input x")
    ax.set_ylabel("activation")
    ax.set_title("Values", fontsize=10)
    bx.plot(x, d["relu_slope"], color=c["muted"], lw=1.6, drawstyle="steps-post")
    bx.plot(x, d["gelu_slope"], color=c["blue"])
    bx.axhline(0, color=c["grid"], lw=0.8, zorder=0)
    bx.axvline(0, color=c["grid"], lw=0.8, zorder=0)
    bx.plot([xm], [0], "o", color=c["orange"], zorder=5)
    bx.text(
        -3.8, 0.9, "ReLU: slope 0 for x < 0,\n1 for x > 0", color=c["muted"], fontsize=8.5, va="top"
    )
    # below the curves on the right, where GELU's slope is already above 1
    bx.text(
        0.9,
        0.12,
        f"GELU: smooth;\nnegative for\nx < {d['min'][0]:.2f},\npositive between\nthere and 0",
        color=c["blue"],
        fontsize=8.5,
        va="bottom",
    )
    bx.set_xlim(-4, 3)
    bx.set_ylim(-0.25, 1.25)
    bx.set_xlabel("input x")
    bx.set_ylabel("slope d(activation)/dx")
    bx.set_title("Slopes", fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# Parameters of one ViT-B/16 block
# ---------------------------------------------------------------------------------------------


@figure(chapter=7, id="block-params", size=(7.2, 2.3))
def block_params(rec):
    """Parameters of one ViT-B/16 block by module, from ``vitbook.calc`` and from the module."""
    cfg = preset(B16)
    p = param_breakdown(cfg)
    D, M = cfg.dim, cfg.mlp_dim
    with torch.device("meta"):
        blk = Block(dim=D, heads=cfg.heads, mlp_ratio=cfg.mlp_ratio)
    counted = sum(t.numel() for t in blk.parameters())
    parts = {
        "attn.qkv": p["qkv"],
        "attn.proj": p["proj"],
        "mlp.fc1": D * M + M,
        "mlp.fc2": M * D + D,
        "norm1 + norm2": p["norms"],
    }
    assert sum(parts.values()) == p["block"] == counted
    rec.fact("block_params", p["block"])
    rec.fact("block_params_module", counted)
    rec.fact("qkv_params", p["qkv"])
    rec.fact("proj_params", p["proj"])
    rec.fact("attn_params", p["attn"])
    rec.fact("mlp_params", p["mlp"])
    rec.fact("fc1_params", parts["mlp.fc1"])
    rec.fact("norms_params", p["norms"])
    rec.fact("mlp_share", p["mlp"] / p["block"], "{:.1%}")
    rec.fact("attn_share", p["attn"] / p["block"], "{:.1%}")
    # the query and key projections (two of qkv's three, with their biases): what decides
    # where a token looks; the value and output projections carry what it reads
    qk = 2 * p["qkv"] // 3  # qkv is Linear(D, 3D): the first two thirds are q and k
    rec.fact("qk_params", qk, "{:,}")
    rec.fact("qk_share", qk / p["block"], "{:.1%}")
    rec.fact("vo_share", (p["attn"] - qk) / p["block"], "{:.1%}")
    rec.fact("norms_share", p["norms"] / p["block"], "{:.2%}")
    rec.fact("blocks_b16", cfg.depth)
    rec.fact("all_blocks_params", p["blocks"])
    rec.fact("blocks_share_of_model", p["blocks"] / p["total"], "{:.1%}")
    return parts


@block_params.draw
def _(parts, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    colours = [c["blue"], c["purple"], c["orange"], c["yellow"], c["green"]]
    total = sum(parts.values())
    left = 0
    phone = plot.is_phone(v)
    for (name, n), col in zip(parts.items(), colours, strict=True):
        ax.barh(0, n, left=left, color=col, height=0.5)
        if phone and 0.05 < n / total < 0.15:  # too narrow to hold its label: below the bar
            ax.annotate(
                f"{name}: {n:,} ({n / total:.1%})",
                (left + n / 2, -0.25),
                xytext=(-6, -16),
                textcoords="offset points",
                ha="left",
                va="top",
                fontsize=8.5,
                arrowprops={"arrowstyle": "-", "color": c["muted"], "lw": 0.8},
            )
        elif n / total > 0.05:
            ax.text(
                left + n / 2,
                0,
                f"{name}\n{n:,}\n{n / total:.1%}",
                ha="center",
                va="center",
                fontsize=8.5,
                color="white" if not v.dark else "#111111",
            )
        else:
            ax.annotate(
                f"{name}: {n:,} ({n / total:.2%})",
                (left + n, 0.25),
                xytext=(-4, 18),
                textcoords="offset points",
                ha="right",
                fontsize=8.5,
                arrowprops={"arrowstyle": "-", "color": c["muted"], "lw": 0.8},
            )
        left += n
    ax.set_xlim(0, total)
    ax.set_ylim(-0.85 if phone else -0.4, 0.75)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.xaxis.set_major_formatter(
        plot.matplotlib.ticker.FuncFormatter(lambda val, _: f"{val / 1e6:.0f}M")
    )
    ax.set_xlabel(f"parameters in one ViT-B/16 block{plot.pick(v, ' ', chr(10))}({total:,} in all)")
    return fig


@facts(chapter=7, id="block-equations")
def block_equations(rec):
    """Check Eq. 7.1-7.2 on a real block: the module's output equals the equations written out."""
    torch.manual_seed(0)
    blk = Block(dim=32, heads=4)
    z = torch.randn(2, 5, 32)  # (B, T, D)
    out, _ = blk(z)
    z1 = blk.attn(F.layer_norm(z, (32,), blk.norm1.weight, blk.norm1.bias, eps=1e-6))[0] + z
    z2 = blk.mlp(F.layer_norm(z1, (32,), blk.norm2.weight, blk.norm2.bias, eps=1e-6)) + z1
    diff = (out - z2).abs().max().item()
    rec.fact("eq_check_diff", diff, text="0" if diff == 0 else f"{diff:.0e}")
    return {"diff": (out - z2).abs().max().item()}


@facts(chapter=7, id="paper-dropout")
def paper_dropout(rec):
    """Where ViT puts dropout and at what rate: the official code (vit_jax/models_vit.py) and
    the paper's Table 3 (pre-training hyper-parameters)."""
    table3 = {"jft": 0.0, "in21k": 0.1, "in1k": 0.1}  # dropout rate by pre-training set
    for data, rate in table3.items():
        quote(rec, f"t3_dropout_{data}", rate, "{:g}")
    cfg = preset("vit-b/16", pos_drop_rate=0.1, attn_drop_rate=0.0, proj_drop_rate=0.1)
    block = Block(dim=cfg.dim, heads=cfg.heads, proj_drop=cfg.proj_drop_rate)
    sites = [n for n, m in block.named_modules() if isinstance(m, nn.Dropout) and m.p > 0]
    rec.fact("dropout_sites_per_block", len(sites))  # proj, after GELU, after fc2
    return {"table3": table3, "sites": sites}
