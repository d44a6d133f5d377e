"""Chapter 8, The whole model: the ViT family's sizes, a shape trace, where parameters and
compute go, and what resolution costs (counted, and measured on the CPU)."""

from __future__ import annotations

import re
import statistics
import time

import numpy as np
import torch

from vitbook import plot
from vitbook.calc import (
    activation_floats,
    macs,
    param_breakdown,
    shape_trace,
    token_pairs,
    token_pairs_ratio,
)
from vitbook.engine import facts, figure
from vitbook.model import VisionTransformer, ViTConfig, preset
from vitbook.quoted import quote

#: The family of Table 1 (plus DeiT's Ti and S), and the /32 models the text compares with.
FAMILY = ("vit-ti/16", "vit-s/16", "vit-b/16", "vit-l/16", "vit-h/14")
EXTRA = ("vit-b/32", "vit-l/32")
B16 = "vit-b/16"
#: Resolutions of the latency measurement (all divisible by 16), and its model.
LATENCY_MODEL = "vit-ti/16"
LATENCY_SIZES = (224, 288, 320, 384, 448, 512)
LATENCY_WARMUP, LATENCY_ROUNDS = 2, 9
#: Published numbers the text compares with (not computed here): Table 1 of the paper gives
#: ViT-Large 307M parameters; timm lists ViT-B/16 at 224 as about 17.6 GMACs with the attention
#: matmuls and 16.9 without.
PAPER_LARGE_PARAMS_M = 307
TIMM_B16_GMACS = {"with": 17.6, "without": 16.9}


def slug(name: str) -> str:
    """``"vit-b/16"`` -> ``"b16"``: the prefix of a preset's facts."""
    return name.removeprefix("vit-").replace("/", "")


@facts(chapter=8, id="variants")
def variants(rec):
    """Layers, width, MLP width, heads, exact parameters and compute of each variant at 224."""
    rows = {}
    for name in FAMILY + EXTRA:
        cfg = preset(name)
        p = param_breakdown(cfg)
        m_with, m_without = macs(cfg)["total"], macs(cfg, attn_matmuls=False)["total"]
        s = slug(name)
        rec.fact(f"{s}_layers", cfg.depth)
        rec.fact(f"{s}_dim", cfg.dim)
        rec.fact(f"{s}_mlp", cfg.mlp_dim)
        rec.fact(f"{s}_heads", cfg.heads)
        rec.fact(f"{s}_head_dim", cfg.head_dim)
        rec.fact(f"{s}_tokens", cfg.seq_len)
        rec.fact(f"{s}_params", p["total"])
        rec.fact(f"{s}_params_m", p["total"] / 1e6, "{:.1f}M")
        rec.fact(f"{s}_gmacs", m_with / 1e9, "{:.2f}")
        rec.fact(f"{s}_gmacs_no_attn", m_without / 1e9, "{:.2f}")
        rows[name] = {"cfg": cfg, "params": p["total"], "macs": m_with}
    quote(rec, "paper_large_params_m", PAPER_LARGE_PARAMS_M, "{}M")
    for s in ("l16", "l32"):
        rec.fact(f"{s}_matches_paper", round(rows[f"vit-{s[0]}/{s[1:]}"]["params"] / 1e6)
                 == PAPER_LARGE_PARAMS_M)  # fmt: skip
    h14 = param_breakdown(preset("vit-h/14"))
    rec.fact("h14_params_no_head", h14["total"] - h14["head"])
    rec.fact("l32_minus_l16", rows["vit-l/32"]["params"] - rows["vit-l/16"]["params"])
    return {k: {"params": v["params"], "macs": v["macs"]} for k, v in rows.items()}


@facts(chapter=8, id="shape-trace")
def b16_shape_trace(rec):
    """The calculator's shape trace for ViT-B/16, checked against the real model's tensors."""
    cfg = preset(B16)
    trace = shape_trace(cfg)
    with torch.device("meta"):  # shapes only: no memory, no arithmetic
        model = VisionTransformer(cfg=cfg).eval()
        out = model.forward_intermediates(torch.zeros(1, cfg.in_chans, *cfg.image_hw))
    real = {
        "patches": out["patches"],
        "with_cls": out["with_cls"],
        "with_pos": out["with_pos"],
        "blocks.i.attn.weights": out["attn"][0],
        "blocks.i": out["blocks"][-1],
        "encoded": out["encoded"],
        "pooled": out["pooled"],
        "logits": out["logits"],
    }
    checked = 0
    for stage, shape in trace:
        if stage in real:
            if tuple(real[stage].shape) != shape:
                raise AssertionError(
                    f"{stage}: calculator {shape}, model {tuple(real[stage].shape)}"
                )
            checked += 1
        rec.fact(
            "shape_" + re.sub(r"[^a-z0-9]+", "_", stage).strip("_"),
            list(shape),
            text="(" + ", ".join(str(n) for n in shape) + ")",
        )
    rec.fact("trace_checked", checked)
    rec.fact("trace_stages", len(trace))
    return trace


@facts(chapter=8, id="b16-equations")
def b16_equations(rec):
    """Eq. 8.1 and 8.3 with ViT-B/16's numbers put in, term by term, checked against
    ``param_breakdown`` and ``macs`` (which count the same things module by module)."""
    cfg = preset(B16)
    P, C, D, L, K = cfg.patch_size, cfg.in_chans, cfg.dim, cfg.depth, cfg.num_classes
    N, T = cfg.num_patches, cfg.seq_len
    params = {
        "pe": (P * P * C + 1) * D,
        "cls": D,
        "pos": (N + 1) * D,
        "blocks": L * (12 * D * D + 13 * D),
        "ln": 2 * D,
        "head": (D + 1) * K,
    }
    mac = {
        "pe": N * P * P * C * D,
        "lin": 12 * T * D * D,  # one block, the parts linear in T
        "quad": 2 * T * T * D,  # one block, the attention matmuls
        "head": D * K,
    }
    mac["blocks"] = L * (mac["lin"] + mac["quad"])
    assert sum(params.values()) == param_breakdown(cfg)["total"]
    assert mac["pe"] + mac["blocks"] + mac["head"] == macs(cfg)["total"]
    for key, value in {"p": P, "c": C, "n": N, "k": K}.items():
        rec.fact(f"eq_{key}", value)
    for key, value in params.items():
        rec.fact(f"eq_params_{key}", value)
    rec.fact("eq_params_total", sum(params.values()))
    for key, value in mac.items():
        rec.fact(f"eq_macs_{key}", value)
    rec.fact("eq_macs_total", mac["pe"] + mac["blocks"] + mac["head"])
    rec.fact("eq_macs_quad_share", mac["quad"] / (mac["lin"] + mac["quad"]), "{:.1%}")
    return {"params": params, "macs": mac}


COMPONENTS = {  # label: keys of param_breakdown summed
    "patch embedding": ("patch_embed",),
    "class token + positions": ("cls_token", "pos_embed"),
    "attention (qkv, proj)": ("attn_all",),
    "MLP (fc1, fc2)": ("mlp_all",),
    "LayerNorms": ("norms_all", "norm"),
    "head": ("head",),
}
MAC_PARTS = {  # label: keys of macs summed
    "patch embedding": ("patch_embed",),
    "qkv projection": ("qkv",),
    "Q Kᵀ and A V": ("attn_qk", "attn_av"),
    "output projection": ("proj",),
    "MLP (fc1, fc2)": ("mlp",),
    "head": ("head",),
}


@figure(chapter=8, id="params-and-macs", size=(7.2, 4.2), phone_size=5.6)
def params_and_macs(rec):
    """ViT-B/16 at 224: parameters and multiply-accumulates by component (vitbook.calc)."""
    cfg = preset(B16)
    p, m = param_breakdown(cfg), macs(cfg)
    params = {k: sum(p[x] for x in keys) for k, keys in COMPONENTS.items()}
    mac = {k: sum(m[x] for x in keys) for k, keys in MAC_PARTS.items()}
    assert sum(params.values()) == p["total"] and sum(mac.values()) == m["total"]
    no_attn = macs(cfg, attn_matmuls=False)["total"]
    rec.fact("b16_mlp_param_share", params["MLP (fc1, fc2)"] / p["total"], "{:.1%}")
    rec.fact("b16_attn_param_share", params["attention (qkv, proj)"] / p["total"], "{:.1%}")
    rec.fact(
        "b16_embed_param_share",
        (params["patch embedding"] + params["class token + positions"]) / p["total"],
        "{:.1%}",
    )
    rec.fact("b16_mlp_mac_share", mac["MLP (fc1, fc2)"] / m["total"], "{:.1%}")
    rec.fact("b16_matmul_mac_share", mac["Q Kᵀ and A V"] / m["total"], "{:.1%}")
    rec.fact("b16_matmul_gmacs", mac["Q Kᵀ and A V"] / 1e9, "{:.2f}")
    rec.fact("b16_gmacs_total", m["total"] / 1e9, "{:.2f}")
    rec.fact("b16_gmacs_without", no_attn / 1e9, "{:.2f}")
    rec.fact("b16_gflops_total", 2 * m["total"] / 1e9, "{:.1f}")
    rec.fact("b16_gflops_without", 2 * no_attn / 1e9, "{:.1f}")
    rec.fact("b16_macs_exact", m["total"])
    for key, published in TIMM_B16_GMACS.items():
        rec.fact(f"timm_gmacs_{key}", published, "{:.1f}")
        rec.fact(f"timm_gflops_{key}", 2 * published, "{:.1f}")
    rec.fact("matches_timm", round(m["total"] / 1e9, 1) == TIMM_B16_GMACS["with"]
             and abs(no_attn / 1e9 - TIMM_B16_GMACS["without"]) < 0.06)  # fmt: skip
    return {"params": params, "macs": mac}


def _amount(val: float, unit: float, big: str, small: str) -> str:
    """``12.34 M`` style, dropping to the unit a thousand times smaller for small values."""
    if val >= unit / 100:
        return f"{val / unit:,.2f} {big}"
    return f"{val / unit * 1e3:,.2f} {small}"


def _hbars(ax, values: dict[str, int], unit: float, big: str, small: str, c, colours) -> None:
    names = list(values)[::-1]
    vals = [values[k] for k in names]
    total = sum(vals)
    ax.barh(range(len(names)), vals, color=[colours[k] for k in names], height=0.65)
    ax.set_yticks(range(len(names)), labels=names)
    for i, val in enumerate(vals):
        pct = f"{val / total:.1%}" if val / total >= 0.001 else "<0.1%"
        label = f"{_amount(val, unit, big, small)}  ({pct})"
        ax.text(val + total * 0.01, i, label, va="center", fontsize=8.5, color=c["fg"])
    ax.set_xlim(0, max(vals) * 1.55)
    fmt = plot.matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / unit:g}")
    ax.xaxis.set_major_formatter(fmt)
    ax.tick_params(axis="y", length=0)


@params_and_macs.draw
def _(d, v):
    c = plot.colors(v)
    fig, (ax, bx) = plot.subplots(v, 2, 1, height_ratios=[1, 1])
    col = {
        "patch embedding": c["green"],
        "class token + positions": c["green"],
        "attention (qkv, proj)": c["blue"],
        "MLP (fc1, fc2)": c["orange"],
        "LayerNorms": c["purple"],
        "head": c["muted"],
        "qkv projection": c["blue"],
        "Q Kᵀ and A V": c["purple"],
        "output projection": c["blue"],
    }
    _hbars(ax, d["params"], 1e6, "M", "k", c, col)
    ax.set_xlabel("parameters (millions)")
    ax.set_title("ViT-B/16: parameters", fontsize=10)
    _hbars(bx, d["macs"], 1e9, "G", "M", c, col)
    bx.set_xlabel(
        plot.pick(
            v,
            "multiply-accumulates per 224×224 image (billions)",
            "MACs per 224×224 image (billions)",
        )
    )
    bx.set_title(
        plot.pick(
            v, "ViT-B/16: compute (MACs, attention matmuls counted)", "ViT-B/16: compute (MACs)"
        ),
        fontsize=10,
    )
    return fig


@facts(chapter=8, id="resolution-ratios")
def resolution_ratios(rec):
    """Token pairs and MACs of ViT-B/16 at 384 and 512 pixels, relative to 224."""
    cfg = preset(B16)
    base = macs(cfg)["total"]
    rec.fact("size_224", cfg.image_hw[0])
    rec.fact("size_384", 384)
    rec.fact("size_512", 512)
    rec.fact("classes", cfg.num_classes)
    rec.fact("pairs_224", token_pairs(cfg))
    for size in (384, 512):
        big = preset(B16, image_size=size)
        rec.fact(f"tokens_{size}", big.seq_len)
        rec.fact(f"pairs_{size}", token_pairs(big))
        fmt = "{:.2f}" if size == 384 else "{:.1f}"
        rec.fact(f"pairs_ratio_{size}", token_pairs_ratio(cfg, size), fmt)
        rec.fact(f"tokens_ratio_{size}", big.seq_len / cfg.seq_len, "{:.2f}")
        rec.fact(f"macs_ratio_{size}", macs(big)["total"] / base, "{:.2f}")
        rec.fact(f"gmacs_{size}", macs(big)["total"] / 1e9, "{:.1f}")
    # Why a narrow model's cost grows faster with resolution: by Eq. 8.2 a block costs
    # 12 T D^2 (1 + T / (6 D)); the quadratic part weighs T / (6 D) against the linear one.
    ti = preset(LATENCY_MODEL)
    ti_384 = preset(LATENCY_MODEL, image_size=384)
    rec.fact("ti16_macs_ratio_384", macs(ti_384)["total"] / macs(ti)["total"], "{:.2f}")
    for name, c, big in (("b16", cfg, preset(B16, image_size=384)), ("ti16", ti, ti_384)):
        rec.fact(f"{name}_quad_weight_224", c.seq_len / (6 * c.dim), "{:.2f}")
        rec.fact(f"{name}_quad_weight_384", big.seq_len / (6 * big.dim), "{:.2f}")
    return {"base": base}


# --8<-- [start:latency]
def median_latencies(
    models: dict[int, torch.nn.Module], *, warmup: int, rounds: int, batch: int = 1
) -> dict[int, float]:
    """Median seconds per forward pass of a batch of ``batch`` images, for each image size.

    The sizes take turns within every round, so a burst of load from another process slows
    all of them alike instead of spoiling one size's measurements.
    """
    inputs = {size: torch.randn(batch, 3, size, size) for size in models}  # (B, C, H, W)
    times: dict[int, list[float]] = {size: [] for size in models}
    with torch.inference_mode():
        for _ in range(warmup):
            for size, model in models.items():
                model(inputs[size])
        for _ in range(rounds):
            for size, model in models.items():
                start = time.perf_counter()
                model(inputs[size])
                times[size].append(time.perf_counter() - start)
    return {size: statistics.median(t) for size, t in times.items()}
    # --8<-- [end:latency]


@figure(chapter=8, id="latency", size=(7.2, 3.4), deterministic=False, phone_size=4.4)
def latency(rec):
    """ViT-Ti/16 on this machine's CPU at several resolutions, batch 1, against two predictions
    made from the 224-pixel time: scaled by the MAC count, and scaled by the token pairs."""
    start = time.perf_counter()
    cfgs = {size: preset(LATENCY_MODEL, image_size=size) for size in LATENCY_SIZES}
    torch.manual_seed(0)
    models = {size: VisionTransformer(cfg=cfg).eval() for size, cfg in cfgs.items()}
    medians = median_latencies(models, warmup=LATENCY_WARMUP, rounds=LATENCY_ROUNDS)
    rows = [
        {
            "size": size,
            "seconds": medians[size],
            "macs": macs(cfg)["total"],
            "pairs": token_pairs(cfg),
            "tokens": cfg.seq_len,
        }
        for size, cfg in cfgs.items()
    ]
    t0, m0, q0 = rows[0]["seconds"], rows[0]["macs"], rows[0]["pairs"]
    for r in rows:
        r["pred_macs"] = t0 * r["macs"] / m0
        r["pred_pairs"] = t0 * r["pairs"] / q0
    by = {r["size"]: r for r in rows}
    rec.fact("lat_model", "ViT-Ti/16")
    rec.fact("lat_rounds", LATENCY_ROUNDS)
    rec.fact("lat_warmup", LATENCY_WARMUP)
    rec.fact("lat_threads", torch.get_num_threads())
    for size in (224, 384, 512):
        rec.fact(f"lat_{size}_ms", by[size]["seconds"] * 1e3, "{:.0f}")
    for size in (384, 512):
        rec.fact(f"lat_ratio_{size}", by[size]["seconds"] / t0, "{:.1f}")
        rec.fact(f"lat_pred_macs_{size}", by[size]["macs"] / m0, "{:.1f}")
        rec.fact(f"lat_pred_pairs_{size}", by[size]["pairs"] / q0, "{:.1f}")
    errs = [abs(r["seconds"] / r["pred_macs"] - 1) for r in rows[1:]]
    rec.fact("lat_macs_max_err", max(errs), "{:.0%}")
    rec.fact("lat_seconds_total", time.perf_counter() - start, "{:.0f}")
    return rows


@latency.draw
def _(rows, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    s = [r["size"] for r in rows]
    ms = [r["seconds"] * 1e3 for r in rows]
    pm = [r["pred_macs"] * 1e3 for r in rows]
    pq = [r["pred_pairs"] * 1e3 for r in rows]
    ax.plot(s, pq, "--", color=c["muted"], lw=1.5)
    ax.plot(s, pm, "-", color=c["blue"], lw=1.5)
    ax.plot(s, ms, "o", color=c["orange"], ms=7, zorder=5)
    plot.label_line(ax, s[-1], pq[-1], "prediction from\ntoken pairs (N+1)²", c["muted"])
    # The MAC prediction and the measurement end close together (a timing: above or below):
    # the upper of the two is labelled above its end, the lower below, so they never overprint.
    mac_above = pm[-1] >= ms[-1]
    for y, text, color, above in (
        (pm[-1], "prediction from\nthe MAC count", c["blue"], mac_above),
        (ms[-1], f"measured (median),\n{ms[-1]:.0f} ms", c["orange"], not mac_above),
    ):
        ax.annotate(
            text,
            (s[-1], y),
            xytext=(6, 5 if above else -5),
            textcoords="offset points",
            va="bottom" if above else "top",
            fontsize=8.5,
            color=color,
        )
    for x, y in zip(s[:-1], ms[:-1], strict=True):  # the last one is in its label
        ax.annotate(f"{y:.0f}", (x, y), xytext=(4, -4), textcoords="offset points",
                    ha="left", va="top", fontsize=8, color=c["orange"])  # fmt: skip
    shown = plot.pick(v, s, s[::2] if len(s) > 4 else s)
    ax.set_xticks(shown, labels=[str(x) for x in shown])
    ax.set_xlim(s[0] - 20, s[-1] + 110)
    ax.set_yscale("log")  # equal ratios, equal heights: the predictions are ratios
    lo, hi = min(ms + pm) * 0.6, max(pq) * 1.6
    ax.set_ylim(lo, hi)
    # plain numbers on the log axis (no 2 × 10¹): a 1-2-5 ladder, no minor labels
    ladder = [m * 10**e for e in range(-1, 5) for m in (1, 2, 5)]
    ticks = [t for t in ladder if lo <= t <= hi]
    ax.set_yticks(ticks, labels=[f"{t:g}" for t in ticks])
    ax.yaxis.set_minor_formatter(plot.matplotlib.ticker.NullFormatter())
    ax.set_xlabel("image side (pixels), patch size 16")
    ax.set_ylabel(
        plot.pick(
            v, "time per image, batch 1 (ms, log scale)", "time per image, batch 1\n(ms, log scale)"
        )
    )
    ax.grid(True, axis="y", which="major")
    return fig


def block_mac_parts(dim: int, tokens: int) -> dict[str, int]:
    """MACs of one block at ``tokens`` tokens, from ``vitbook.calc.macs`` (a one-row image of
    ``tokens - 1`` patches gives any sequence length)."""
    cfg = ViTConfig(
        image_size=(16, 16 * (tokens - 1)), patch_size=16, dim=dim, depth=1, heads=1, num_classes=0
    )
    m = macs(cfg)
    return {
        "projections": m["qkv"] + m["proj"],
        "matmuls": m["attn_qk"] + m["attn_av"],
        "mlp": m["mlp"],
    }


def crossover(dim: int, parts: tuple[str, ...]) -> int:
    """The smallest sequence length at which ``parts`` of attention cost at least the MLP."""
    lo, hi = 2, 1 << 20
    while lo < hi:  # bisection: the attention share only grows with T
        mid = (lo + hi) // 2
        b = block_mac_parts(dim, mid)
        if sum(b[p] for p in parts) >= b["mlp"]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@figure(chapter=8, id="attention-vs-mlp", size=(7.2, 3.6), phone_size=4.6)
def attention_vs_mlp(rec):
    """Share of one ViT-B block's MACs in the attention projections, the attention matmuls and
    the MLP, over the sequence length T."""
    D = preset(B16).dim
    tokens = np.unique(np.logspace(np.log10(10), np.log10(20000), 160).astype(int))
    shares = {k: [] for k in ("projections", "matmuls", "mlp")}
    for t in tokens:
        b = block_mac_parts(D, int(t))
        total = sum(b.values())
        for k in shares:
            shares[k].append(b[k] / total)
    all_attn = crossover(D, ("projections", "matmuls"))
    matmuls = crossover(D, ("matmuls",))
    rec.fact("cross_dim", D)
    rec.fact("cross_attn_tokens", all_attn)
    rec.fact("cross_attn_over_d", all_attn / D, "{:g}")
    rec.fact("cross_matmul_tokens", matmuls)
    rec.fact("cross_matmul_over_d", matmuls / D, "{:g}")
    rec.fact("cross_attn_side", 16 * ((all_attn - 1) ** 0.5), "{:.0f}")
    rec.fact("cross_matmul_side", 16 * ((matmuls - 1) ** 0.5), "{:.0f}")
    ti = preset(LATENCY_MODEL).dim
    rec.fact("cross_attn_tokens_ti", crossover(ti, ("projections", "matmuls")))
    rec.fact("cross_attn_side_ti", 16 * ((crossover(ti, ("projections", "matmuls")) - 1) ** 0.5),
             "{:.0f}")  # fmt: skip
    marks = {}
    for size in (224, 384, 512):
        t = preset(B16, image_size=size).seq_len
        b = block_mac_parts(D, t)
        total = sum(b.values())
        marks[size] = (t, b["mlp"] / total, b["matmuls"] / total)
        rec.fact(f"mlp_share_{size}", b["mlp"] / total, "{:.0%}")
        rec.fact(f"matmul_share_{size}", b["matmuls"] / total, "{:.0%}")
    return {
        "tokens": tokens,
        "shares": {k: np.array(s) for k, s in shares.items()},
        "cross": (all_attn, matmuls),
        "marks": marks,
    }


@attention_vs_mlp.draw
def _(d, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    t, s = d["tokens"], d["shares"]
    parts = (s["projections"], s["matmuls"], s["mlp"])
    ax.stackplot(t, *parts, colors=[c["blue"], c["purple"], c["orange"]], alpha=0.85, lw=0)
    ax.set_xscale("log")
    ax.set_xlim(t[0], t[-1])
    # plain numbers on the log axis (10, 100, 1,000 rather than powers of ten)
    ax.xaxis.set_major_formatter(plot.matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.xaxis.set_minor_formatter(plot.matplotlib.ticker.NullFormatter())
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(plot.matplotlib.ticker.PercentFormatter(1.0))
    ink = "#ffffff" if not v.dark else "#111111"
    ax.text(14, 0.17, "qkv + output projections", color=ink, fontsize=9)
    ax.text(14, 0.62, "MLP (fc1, fc2)", color=ink, fontsize=10, fontweight="bold")
    phone = plot.is_phone(v)
    ax.text(9000 if phone else 7000, 0.5, plot.pick(v, "Q Kᵀ and A V", "Q Kᵀ\nand A V"), color=ink,
            fontsize=9, ha="center")  # fmt: skip
    all_attn, matmuls = d["cross"]
    for x, label, ha, k in ((all_attn, "all attention = MLP", "right", 0.93),
                            (matmuls, "matmuls alone = MLP", "left", 1.07)):  # fmt: skip
        ax.axvline(x, color=ink, lw=1.2, ls=":")
        if phone:  # too narrow beside the lines: above the plot, each line reaching up to its
            # label, which ends at the line (the later line's label on top, clear of the other)
            top = 1.03 if ha == "right" else 1.11
            above = ax.get_xaxis_transform()  # x in data, y in axes fractions
            ax.plot([x, x], [1, top + 0.02], transform=above, color=c["fg"], lw=1.2, ls=":",
                    clip_on=False)  # fmt: skip
            ax.text(x * 0.9, top, f"{label}, T = {x:,}", transform=above, ha="right",
                    va="bottom", fontsize=8.5, color=c["fg"], clip_on=False)  # fmt: skip
            continue
        ax.text(x * k, 0.97, f"{label}\nT = {x:,}", ha=ha, va="top", fontsize=8.5, color=ink)
    # the three image sizes: arrows inside the plot, down to the axis (below it, the arrow to
    # 512 pixels ran through the tick label 1,000)
    for k, (size, (tt, _, _)) in enumerate(d["marks"].items()):
        dy = 16 + (10 if phone and k % 2 else 0)  # staggered where they crowd
        ax.annotate(f"{size}", (tt, 0), xytext=(0, dy), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, color=ink,
                    arrowprops={"arrowstyle": "-|>", "color": ink, "lw": 0.8})  # fmt: skip
    xlabel = plot.pick(
        v,
        "sequence length T = N + 1 (log scale); arrows: ViT-B/16 at 224, 384 and 512 pixels",
        "sequence length T = N + 1 (log scale);\narrows: ViT-B/16 at 224, 384 and 512 pixels",
    )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of one block's MACs")
    return fig


@facts(chapter=8, id="pretraining-head")
def pretraining_head(rec):
    """The pre-training head (hidden layer + tanh, official ``pre_logits``) on ImageNet-21k's
    21,843 classes, against the zero-initialised linear head of fine-tuning (1000 classes)."""
    pre = param_breakdown(preset("vit-b/16", representation_size=768, num_classes=21843))
    fine = param_breakdown(preset("vit-b/16"))
    quote(rec, "in21k_classes", 21843, "{:,}")
    rec.fact("pre_logits_params_b16", pre["pre_logits"], "{:,}")
    rec.fact("pretrain_head_params_b16", pre["pre_logits"] + pre["head"], "{:,}")
    rec.fact("pretrain_total_b16", pre["total"], "{:,}")
    rec.fact("finetune_head_params_b16", fine["head"], "{:,}")
    return {"pre": pre, "fine": fine}


# --8<-- [start:activation-memory]
@facts(chapter=8, id="activation-memory")
def activation_memory(rec):
    """Numbers one image's forward pass leaves for the backward pass (``calc.activation_floats``),
    per token and per image, ViT-B/16 at 224 and 384, in float32 mebibytes (2**20 bytes)."""
    out = {}
    for size in (224, 384):
        a = activation_floats(preset("vit-b/16", image_size=size))
        out[size] = a
        rec.fact(f"act_per_token_{size}", a["per_token"], "{:,}")
        rec.fact(f"act_attn_share_{size}", a["per_token_attn"] / a["per_token"], "{:.0%}")
        rec.fact(f"act_mb_{size}", a["total"] * 4 / 2**20, "{:.0f}")
    rec.fact("act_per_token_fixed", out[224]["per_token_fixed"], "{:,}")
    rec.fact("act_ratio_384", out[384]["total"] / out[224]["total"], "{:.1f}")
    return out
    # --8<-- [end:activation-memory]
