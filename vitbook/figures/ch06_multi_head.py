"""Chapter 6, Multi-head attention: the split into heads, the fused projection, four heads.

The four heads of ``four_heads`` are set by hand (see ``hand_set_heads``); everything else runs
the book's model code on random inputs.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.patches import Rectangle

from vitbook import plot
from vitbook.analysis import mean_attention_distance, pca
from vitbook.calc import param_breakdown
from vitbook.data.face import face, face_tensor
from vitbook.engine import facts, figure
from vitbook.model import Attention, preset, scaled_dot_product
from vitbook.patches import patchify


def diff_text(x: float) -> str:
    """A largest difference as the book prints it: exactly 0, or 7.6e-08."""
    return "0" if x == 0 else f"{x:.1e}"


def shape_text(t: torch.Tensor | tuple[int, ...]) -> str:
    """A shape as the book prints it: (2, 197, 768)."""
    dims = tuple(t.shape) if isinstance(t, torch.Tensor) else tuple(t)
    return "(" + ", ".join(str(d) for d in dims) + ")"


# --8<-- [start:split-heads]
def split_heads_trace(B: int = 2, T: int = 197, D: int = 768, heads: int = 12, seed: int = 0):
    """Multi-head attention step by step, as in ``Attention.forward``, keeping every shape."""
    g = torch.Generator().manual_seed(seed)
    attn = Attention(dim=D, heads=heads, fused=False).requires_grad_(False)
    Dh = D // heads
    x = torch.randn(B, T, D, generator=g)  # (B, T, D) tokens
    steps = [("x", x)]
    qkv = attn.qkv(x)  # (B, T, 3D): all queries, keys and values at once
    steps.append(("qkv = attn.qkv(x)", qkv))
    qkv = qkv.reshape(B, T, 3, heads, Dh)  # (B, T, 3, heads, Dh)
    steps.append(("qkv.reshape(B, T, 3, heads, Dh)", qkv))
    qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, B, heads, T, Dh)
    steps.append(("qkv.permute(2, 0, 3, 1, 4)", qkv))
    q, k, v = qkv.unbind(0)  # 3 x (B, heads, T, Dh)
    steps.append(("q, k, v = qkv.unbind(0)", q))
    out, a = scaled_dot_product(q, k, v)  # (B, heads, T, Dh), (B, heads, T, T): every head
    steps.append(("weights: softmax(q kᵀ / √Dh)", a))
    steps.append(("out = weights @ v", out))
    out = out.transpose(1, 2).reshape(B, T, D)  # (B, T, heads * Dh): heads concatenated
    steps.append(("out.transpose(1, 2).reshape(B, T, D)", out))
    y = attn.proj(out)  # (B, T, D): W_O mixes the heads (Eq. 8)
    steps.append(("attn.proj(out)", y))
    module_out, _ = attn(x, return_weights=True)
    return steps, float((module_out - y).abs().max())
    # --8<-- [end:split-heads]


def qkv_columns(D: int, heads: int) -> np.ndarray:
    """Which output column of the fused qkv Linear lands in (part, head, feature).

    Feeds the column numbers themselves through the module's reshape and permute.
    Returns an int array (3, heads, Dh).
    """
    cols = torch.arange(3 * D)[None, None]  # (1, 1, 3D): column numbers as a fake qkv output
    cols = cols.reshape(1, 1, 3, heads, D // heads).permute(2, 0, 3, 1, 4)  # (3, 1, h, 1, Dh)
    return cols[:, 0, :, 0].numpy()


@figure(chapter=6, id="head-split", size=(7.2, 3.4), phone_size=7.4)
def head_split(rec):
    """The shapes of ViT-B/16's attention step by step, and which qkv columns feed which head."""
    cfg = preset("vit-b/16")
    steps, diff = split_heads_trace(B=2, T=cfg.seq_len, D=cfg.dim, heads=cfg.heads)
    names = ("x", "qkv", "qkv5", "qkv_perm", "qkv_unbind", "weights", "heads_out", "concat", "proj")
    for name, (_, t) in zip(names, steps, strict=True):
        rec.fact(f"shape_{name}", shape_text(t))
    rec.fact("trace_max_diff", diff, text=diff_text(diff))
    rec.fact("b16_heads", cfg.heads)
    rec.fact("b16_dim", cfg.dim)
    rec.fact("b16_head_dim", cfg.head_dim)
    rec.fact("b16_tokens", cfg.seq_len)
    rec.fact("b16_qkv_width", 3 * cfg.dim)
    cols = qkv_columns(cfg.dim, cfg.heads)
    for part, name in enumerate("qkv"):
        for h in (0, 1):
            rec.fact(f"cols_{name}_h{h}", f"{cols[part, h, 0]}–{cols[part, h, -1]}")
    return {"cols": cols, "D": cfg.dim, "heads": cfg.heads}


@head_split.draw
def _(d, v):
    c = plot.colors(v)
    phone = plot.is_phone(v)
    fig, (ax, ax2) = plot.subplots(v, 2, 1, height_ratios=[1, 3.5] if phone else [1, 1.6])
    D, heads, cols = d["D"], d["heads"], d["cols"]
    Dh = D // heads
    parts = (("q", c["blue"]), ("k", c["orange"]), ("v", c["green"]))
    # Top: the 3D output columns of the fused Linear, in their natural order.
    for p, (name, col) in enumerate(parts):
        for h in range(heads):
            start = int(cols[p, h, 0])
            ax.add_patch(
                Rectangle(
                    (start, 0), Dh, 1, fc=col, ec=c["bg"], lw=0.8, alpha=0.95 if h % 2 == 0 else 0.6
                )
            )
            if phone and (h >= 10 or h % 3):  # narrow cells: every third head is numbered
                continue
            ax.text(
                start + Dh / 2,
                0.5,
                str(h),
                ha="center",
                va="center",
                fontsize=7.5,
                color="white" if not v.dark else "black",
            )
        ax.text(
            p * D + D / 2,
            1.15,
            plot.pick(
                v,
                f"{name}: columns {p * D}–{(p + 1) * D - 1}",
                f"{name}: {p * D}–{(p + 1) * D - 1}",
            ),
            ha="center",
            va="bottom",
            fontsize=8.5,
            color=col,
        )
    ax.set_xlim(0, 3 * D)
    ax.set_ylim(0, 1.6)
    ax.set_yticks([])
    ax.set_xticks([0, D, 2 * D, 3 * D])
    ax.spines["left"].set_visible(False)
    ax.set_xlabel(
        plot.pick(
            v,
            "output column of attn.qkv, Linear(D, 3D); numbers in the cells: head",
            "output column of attn.qkv, Linear(D, 3D);\nnumbers in the cells: head",
        ),
        fontsize=9,
    )
    if phone:  # the (3, heads) grid turned on its side: one row per head
        for p, (_name, col) in enumerate(parts):
            for h in range(heads):
                ax2.add_patch(
                    Rectangle(
                        (p, heads - 1 - h), 0.94, 0.86, fc=col, ec="none",
                        alpha=0.95 if h % 2 == 0 else 0.6,
                    )
                )  # fmt: skip
                ax2.text(
                    p + 0.47,
                    heads - 1 - h + 0.43,
                    f"{cols[p, h, 0]}–{cols[p, h, -1]}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if not v.dark else "black",
                )
        ax2.set_title("after reshape and permute:\nq, k and v of each head", fontsize=9)
        ax2.set_xlim(-0.05, 3)
        ax2.set_ylim(-0.1, heads)
        ax2.set_xticks([0.47, 1.47, 2.47], labels=["q", "k", "v"])
        ax2.set_yticks(
            [heads - 1 - h + 0.43 for h in range(heads)], labels=[str(h) for h in range(heads)]
        )
        ax2.tick_params(length=0)
        for s in ax2.spines.values():
            s.set_visible(False)
        ax2.set_ylabel("head", fontsize=9)
        ax2.set_xlabel(f"each block: all tokens × Dh = {Dh} columns", fontsize=9)
        return fig
    # Bottom: after reshape + permute, a (3, heads) grid of (T, Dh) blocks.
    for p, (_name, col) in enumerate(parts):
        for h in range(heads):
            ax2.add_patch(
                Rectangle(
                    (h, 2 - p), 0.92, 0.85, fc=col, ec="none", alpha=0.95 if h % 2 == 0 else 0.6
                )
            )
            ax2.text(
                h + 0.46,
                2 - p + 0.42,
                f"{cols[p, h, 0]}\n–{cols[p, h, -1]}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if not v.dark else "black",
            )
    ax2.set_title(
        "after reshape(B, T, 3, heads, Dh) and permute(2, 0, 3, 1, 4): q, k and v of each head",
        fontsize=9,
    )
    ax2.set_xlim(-0.1, heads)
    ax2.set_ylim(-0.1, 3)
    ax2.set_xticks([h + 0.46 for h in range(heads)], labels=[str(h) for h in range(heads)])
    ax2.set_yticks([2.42, 1.42, 0.42], labels=["q", "k", "v"])
    ax2.tick_params(length=0)
    for s in ax2.spines.values():
        s.set_visible(False)
    ax2.set_xlabel(
        f"head (each block: all tokens × Dh = {Dh} columns, the range written in it)", fontsize=9
    )
    return fig


# --8<-- [start:fused-qkv]
def fused_vs_separate(D: int = 768, heads: int = 12, T: int = 197, seed: int = 0) -> dict:
    """One Linear(D, 3D) against three Linear(D, D) holding the same weights, and Eq. 8 head by
    head (separate projections, a loop over heads, concatenation, W_O) against the module."""
    g = torch.Generator().manual_seed(seed)
    attn = Attention(dim=D, heads=heads, fused=True)
    with torch.no_grad():
        for p in attn.parameters():  # non-zero biases too, so that they are part of the proof
            p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    x = torch.randn(2, T, D, generator=g)  # (B, T, D)
    W, b = attn.qkv.weight, attn.qkv.bias  # (3D, D), (3D,)
    separate = []
    for i in range(3):  # W_Q, W_K, W_V as three ordinary Linear(D, D) layers
        lin = torch.nn.Linear(D, D)
        with torch.no_grad():
            lin.weight.copy_(W[i * D : (i + 1) * D])
            lin.bias.copy_(b[i * D : (i + 1) * D])
        separate.append(lin)
    with torch.no_grad():
        fused = attn.qkv(x)  # (B, T, 3D)
        q, k, v = (lin(x) for lin in separate)  # 3 x (B, T, D)
        qkv_diff = (fused - torch.cat([q, k, v], dim=-1)).abs().max().item()
        Dh = D // heads
        per_head = []
        for h in range(heads):  # Eq. 8: SA_h on its own slice of q, k, v
            sl = slice(h * Dh, (h + 1) * Dh)
            o, _ = scaled_dot_product(q[..., sl], k[..., sl], v[..., sl])  # (B, T, Dh)
            per_head.append(o)
        loop = attn.proj(torch.cat(per_head, dim=-1))  # [SA_1; ...; SA_k] W_O, (B, T, D)
        module, _ = attn(x)  # the model's fused path (F.scaled_dot_product_attention)
        msa_diff = (loop - module).abs().max().item()
    return {"qkv_diff": qkv_diff, "msa_diff": msa_diff, "scale": module.abs().max().item()}
    # --8<-- [end:fused-qkv]


@facts(chapter=6, id="fused-qkv")
def fused_qkv(rec):
    """The fused-projection proof and the attention parameter count of ViT-B/16."""
    r = fused_vs_separate()
    rec.fact("qkv_max_diff", r["qkv_diff"], text=diff_text(r["qkv_diff"]))
    # float32 rounding (another summation order): the page prints the bound tol, not the value
    rec.fact("msa_max_diff", r["msa_diff"], text=diff_text(r["msa_diff"]), tol=1e-6)
    rec.fact("msa_out_max", r["scale"], "{:.2f}")
    cfg = preset("vit-b/16")
    p = param_breakdown(cfg)
    D = cfg.dim
    rec.fact("params_qkv", p["qkv"])
    rec.fact("params_proj", p["proj"])
    rec.fact("params_attn", p["attn"])
    rec.fact("params_attn_formula", 4 * D * D + 4 * D)
    counts = {
        h: sum(t.numel() for t in Attention(dim=D, heads=h).parameters()) for h in (1, 12, 768)
    }
    rec.fact("params_attn_module", counts[12])
    rec.fact("params_attn_1head", counts[1])
    rec.fact("params_attn_768heads", counts[768])
    rec.fact("params_attn_all_blocks", p["attn_all"])
    rec.fact("params_attn_share", p["attn_all"] / p["total"], "{:.0%}")
    rec.fact("b16_depth", cfg.depth)
    large = preset("vit-l/16")
    rec.fact("l16_dim", large.dim, "{}")
    rec.fact("l16_heads", large.heads)
    rec.fact("l16_head_dim", large.head_dim)
    rec.fact("params_attn_l16", param_breakdown(large)["attn"])
    return {"qkv": r, "params": p, "by_heads": counts}


# ----------------------------------------------------------------------------- four heads

PATCH = 16
GRID = 14
QUERY = 76  # row 5, column 6: the eye on the left of the picture
HEAD_NAMES = ("appearance", "fine detail", "local (position only)", "mixed")


def face_tokens(n_pc: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """The face's 196 patches (P = 16) as hand-built tokens of width D = 24.

    The patch part: dims 0-2 hold the patch's first three principal components (colour and
    brightness) and dim 3 their squared length; dims 4-8 hold components 4-8 (finer structure)
    and dim 9 their squared length; dim 13 holds the first component squared. Components are
    measured in units of the first one's standard deviation. The position part: dims 10-12 hold
    (row, column, row² + column²), counted in patches. Dims 14-23 are zero. The two parts use
    different dims, so adding the position embedding, as ViT does, is the same as writing both
    side by side.

    Returns:
        tokens (196, 24) and the principal components (196, n_pc).
    """
    x = patchify(face_tensor(GRID * PATCH), PATCH)[0].double()  # (196, 768)
    # each component's sign fixed by its loadings (their sum positive). The coordinates of
    # centred data sum to zero, so their sum's sign would be rounding noise and differ by CPU.
    comps, mean, _ = pca(x, n_pc, sign="sum")
    x = x - mean
    pcs = x @ comps.T  # (196, n_pc): coordinates on the top components
    pcs = pcs / pcs[:, 0].std()
    rows, cols = torch.meshgrid(torch.arange(GRID), torch.arange(GRID), indexing="ij")
    r, c = rows.flatten().double(), cols.flatten().double()
    t = torch.zeros(GRID * GRID, 24, dtype=torch.float64)
    t[:, 0:3], t[:, 3] = pcs[:, 0:3], (pcs[:, 0:3] ** 2).sum(-1)
    t[:, 4:9], t[:, 9] = pcs[:, 3:8], (pcs[:, 3:8] ** 2).sum(-1)
    t[:, 10], t[:, 11], t[:, 12] = r, c, r**2 + c**2
    t[:, 13] = pcs[:, 0] ** 2
    return t, pcs


# --8<-- [start:hand-set-heads]
def hand_set_heads(
    *,
    t_app: float = 16.0,
    t_det: float = 40.0,
    sigma_local: float = 1.0,
    t_mix: float = 8.0,
    sigma_mix: float = 3.0,
) -> Attention:
    """An ``Attention(dim=24, heads=4)`` whose qkv weights are written by hand (Dh = 6).

    Every head scores a key by a negative squared distance, -t |u_i - u_j|², computed as a
    dot product: the query is [2t u_i, -t] (the -t through the bias) and the key is
    [u_j, |u_j|²], so q·k = -t |u_i - u_j|² + t |u_i|², and the last term is the same for
    every key, which the softmax ignores. The heads differ only in what u is:

    - head 0, appearance:  the first three principal components (colour, brightness);
    - head 1, fine detail: components 4-8 (finer structure);
    - head 2, local:       the position (row, column) alone, t = 1 / (2 sigma_local²):
      a Gaussian bump around the query's own patch, whatever the image shows;
    - head 3, mixed:       brightness (component 1) plus a wider positional bump (sigma_mix).

    Each query is multiplied by sqrt(Dh), so that the module's 1/sqrt(Dh) cancels and the
    scores are exactly the ones above. Values copy the token's first six dims (not used here).
    """
    D, heads = 24, 4
    Dh = D // heads
    attn = Attention(dim=D, heads=heads, qkv_bias=True, fused=False).double()
    W = torch.zeros(3 * D, D, dtype=torch.float64)  # rows: q of heads 0-3, k, v
    b = torch.zeros(3 * D, dtype=torch.float64)
    s = math.sqrt(Dh)

    def bump(head: int, at: int, feats: list[int], square: int, t: float) -> None:
        """Write -t |u_i - u_j|² into head ``head``, using its dims from ``at`` on."""
        q0, k0 = head * Dh + at, D + head * Dh + at  # first q row and first k row
        for n, f in enumerate(feats):
            W[q0 + n, f] = 2 * t * s  # q: 2t u_i
            W[k0 + n, f] = 1.0  # k: u_j
        b[q0 + len(feats)] = -t * s  # q: -t, a constant
        W[k0 + len(feats), square] = 1.0  # k: |u_j|²

    bump(0, 0, [0, 1, 2], 3, t_app)
    bump(1, 0, [4, 5, 6, 7, 8], 9, t_det)
    bump(2, 0, [10, 11], 12, 1 / (2 * sigma_local**2))
    bump(3, 0, [0], 13, t_mix)
    bump(3, 2, [10, 11], 12, 1 / (2 * sigma_mix**2))
    for h in range(heads):  # values: the first six token dims, in every head
        W[2 * D + h * Dh : 2 * D + (h + 1) * Dh, 0:Dh] = torch.eye(Dh, dtype=torch.float64)
    with torch.no_grad():
        attn.qkv.weight.copy_(W)
        attn.qkv.bias.copy_(b)
    return attn
    # --8<-- [end:hand-set-heads]


@figure(chapter=6, id="four-heads", size=(7.2, 4.3), phone_size=7.6)
def four_heads(rec):
    """One patch's attention row in each of four hand-set heads, and each head's mean
    attention distance (ViT appendix D.7) over all 196 query patches."""
    tokens, _ = face_tokens()
    attn = hand_set_heads()
    with torch.no_grad():
        _, weights = attn(tokens[None], return_weights=True)  # (1, 4, 196, 196)
    dist = mean_attention_distance(weights, GRID, PATCH, num_prefix_tokens=0)  # (4,)
    uniform = torch.full((1, 1, GRID * GRID, GRID * GRID), 1.0 / (GRID * GRID))
    uni = mean_attention_distance(uniform, GRID, PATCH, num_prefix_tokens=0)[0]
    rec.fact("fh_patch", PATCH)
    rec.fact("fh_grid", GRID)
    rec.fact("fh_tokens", GRID * GRID)
    rec.fact("fh_query", QUERY)
    rec.fact("fh_query_row", QUERY // GRID)
    rec.fact("fh_query_col", QUERY % GRID)
    for h, key in enumerate(("app", "det", "local", "mix")):
        rec.fact(f"dist_{key}", dist[h], "{:.0f}")
        rec.fact(f"peak_{key}", weights[0, h, QUERY].max(), "{:.2f}")
    rec.fact("dist_uniform", uni, "{:.0f}")
    rec.fact("image_width", GRID * PATCH)
    # float64 rounding, a bound on any CPU (printed with the page's below(), never as a value)
    rec.fact("fh_row_sum_max_dev", (weights.sum(-1) - 1).abs().max(), "{:.1e}", tol=1e-13)
    rows = weights[0, :, QUERY].reshape(len(HEAD_NAMES), GRID, GRID).numpy()
    return {"image": face(GRID * PATCH), "rows": rows, "dist": dist.numpy(), "uniform": float(uni)}


@four_heads.draw
def _(d, v):
    c = plot.colors(v)
    fig = plot.new_figure(v, layout=None)
    phone = plot.is_phone(v)
    if phone:  # the four maps in two rows, the note and the bars below
        g = fig.add_gridspec(
            3, 2, height_ratios=[1, 1, 0.55], left=0.03, right=0.97, top=0.96, bottom=0.27,
            hspace=0.35, wspace=0.1,
        )  # fmt: skip
        cells = [g[0, 0], g[0, 1], g[1, 0], g[1, 1]]
    else:
        g = fig.add_gridspec(
            2,
            4,
            height_ratios=[1.75, 1],
            left=0.02,
            right=0.98,
            top=0.9,
            bottom=0.13,
            hspace=0.45,
            wspace=0.08,
        )
        cells = [g[0, h] for h in range(4)]
    r, col = divmod(QUERY, GRID)
    for h, name in enumerate(HEAD_NAMES):
        ax = fig.add_subplot(cells[h])
        row = d["rows"][h]
        plot.attention_overlay(ax, d["image"], row / row.max(), alpha=0.6)
        ax.add_patch(
            Rectangle(
                (col * PATCH - 0.5, r * PATCH - 0.5), PATCH, PATCH, fill=False, ec="#00e5ff", lw=1.8
            )
        )
        ax.set_title(f"{h}: {name}", fontsize=9, loc="center")
        ax.text(
            0.5,
            -0.04,
            f"mean distance {d['dist'][h]:.0f} px",
            transform=ax.transAxes,
            ha="center",
            va="top",
            fontsize=8.5,
            color=c["fg"],
        )
    note = fig.add_subplot(g[2, :] if phone else g[1, 0])  # the bars' labels reach column 1
    note.axis("off")
    note.text(
        0.02,
        0.95,
        plot.pick(
            v,
            f"cyan square: the query,\npatch {QUERY} (an eye)\n\ncolour: its attention\n"
            "row over the 196\npatches, each map\nscaled to its maximum",
            f"cyan square: the query, patch {QUERY} (an eye)\ncolour: its attention row over"
            " the 196 patches,\neach map scaled to its maximum",
        ),
        va="top",
        fontsize=8,
        color=c["fg"],
        transform=note.transAxes,
    )
    if phone:
        ax = fig.add_subplot(fig.add_gridspec(1, 1, left=0.3, right=0.95, top=0.2, bottom=0.07)[0])
    else:
        ax = fig.add_subplot(g[1, 2:4])
    ys = np.arange(len(HEAD_NAMES))[::-1]
    ax.barh(ys, d["dist"], color=[c["blue"], c["purple"], c["green"], c["orange"]], height=0.6)
    for y, x in zip(ys, d["dist"], strict=True):
        ax.text(x + 2, y, f"{x:.0f}", va="center", fontsize=8.5, color=c["fg"])
    ax.set_yticks(ys, labels=[n.split(" (")[0] for n in HEAD_NAMES], fontsize=8.5)
    ax.axvline(d["uniform"], color=c["muted"], ls="--", lw=1)
    ax.text(
        d["uniform"],
        len(HEAD_NAMES) - 0.45,
        f"uniform\nattention: {d['uniform']:.0f}",
        fontsize=8,
        color=c["muted"],
        ha="center",
        va="bottom",
    )
    ax.set_xlim(0, max(d["uniform"], d["dist"].max()) * 1.15)
    ax.set_xlabel(
        plot.pick(
            v, "mean attention distance (pixels, 224-pixel image)", "mean attention distance (px)"
        ),
        fontsize=9,
    )
    return fig
