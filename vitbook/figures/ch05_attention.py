"""Chapter 5, Self-attention: a worked example, four tokens by hand, and why divide by sqrt(Dh).

Every number here is computed with the book's own attention function,
``vitbook.model.scaled_dot_product``, and, for the four-token example, checked against the
model's ``Attention`` module.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from vitbook import plot
from vitbook.engine import figure
from vitbook.model import Attention, scaled_dot_product

# --8<-- [start:worked-inputs]
# The worked example: one query, three keys of size d_k = 4, three values of size 2.
WORKED_Q = [[1.0, 0.0, 1.0, 0.0]]  # (1, d_k)
WORKED_K = [
    [1.0, 0.0, 1.0, 0.0],  # key 1: identical to the query
    [0.0, 1.0, 0.0, 1.0],  # key 2: orthogonal to it
    [1.0, 1.0, 0.0, 0.0],  # key 3: half-way
]
WORKED_V = [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0]]  # (3, d_v)
# --8<-- [end:worked-inputs]


def worked_attention(*, scale: bool) -> dict[str, np.ndarray]:
    """The worked example through ``scaled_dot_product``: scores, scaled scores, weights, output."""
    q, k, v = (torch.tensor(x, dtype=torch.float64) for x in (WORKED_Q, WORKED_K, WORKED_V))
    scores = q @ k.T  # (1, 3): the raw dot products
    out, weights = scaled_dot_product(q, k, v, scale=scale)  # (1, 2), (1, 3)
    shown = scores / math.sqrt(q.shape[-1]) if scale else scores
    return {
        "scores": scores.numpy(),
        "scaled": shown.numpy(),
        "weights": weights.numpy(),
        "output": out.numpy(),
    }


@figure(chapter=5, id="worked-example", size=(7.2, 4.6), phone_size=10.0)
def worked_example(rec):
    """One query against three keys, with and without the 1/sqrt(d_k) scale."""
    s = worked_attention(scale=True)
    u = worked_attention(scale=False)
    rec.fact("d_k", len(WORKED_Q[0]))
    rec.fact("sqrt_dk", math.sqrt(len(WORKED_Q[0])), "{:g}")
    for j in range(3):
        rec.fact(f"score_{j + 1}", s["scores"][0, j], "{:g}")
        rec.fact(f"scaled_{j + 1}", s["scaled"][0, j], "{:g}")
        rec.fact(f"weight_{j + 1}", s["weights"][0, j], "{:.4f}")
        rec.fact(f"unscaled_weight_{j + 1}", u["weights"][0, j], "{:.4f}")
    for j in range(2):
        rec.fact(f"out_{j + 1}", s["output"][0, j], "{:.3f}")
        rec.fact(f"unscaled_out_{j + 1}", u["output"][0, j], "{:.3f}")
    rec.fact("weight_sum", s["weights"].sum(), "{:.4f}")
    rec.fact("ratio_w1_w3", s["weights"][0, 0] / s["weights"][0, 2], "{:.3f}")
    rec.fact("unscaled_ratio_w1_w3", u["weights"][0, 0] / u["weights"][0, 2], "{:.3f}")
    return {
        "q": np.array(WORKED_Q),
        "k": np.array(WORKED_K),
        "v": np.array(WORKED_V),
        "scaled": s,
        "unscaled": u,
    }


@worked_example.draw
def _(data, v):
    c = plot.colors(v)
    fig = plot.new_figure(v, layout=None)
    phone = plot.is_phone(v)
    outer = fig.add_gridspec(
        3,
        1,
        height_ratios=[1.25, 2.6, 2.6] if phone else [1.25, 1.0, 1.0],
        left=0.23 if phone else 0.1,
        right=0.96,
        top=0.95 if phone else 0.93,
        bottom=0.04 if phone else 0.06,
        hspace=0.5 if phone else 0.95,
    )
    keys = ["key 1", "key 2", "key 3"]
    # Row 1: the inputs.
    top = outer[0].subgridspec(1, 3, width_ratios=[4, 4, 2.8] if phone else [4, 4, 2], wspace=0.5)
    ax = fig.add_subplot(top[0].subgridspec(2, 1, height_ratios=[1, 2])[0])
    plot.heatmap(
        ax,
        data["q"],
        v,
        row_labels=["q"],
        col_labels=list("1234"),
        fmt="{:g}",
        cmap="Greys",
        vmin=-0.5,
        vmax=2,
    )
    ax.set_title(plot.pick(v, "query q (1×4)", "q (1×4)"), fontsize=9)
    ax = fig.add_subplot(top[1])
    plot.heatmap(
        ax,
        data["k"],
        v,
        row_labels=keys,
        col_labels=list("1234"),
        fmt="{:g}",
        cmap="Greys",
        vmin=-0.5,
        vmax=2,
    )
    ax.set_title(plot.pick(v, "keys K (3×4)", "K (3×4)"), fontsize=9)
    ax = fig.add_subplot(top[2])
    plot.heatmap(
        ax,
        data["v"],
        v,
        row_labels=["val. 1", "val. 2", "val. 3"],
        col_labels=["1", "2"],
        fmt="{:g}",
        cmap="Greys",
        vmin=-5,
        vmax=20,
    )
    ax.set_title(plot.pick(v, "values V (3×2)", "V (3×2)"), fontsize=9)

    def path(spec, d, label, scaled):
        if phone:  # the scores side by side, the weights across, the output below
            grid = spec.subgridspec(3, 2, wspace=0.3, hspace=1.0)
            row = [grid[0, 0], grid[0, 1], grid[1, :], grid[2, 0]]
        else:
            row = spec.subgridspec(1, 4, width_ratios=[3, 3, 3, 2], wspace=0.3)
        panels = [("scores q·Kᵀ", d["scores"], "{:g}", "Blues", 0, 3, keys)]
        panels.append(
            ("÷ √d_k  (= ÷ 2)", d["scaled"], "{:g}", "Blues", 0, 3, keys) if scaled else None
        )
        panels += [
            ("softmax → weights", d["weights"], "{:.4f}", "viridis", 0, 1, keys),
            ("output", d["output"], "{:.3f}", "Oranges", 0, 12, ["1", "2"]),
        ]
        for i, p in enumerate(panels):
            ax = fig.add_subplot(row[i])
            if p is None:
                ax.axis("off")
                ax.text(
                    0.5,
                    0.5,
                    "no scaling: scores\ngo straight to\nthe softmax",
                    ha="center",
                    va="center",
                    fontsize=8.5,
                    color=c["muted"],
                    transform=ax.transAxes,
                )
                continue
            title, m, fmt, cmap, lo, hi, cols = p
            plot.heatmap(
                ax,
                m,
                v,
                row_labels=[""],
                col_labels=cols,
                fmt=fmt,
                cmap=cmap,
                vmin=lo,
                vmax=hi,
                fontsize=8.5,
            )
            ax.set_yticks([])
            ax.set_title(title, fontsize=9)
            ax.tick_params(axis="x", labelsize=8)
            if i == 0:
                ax.text(
                    -0.12,
                    0.5,
                    label,
                    transform=ax.transAxes,
                    ha="right",
                    va="center",
                    fontsize=9.5,
                    fontweight="bold",
                    color=c["highlight"],
                )

    path(outer[1], data["scaled"], "scaled", True)
    path(outer[2], data["unscaled"], "not\nscaled", False)
    return fig


# --8<-- [start:four-tokens]
# Four tokens (CLS and three patches), D = 4, one head of size Dh = 2.
X4 = [
    [1.0, 0.0, 0.0, 1.0],  # CLS (a learned vector in a real ViT)
    [2.0, 0.0, 1.0, 0.0],  # patch 1
    [0.0, 1.0, 2.0, 0.0],  # patch 2
    [1.0, 2.0, 0.0, 1.0],  # patch 3
]
W_Q4 = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]  # (D, Dh): q = [x1 + x3, x2 + x4]
W_K4 = [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]  # (D, Dh): k = [x1 + x4, x2 + x3]
W_V4 = [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [1.0, 1.0]]  # (D, Dh): v = [x1 + x4, x2 + x4]


def four_tokens_attention() -> dict[str, torch.Tensor]:
    """Q, K, V = X W, then S = Q K^T / sqrt(Dh), A = softmax(S) row by row, O = A V."""
    x, wq, wk, wv = (torch.tensor(m, dtype=torch.float64) for m in (X4, W_Q4, W_K4, W_V4))
    q, k, v = x @ wq, x @ wk, x @ wv  # each (4, Dh): Eq. 5
    s = q @ k.T / math.sqrt(q.shape[-1])  # (4, 4): scaled scores
    out, a = scaled_dot_product(q, k, v)  # (4, Dh), (4, 4): Eq. 6-7
    return {"x": x, "q": q, "k": k, "v": v, "s": s, "a": a, "o": out}
    # --8<-- [end:four-tokens]


def four_tokens_through_module(d: dict[str, torch.Tensor]) -> torch.Tensor:
    """The same head inside the model's ``Attention`` (D = 4, two heads of 2; head 0 is ours).

    Returns the module's attention weights of head 0, (4, 4).
    """
    attn = Attention(dim=4, heads=2, qkv_bias=False, fused=False).double()
    w = torch.zeros(3 * 4, 4, dtype=torch.float64)  # rows: [q heads 0,1 | k heads | v heads]
    w[0:2] = torch.tensor(W_Q4, dtype=torch.float64).T
    w[4:6] = torch.tensor(W_K4, dtype=torch.float64).T
    w[8:10] = torch.tensor(W_V4, dtype=torch.float64).T
    with torch.no_grad():
        attn.qkv.weight.copy_(w)
        _, weights = attn(d["x"][None], return_weights=True)  # (1, heads, 4, 4)
    return weights[0, 0]


@figure(chapter=5, id="four-tokens", size=(7.2, 5.0), phone_size=10.4)
def four_tokens(rec):
    """S, A and O for four tokens, with Q, K and V, and the model's module as a check."""
    d = four_tokens_attention()
    module_a = four_tokens_through_module(d)
    rec.fact("four_max_diff_module", float((module_a - d["a"]).abs().max()), "{:.1e}")
    rec.fact("four_row_sum_max_dev", float((d["a"].sum(-1) - 1).abs().max()), "{:.1e}")
    rec.fact("four_s_cls_p3", d["s"][0, 3], "{:.2f}")
    rec.fact("four_a_cls_p3", d["a"][0, 3], "{:.3f}")
    rec.fact("four_a_cls_cls", d["a"][0, 0], "{:.3f}")
    rec.fact("four_a_p3_p2", d["a"][3, 2], "{:.3f}")
    rec.fact("four_a_p1_p2", d["a"][1, 2], "{:.3f}")
    rec.fact("four_a_p2_p1", d["a"][2, 1], "{:.3f}")
    rec.fact("four_o_cls_1", d["o"][0, 0], "{:.2f}")
    rec.fact("four_o_cls_2", d["o"][0, 1], "{:.2f}")
    # The trap: softmax over the wrong axis makes columns, not rows, sum to one.
    wrong = d["s"].softmax(dim=0)
    rec.fact("wrong_axis_row_sum_min", wrong.sum(-1).min(), "{:.3f}")
    rec.fact("wrong_axis_row_sum_max", wrong.sum(-1).max(), "{:.3f}")
    return {k: t.numpy() for k, t in d.items()}


@four_tokens.draw
def _(d, v):
    fig = plot.new_figure(v, layout=None)
    phone = plot.is_phone(v)
    outer = fig.add_gridspec(
        2,
        1,
        height_ratios=[1, 1.9] if phone else [1, 1.15],
        left=0.13 if phone else 0.09,
        right=0.97 if phone else 0.99,
        top=0.95 if phone else 0.93,
        bottom=0.04 if phone else 0.06,
        hspace=0.3 if phone else 0.5,
    )
    toks = ["CLS", "p1", "p2", "p3"]
    if phone:  # X above Q, K, V; then S and A side by side, O below
        g = outer[0].subgridspec(2, 3, wspace=0.5, hspace=0.6)
        top = [g[0, :2], g[1, 0], g[1, 1], g[1, 2]]
        g = outer[1].subgridspec(3, 2, wspace=0.4, hspace=0.75)
        bottom = [g[0, :], g[1, :], g[2, 0]]
    else:
        top = outer[0].subgridspec(1, 4, width_ratios=[4, 2, 2, 2], wspace=0.45)
        bottom = outer[1].subgridspec(1, 3, width_ratios=[4, 4, 2], wspace=0.3)
    for i, (name, key, cols) in enumerate(
        (
            ("tokens X (4×D)", "x", list("1234")),
            ("Q = X W_Q", "q", ["1", "2"]),
            ("K = X W_K", "k", ["1", "2"]),
            ("V = X W_V", "v", ["1", "2"]),
        )
    ):
        ax = fig.add_subplot(top[i])
        plot.heatmap(
            ax,
            d[key],
            v,
            row_labels=toks if i == 0 or (phone and i == 1) else [""] * 4,
            col_labels=cols,
            fmt="{:g}",
            cmap="Greys",
            vmin=-0.5,
            vmax=3,
        )
        ax.set_title(name, fontsize=9)
    for i, (name, key, fmt, cmap, lo, hi, cols) in enumerate(
        (
            (
                plot.pick(
                    v, "S = Q Kᵀ / √Dh  (query ↓, key →)", "S = Q Kᵀ / √Dh\n(query ↓, key →)"
                ),
                "s",
                "{:.2f}",
                "Blues",
                0,
                7,
                toks,
            ),
            (
                plot.pick(v, "A = softmax(S), each row", "A = softmax(S),\neach row"),
                "a",
                "{:.3f}",
                "viridis",
                0,
                1,
                toks,
            ),
            ("O = A V", "o", "{:.2f}", "Oranges", 0, 3, ["1", "2"]),
        )
    ):
        ax = fig.add_subplot(bottom[i])
        plot.heatmap(
            ax,
            d[key],
            v,
            row_labels=toks if i == 0 or (phone and i == 2) else [""] * 4,
            col_labels=cols,
            fmt=fmt,
            cmap=cmap,
            vmin=lo,
            vmax=hi,
            fontsize=9,
        )
        ax.set_title(name, fontsize=9)
    return fig


# --8<-- [start:why-scale]
def scale_experiment(
    head_dims=(4, 8, 16, 32, 64, 128, 256, 512),
    n_keys: int = 64,
    trials: int = 300,
    seed: int = 0,
    flat: float = 0.01,
) -> dict[str, dict[str, list[float]]]:
    """Random query against ``n_keys`` random keys (entries N(0, 1)), with and without scaling.

    For each head size: the spread (std over keys) of the scores and the largest softmax
    weight, averaged over ``trials`` draws; the size of the softmax gradient, the Frobenius
    norm of its Jacobian d weights / d scores = diag(a) - a aᵀ, as the median over the draws
    (the typical draw), and the share of draws where that norm is below ``flat``.
    """
    g = torch.Generator().manual_seed(seed)
    out = {"scaled": {}, "unscaled": {}}
    for scale, name in ((True, "scaled"), (False, "unscaled")):
        rows = {"std": [], "max_weight": [], "grad_norm": [], "flat_share": []}
        for dh in head_dims:
            q = torch.randn(trials, 1, dh, generator=g, dtype=torch.float64)
            k = torch.randn(trials, n_keys, dh, generator=g, dtype=torch.float64)
            v = torch.zeros(trials, n_keys, 1, dtype=torch.float64)  # values do not matter here
            scores = (q @ k.transpose(-2, -1))[:, 0]  # (trials, n_keys)
            if scale:
                scores = scores / math.sqrt(dh)
            _, a = scaled_dot_product(q, k, v, scale=scale)  # (trials, 1, n_keys)
            a = a[:, 0]
            jac = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (trials, n, n)
            rows["std"].append(scores.std(dim=-1).mean().item())
            rows["max_weight"].append(a.max(dim=-1).values.mean().item())
            norms = jac.flatten(1).norm(dim=-1)  # (trials,)
            rows["grad_norm"].append(norms.median().item())
            rows["flat_share"].append((norms < flat).double().mean().item())
        out[name] = rows
    out["head_dims"] = list(head_dims)
    out["n_keys"] = n_keys
    out["trials"] = trials
    out["flat"] = flat
    return out
    # --8<-- [end:why-scale]


@figure(chapter=5, id="why-scale", size=(7.2, 3.0), phone_size=7.6)
def why_scale(rec):
    """Score spread, peak weight and softmax gradient against head size, scaled and not."""
    r = scale_experiment()
    dims = r["head_dims"]
    i64, lo, hi = dims.index(64), 0, len(dims) - 1
    rec.fact("scale_n_keys", r["n_keys"])
    rec.fact("scale_trials", r["trials"])
    rec.fact("scale_dh_min", dims[lo])
    rec.fact("scale_dh_max", dims[hi])
    rec.fact("uniform_weight", 1 / r["n_keys"], "{:.4f}")
    for name, tag in (("scaled", "s"), ("unscaled", "u")):
        for where, i in (("min", lo), ("64", i64), ("max", hi)):
            rec.fact(f"std_{tag}_{where}", r[name]["std"][i], "{:.2f}")
            rec.fact(f"maxw_{tag}_{where}", r[name]["max_weight"][i], "{:.3f}")
            rec.fact(f"grad_{tag}_{where}", r[name]["grad_norm"][i], "{:.2g}")
    rec.fact(
        "grad_ratio_max", r["scaled"]["grad_norm"][hi] / r["unscaled"]["grad_norm"][hi], "{:.0f}"
    )
    rec.fact("flat_threshold", r["flat"], "{:g}")
    rec.fact("flat_u_max", r["unscaled"]["flat_share"][hi], "{:.0%}")
    rec.fact("flat_u_64", r["unscaled"]["flat_share"][i64], "{:.0%}")
    rec.fact("flat_s_max", r["scaled"]["flat_share"][hi], "{:.0%}")
    rec.fact("sqrt_dh_max", math.sqrt(dims[hi]), "{:.1f}")
    # where the unscaled gradient collapses: the first head size whose median gradient is
    # below half the scaled one (read from the data, not assumed)
    gu, gs = r["unscaled"]["grad_norm"], r["scaled"]["grad_norm"]
    c = next(i for i in range(len(dims)) if gu[i] < 0.5 * gs[i])
    rec.fact("grad_collapse_dh", dims[c])
    rec.fact("grad_u_collapse", gu[c], "{:.2g}")
    return r


@why_scale.draw
def _(r, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 3, phone_cols=1)
    dims = r["head_dims"]
    panels = (
        ("std", "score spread\n(std over keys)", "log"),
        ("max_weight", "largest weight", "linear"),
        ("grad_norm", "softmax gradient, median\n‖∂a/∂s‖ (Frobenius)", "log"),
    )
    for ax, (key, ylabel, yscale) in zip(axes, panels, strict=True):
        for name, col, label in (
            ("scaled", c["blue"], "÷ √Dh"),
            ("unscaled", c["orange"], "unscaled"),
        ):
            ys = r[name][key]
            ax.plot(dims, ys, "o-", color=col, ms=3.5, lw=1.6)
            at = -1 if name == "scaled" else 3  # unscaled: above-left of its 4th point
            ax.annotate(
                label,
                (dims[at], ys[at]),
                xytext=(-2, 7) if at == -1 else (-5, 6),
                textcoords="offset points",
                ha="right",
                fontsize=8.5,
                color=col,
                va="bottom" if at == 3 else "center",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale(yscale)
        ax.set_xticks(dims[::2], labels=[str(d) for d in dims[::2]])
        ax.minorticks_off()
        ax.set_xlabel("head size Dh")
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(True, axis="y", which="major")
    axes[0].set_yticks([1, 2, 5, 10, 20], labels=["1", "2", "5", "10", "20"])
    axes[1].set_ylim(0, 1.05)
    axes[1].axhline(1 / r["n_keys"], color=c["muted"], lw=0.8, ls="--")
    axes[1].text(dims[0], 1 / r["n_keys"] + 0.03, "uniform 1/64", fontsize=8, color=c["muted"])
    return fig
