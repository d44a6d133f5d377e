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
from vitbook.engine import facts, figure
from vitbook.model import Attention, preset, scaled_dot_product

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
    # the softmax step by step: each scaled (and unscaled) score's exponential, and their sum
    for tag, r in (("", s), ("unscaled_", u)):
        e = np.exp(r["scaled"][0])
        for j in range(3):
            rec.fact(f"{tag}exp_{j + 1}", e[j], "{:.3f}")
        rec.fact(f"{tag}exp_sum", e.sum(), "{:.3f}")
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
) -> dict:
    """Random query against ``n_keys`` random keys (entries N(0, 1)), with and without scaling.

    For each head size: the spread (std over keys) of the scores and the largest softmax
    weight, averaged over ``trials`` draws; and, for every draw, two gradient sizes (Frobenius
    norms): the softmax's own Jacobian d weights / d scores = diag(a) - a aᵀ, and the gradient
    that reaches the query, d weights / d q = (diag(a) - a aᵀ) K / c, where c = sqrt(Dh) when
    scaled and 1 when not (the scores are K q / c).
    """
    g = torch.Generator().manual_seed(seed)
    out = {}
    for scale, name in ((True, "scaled"), (False, "unscaled")):
        rows = {"std": [], "max_weight": [], "grad": [], "q_grad": []}
        for dh in head_dims:
            q = torch.randn(trials, 1, dh, generator=g, dtype=torch.float64)
            k = torch.randn(trials, n_keys, dh, generator=g, dtype=torch.float64)
            v = torch.zeros(trials, n_keys, 1, dtype=torch.float64)  # values do not matter here
            c = math.sqrt(dh) if scale else 1.0
            scores = (q @ k.transpose(-2, -1))[:, 0] / c  # (trials, n_keys)
            _, a = scaled_dot_product(q, k, v, scale=scale)  # (trials, 1, n_keys)
            a = a[:, 0]
            jac = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]  # (trials, n, n)
            q_jac = jac @ k / c  # (trials, n, dh): d weights / d query, since d s / d q = K / c
            rows["std"].append(scores.std(dim=-1).mean().item())
            rows["max_weight"].append(a.max(dim=-1).values.mean().item())
            rows["grad"].append(jac.flatten(1).norm(dim=-1).numpy())  # (trials,)
            rows["q_grad"].append(q_jac.flatten(1).norm(dim=-1).numpy())  # (trials,)
        out[name] = {key: np.array(val) for key, val in rows.items()}  # (dims,) or (dims, trials)
    out["head_dims"] = list(head_dims)
    out["n_keys"] = n_keys
    out["trials"] = trials
    return out
    # --8<-- [end:why-scale]


#: The scale experiment is repeated for seeds 0 .. SCALE_SEEDS - 1 (none picked): a median
#: over 300 draws is stable where the draws agree, not where half of them are saturated.
SCALE_SEEDS = 10
#: A draw whose softmax Jacobian has a norm below this is "flat": a saturated softmax.
FLAT = 0.01
#: The experiment's second sequence length: ViT-B/16's tokens at its standard input (197 at
#: 224 pixels), since the gradients depend on how many keys share the softmax (the figure: 64).
LONG_KEYS = preset("vit-b/16").seq_len


def scale_over_seeds(seeds: int = SCALE_SEEDS, **kwargs) -> dict:
    """``scale_experiment`` for seeds 0 .. seeds - 1, stacked: (seeds, head sizes) arrays for
    the averages, (seeds, head sizes, trials) for the per-draw gradients."""
    runs = [scale_experiment(seed=s, **kwargs) for s in range(seeds)]
    out = {name: {key: np.stack([r[name][key] for r in runs]) for key in runs[0][name]}
           for name in ("scaled", "unscaled")}  # fmt: skip
    for key in ("head_dims", "n_keys", "trials"):
        out[key] = runs[0][key]
    out["seeds"] = seeds
    return out


def span(values) -> tuple[float, float, float]:
    """(median, lowest, highest) of per-seed values."""
    return float(np.median(values)), float(np.min(values)), float(np.max(values))


def pooled(draws: np.ndarray, qs=(0.1, 0.5, 0.9)) -> np.ndarray:
    """Quantiles per head size of (seeds, head sizes, trials) draws, all seeds pooled:
    a (len(qs), head sizes) array."""
    flat = draws.transpose(1, 0, 2).reshape(draws.shape[1], -1)
    return np.quantile(flat, qs, axis=1)


@figure(chapter=5, id="why-scale", size=(7.2, 5.2), phone_size=11.0)
def why_scale(rec):
    """Score spread, peak weight, the softmax gradient and the gradient reaching the query
    against head size, scaled and not, over seeds 0-9 of ``scale_experiment``."""
    r = scale_over_seeds()
    dims = r["head_dims"]
    i64, lo, hi = dims.index(64), 0, len(dims) - 1
    s, u = r["scaled"], r["unscaled"]
    med = {name: {key: np.median(r[name][key], axis=-1) for key in ("grad", "q_grad")}
           for name in ("scaled", "unscaled")}  # per seed: (seeds, head sizes)  # fmt: skip
    rec.fact("scale_n_keys", r["n_keys"])
    rec.fact("scale_trials", r["trials"])
    rec.fact("scale_seeds", r["seeds"])
    rec.fact("scale_dh_min", dims[lo])
    rec.fact("scale_dh_max", dims[hi])
    rec.fact("uniform_weight", 1 / r["n_keys"], "{:.4f}")
    for name, tag in (("scaled", "s"), ("unscaled", "u")):
        for where, i in (("min", lo), ("64", i64), ("max", hi)):
            rec.fact(f"std_{tag}_{where}", r[name]["std"][:, i].mean(), "{:.2f}")
            rec.fact(f"maxw_{tag}_{where}", r[name]["max_weight"][:, i].mean(), "{:.3f}")
            rec.fact(f"grad_{tag}_{where}", np.median(med[name]["grad"][:, i]), "{:.2g}")
    # the ratio of typical softmax gradients at the largest head, seed by seed: not one number
    m, low, high = span(med["scaled"]["grad"][:, hi] / med["unscaled"]["grad"][:, hi])
    rec.fact("grad_ratio_max", m, "{:.0f}")
    rec.fact("grad_ratio_max_lo", low, "{:.0f}")
    rec.fact("grad_ratio_max_hi", high, "{:.0f}")
    rec.fact("flat_threshold", FLAT, "{:g}")
    for where, i in (("64", i64), ("max", hi)):
        m, low, high = span((u["grad"][:, i] < FLAT).mean(axis=-1))
        rec.fact(f"flat_u_{where}", m, "{:.0%}")
        rec.fact(f"flat_u_{where}_lo", low, "{:.0%}")
        rec.fact(f"flat_u_{where}_hi", high, "{:.0%}")
    rec.fact("flat_s_max", (s["grad"] < FLAT).mean(axis=-1).max(), "{:.0%}")
    rec.fact("sqrt_dh_max", math.sqrt(dims[hi]), "{:.1f}")
    # where the unscaled softmax gradient collapses: the first head size whose median is below
    # half the scaled one, seed by seed (read from the data, not assumed)
    first = [
        dims[next(i for i, (gu, gs) in enumerate(zip(mu, ms, strict=True)) if gu < 0.5 * gs)]
        for mu, ms in zip(med["unscaled"]["grad"], med["scaled"]["grad"], strict=True)
    ]
    collapse = max(sorted(set(first)), key=first.count)
    rec.fact("grad_collapse_dh", collapse)
    rec.fact("grad_collapse_seeds", first.count(collapse))
    rec.fact("grad_collapse_lo", min(first))
    rec.fact("grad_collapse_hi", max(first))
    rec.fact("grad_u_collapse", np.median(med["unscaled"]["grad"][:, dims.index(collapse)]),
             "{:.2g}")  # fmt: skip
    # what reaches the query: the Jacobian times K / c, and K enters sqrt(Dh) times larger
    # unscaled. Its typical size, and how widely it varies from draw to draw (10th-90th pct)
    m, low, high = span(med["unscaled"]["q_grad"][:, i64] / med["scaled"]["q_grad"][:, i64])
    rec.fact("qgrad_u_over_s_64", m, "{:.1f}")
    m, low, high = span(med["scaled"]["q_grad"][:, hi] / med["unscaled"]["q_grad"][:, hi])
    rec.fact("qgrad_ratio_max", m, "{:.1f}")
    rec.fact("qgrad_ratio_max_lo", low, "{:.1f}")
    rec.fact("qgrad_ratio_max_hi", high, "{:.1f}")
    q = {name: pooled(r[name]["q_grad"]) for name in ("scaled", "unscaled")}
    g = {name: pooled(r[name]["grad"]) for name in ("scaled", "unscaled")}
    rec.fact("qgrad_s_med", np.median(q["scaled"][1]), "{:.2f}")
    rec.fact("qgrad_s_spread", (q["scaled"][2] / q["scaled"][0]).max(), "{:.1f}")
    for where, i in (("64", i64), ("max", hi)):
        rec.fact(f"qgrad_u_{where}_p10", q["unscaled"][0, i], "{:.2g}")
        rec.fact(f"qgrad_u_{where}_p90", q["unscaled"][2, i], "{:.2g}")
    # the same at ViT-B/16's sequence length: the numbers the text compares across key counts
    for tag, rr in (("k64", r), ("k197", scale_over_seeds(n_keys=LONG_KEYS))):
        _key_count_facts(rec, tag, rr)
    drawn = {"head_dims": dims, "n_keys": r["n_keys"]}
    for name in ("scaled", "unscaled"):  # means over the seeds; quantiles of the pooled draws
        drawn[name] = {
            "std": r[name]["std"].mean(axis=0),
            "max_weight": r[name]["max_weight"].mean(axis=0),
            "grad": g[name],
            "q_grad": q[name],
        }
    return drawn


def _key_count_facts(rec, tag: str, r: dict) -> None:
    """What changes with the number of keys: facts ``<tag>_...`` from ``scale_over_seeds``."""
    dims = r["head_dims"]
    i64, hi = dims.index(64), len(dims) - 1
    med = {name: {key: np.median(r[name][key], axis=-1) for key in ("grad", "q_grad")}
           for name in ("scaled", "unscaled")}  # fmt: skip
    rec.fact(f"{tag}_n_keys", r["n_keys"])
    rec.fact(f"{tag}_maxw_u_64", r["unscaled"]["max_weight"][:, i64].mean(), "{:.2f}")
    for where, i in (("64", i64), ("max", hi)):
        m, low, high = span(med["unscaled"]["q_grad"][:, i] / med["scaled"]["q_grad"][:, i])
        rec.fact(f"{tag}_qgrad_u_over_s_{where}", m, "{:.1f}")
        rec.fact(f"{tag}_qgrad_u_over_s_{where}_lo", low, "{:.1f}")
        rec.fact(f"{tag}_qgrad_u_over_s_{where}_hi", high, "{:.1f}")
        m, low, high = span((r["unscaled"]["grad"][:, i] < FLAT).mean(axis=-1))
        rec.fact(f"{tag}_flat_u_{where}", m, "{:.0%}")
    first = [
        dims[next(i for i, (gu, gs) in enumerate(zip(mu, ms, strict=True)) if gu < 0.5 * gs)]
        for mu, ms in zip(med["unscaled"]["grad"], med["scaled"]["grad"], strict=True)
    ]
    q = {name: pooled(r[name]["q_grad"]) for name in ("scaled", "unscaled")}
    rec.fact(f"{tag}_qgrad_s_spread", (q["scaled"][2] / q["scaled"][0]).max(), "{:.1f}")
    # the unscaled draws' 10th to 90th percentile at the largest head, in orders of magnitude
    rec.fact(f"{tag}_qgrad_u_max_orders", np.log10(q["unscaled"][2, hi] / q["unscaled"][0, hi]),
             "{:.0f}")  # fmt: skip
    rec.fact(f"{tag}_collapse_lo", min(first))
    rec.fact(f"{tag}_collapse_hi", max(first))
    rec.fact(f"{tag}_collapse_counts", ", ".join(
        f"{d} in {first.count(d)}" for d in sorted(set(first))))  # fmt: skip


@why_scale.draw
def draw_why_scale(r, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 2, 2, phone_cols=1)
    dims = r["head_dims"]
    panels = (
        ("std", "score spread\n(std over keys)", "log"),
        ("max_weight", "largest weight", "linear"),
        ("grad", "softmax gradient\n‖∂a/∂s‖", "log"),
        ("q_grad", "gradient reaching\nthe query ‖∂a/∂q‖", "log"),
    )
    for ax, (key, ylabel, yscale) in zip(axes.flat, panels, strict=True):
        for name, col, label in (
            ("scaled", c["blue"], "÷ √Dh"),
            ("unscaled", c["orange"], "unscaled"),
        ):
            ys = r[name][key]
            if ys.ndim == 2:  # draws: the median, and the 10th to 90th percentile as a band
                ax.fill_between(dims, ys[0], ys[2], color=col, alpha=0.2, lw=0)
                ys = ys[1]
            ax.plot(dims, ys, "o-", color=col, ms=3.5, lw=1.6)
            if name == "unscaled":  # above-left of its 4th point
                at, offset, ha, va = 3, (-5, 6), "right", "bottom"
            elif key in ("grad", "q_grad"):  # below its line, where the band leaves room
                at, offset, ha, va = 1, (0, -9), "left", "top"
            else:  # above the end of its line
                at, offset, ha, va = -1, (-2, 7), "right", "center"
            ax.annotate(
                label,
                (dims[at], ys[at]),
                xytext=offset,
                textcoords="offset points",
                ha=ha,
                fontsize=8.5,
                color=col,
                va=va,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale(yscale)
        ax.set_xticks(dims[::2], labels=[str(d) for d in dims[::2]])
        ax.minorticks_off()
        ax.set_xlabel("head size Dh")
        ax.set_ylabel(ylabel, fontsize=9)
        ax.grid(True, axis="y", which="major")
    axes[0, 0].set_yticks([1, 2, 5, 10, 20], labels=["1", "2", "5", "10", "20"])
    axes[0, 1].set_ylim(0, 1.05)
    axes[0, 1].axhline(1 / r["n_keys"], color=c["muted"], lw=0.8, ls="--")
    axes[0, 1].text(dims[0], 1 / r["n_keys"] + 0.03, "uniform 1/64", fontsize=8, color=c["muted"])
    return fig


# --8<-- [start:stable-softmax]
def naive_softmax(s: torch.Tensor) -> torch.Tensor:
    """exp of the raw scores, then normalise: overflows once a score passes log(largest float)."""
    e = s.exp()
    return e / e.sum(dim=-1, keepdim=True)


def stable_softmax(s: torch.Tensor) -> torch.Tensor:
    """Subtract each row's largest score first: every exp is at most 1, and the weights are the
    same, since e^(s - m) / sum e^(s - m) = e^s / sum e^s."""
    e = (s - s.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)
    # --8<-- [end:stable-softmax]


def largest_finite_exp_arg(dtype: torch.dtype) -> float:
    """The largest number x of ``dtype`` whose e^x, rounded to ``dtype``, is still finite.

    Enumerates every float16 (or bfloat16) value; e^x is computed in float64 and rounded once,
    so the answer does not depend on the CPU's exp routine."""
    bits = torch.arange(0, 0x7C00 if dtype == torch.float16 else 0x7F80, dtype=torch.int32)
    xs = bits.to(torch.int16).view(dtype).double()  # every finite non-negative value
    finite = torch.isfinite(xs.exp().to(dtype))
    return xs[finite].max().item()


@facts(chapter=5, id="stable-softmax")
def softmax_overflow(rec):
    """What overflows in float16: the largest score whose exp survives, the share of unscaled
    Dh = 64 draws (the scale experiment's setup) that pass it, and the naive softmax against
    the stable one and PyTorch's on those scores in float16."""
    x16 = largest_finite_exp_arg(torch.float16)
    rec.fact("fp16_max", torch.finfo(torch.float16).max, "{:,.0f}")
    rec.fact("fp16_exp_limit", x16, "{:.2f}")
    rec.fact("fp32_exp_limit", math.log(torch.finfo(torch.float32).max), "{:.1f}")
    g = torch.Generator().manual_seed(0)
    trials, n_keys, dh = 300, 64, 64
    q = torch.randn(trials, 1, dh, generator=g, dtype=torch.float64)
    k = torch.randn(trials, n_keys, dh, generator=g, dtype=torch.float64)
    raw = (q @ k.transpose(-2, -1))[:, 0]  # (trials, n_keys): unscaled scores
    out = {}
    for name, s in (("u", raw), ("s", raw / math.sqrt(dh))):
        half = s.half()
        exact = s.softmax(dim=-1)  # float64 reference
        naive_nan = naive_softmax(half).isnan().any(dim=-1)
        rec.fact(f"fp16_over_{name}", (s.amax(dim=-1) > x16).double().mean().item(), "{:.0%}")
        rec.fact(f"fp16_naive_nan_{name}", naive_nan.double().mean().item(), "{:.0%}")
        stable = stable_softmax(half)
        rec.fact(f"fp16_stable_nan_{name}", int(stable.isnan().any(dim=-1).sum()))
        err = (stable.double() - exact).abs().max().item()
        bound = 1e-2 if name == "u" else 1e-3  # float16 rounding of the scores and weights
        rec.fact(f"fp16_stable_err_{name}", err, "{:.0e}", tol=bound)
        torch_err = (half.softmax(dim=-1).double() - exact).abs().max().item()
        rec.fact(f"fp16_torch_err_{name}", torch_err, "{:.0e}", tol=bound)
        out[name] = {"naive_nan": naive_nan.double().mean().item(), "err": err}
    rec.fact("fp16_dh", dh)
    rec.fact("fp16_trials", trials)
    return out
