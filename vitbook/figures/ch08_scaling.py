"""Chapter 8, choosing a size: the paper's scaling study against the book's calculator, and the
UvA deep-learning tutorial's ViT for 32x32 images.

The numbers quoted from sources are constants here, each with its citation, and recorded as
facts, so that the prose never types them:

- Dosovitskiy et al., ICLR 2021 (arXiv 2010.11929): Table 6 (ViT models pre-trained on JFT-300M,
  their pre-training compute in exaFLOPs and their ImageNet top-1 after fine-tuning), section 4.1
  (JFT-300M has 303M images) and appendix D.2 (the Transformer-shape ablation);
- Lippe, UvA Deep Learning Tutorials, Tutorial 15: Vision Transformers (CIFAR-10, 32x32): the
  patch sizes it tried, its choices of width, heads, MLP width and depth, its guidance on the
  key size, and its measured test accuracy.

Everything else (parameters, MACs, the compute estimate, rank correlations) is computed by
``vitbook.calc`` from the configs.
"""

from __future__ import annotations

from itertools import permutations

from scipy import stats

from vitbook import plot
from vitbook.calc import macs, param_breakdown
from vitbook.engine import facts, figure
from vitbook.model import ViTConfig, preset
from vitbook.quoted import quote

#: Table 6 of the paper, the ViT rows: (preset, pre-training epochs on JFT-300M, ImageNet top-1
#: after fine-tuning in %, pre-training compute in exaFLOPs), as printed.
TABLE6 = (
    ("vit-b/32", 7, 80.73, 55),
    ("vit-b/16", 7, 84.15, 224),
    ("vit-l/32", 7, 84.37, 196),
    ("vit-l/16", 7, 86.30, 783),
    ("vit-l/16", 14, 87.12, 1567),
    ("vit-h/14", 14, 88.08, 4262),
)
#: Section 4.1: JFT-300M holds 303M images; the models are pre-trained at 224x224 (appendix B.1).
JFT_IMAGES = 303_000_000
PRETRAIN_SIZE = 224
#: A training step costs about three forward passes (the backward pass about two), and a MAC
#: is two FLOPs: training FLOPs ~ 6 x forward MACs per image seen. An estimate, not the paper's.
TRAIN_FLOPS_PER_MAC = 6
#: Appendix D.2: every configuration varies one dimension of a ViT with 8 layers, D = 1024,
#: MLP width 2048 and patch size 32; depth helps "up until 64 layers", with diminishing returns
#: "after 16 layers".
D2_BASE = {"depth": 8, "dim": 1024, "mlp": 2048, "patch": 32}
D2_DEPTH_VISIBLE, D2_DEPTH_DIMINISHING = 64, 16

#: The UvA tutorial (Lippe, Tutorial 15): CIFAR-10 at 32x32; patch sizes tried 2, 4 and 8, of
#: which 4 worked best; width 256 with 8 heads (it found more than 8 heads unnecessary), MLP
#: width 512, 6 layers; a key of at least 16 or 32 features for its sequence of 64 patches; test
#: accuracy 75.59% against about 90% for the CNNs of its Tutorial 5.
UVA = {
    "image": 32,
    "patches": (2, 4, 8),
    "best_patch": 4,
    "dim": 256,
    "heads": 8,
    "mlp": 512,
    "depth": 6,
    "classes": 10,
    "key_min": (16, 32),
    "test_acc": 0.7559,
    "cnn_acc": 0.90,
}


def slug(name: str) -> str:
    """``"vit-b/16"`` -> ``"b16"``."""
    return name.removeprefix("vit-").replace("/", "")


def scaling_rows() -> list[dict]:
    """Table 6's ViT rows with the book's parameter count and compute estimate for each."""
    rows = []
    for name, epochs, top1, exaflops in TABLE6:
        cfg = preset(name, image_size=PRETRAIN_SIZE)
        m = macs(cfg)["total"]
        m_bare = macs(cfg, attn_matmuls=False)["total"]  # the other convention (Which FLOPs?)
        per_mac = TRAIN_FLOPS_PER_MAC * JFT_IMAGES * epochs / 1e18  # exaFLOPs per MAC
        rows.append({
            "name": name, "epochs": epochs, "top1": top1, "exaflops": exaflops,
            "params": param_breakdown(cfg)["total"], "macs": m, "estimate": m * per_mac,
            "estimate_bare": m_bare * per_mac,
        })  # fmt: skip
    return rows


@figure(chapter=8, id="scaling-study", size=(7.2, 3.4), phone_size=7.4)
def scaling_study(rec):
    """ImageNet top-1 of the paper's ViTs (Table 6) against their parameters (the book's exact
    counts) and against their pre-training compute (the paper's exaFLOPs)."""
    rows = scaling_rows()
    top1 = [r["top1"] for r in rows]
    rho_params = stats.spearmanr([r["params"] for r in rows], top1).statistic
    rho_compute = stats.spearmanr([r["exaflops"] for r in rows], top1).statistic
    rec.fact("t6_rows", len(rows))
    rec.fact("rho_params", rho_params, "{:.2f}")
    rec.fact("rho_compute", rho_compute, "{:.2f}")
    quote(rec, "jft_images", JFT_IMAGES / 1e6, "{:.0f}M")
    rec.fact("train_flops_per_mac", TRAIN_FLOPS_PER_MAC)
    gaps = [abs(r["estimate"] / r["exaflops"] - 1) for r in rows]
    rec.fact("t6_estimate_max_gap", max(gaps), "{:.1%}")
    rec.fact("t6_estimate_gap_b32", gaps[0], "{:.1%}")  # 55 exaFLOPs: two digits printed
    rec.fact("t6_estimate_max_gap_others", max(gaps[1:]), "{:.2%}")
    bare = [r["estimate_bare"] / r["exaflops"] - 1 for r in rows]
    # without the attention matmuls: short of the table on every row but ViT-B/32's
    rec.fact("t6_bare_short_rows", sum(g < 0 for g in bare))
    rec.fact("t6_bare_gap_lo", -max(g for g in bare if g < 0), "{:.0%}")
    rec.fact("t6_bare_gap_hi", -min(bare), "{:.0%}")
    rec.fact("t6_bare_gap_b32", bare[0], "{:+.2%}")
    rec.fact("t6_b32_7_bare_estimate", rows[0]["estimate_bare"], "{:.1f}")
    # the rank correlations rest on six rows (five models, one twice): how often would a
    # random order of the accuracies correlate as well? (exact, over all 720 orders)
    for key, xs in (("params", [r["params"] for r in rows]),
                    ("compute", [r["exaflops"] for r in rows])):  # fmt: skip
        rho = stats.spearmanr(xs, top1).statistic
        null = [stats.spearmanr(xs, perm).statistic for perm in permutations(top1)]
        rec.fact(f"rho_{key}_p", sum(r >= rho - 1e-12 for r in null) / len(null), "{:.1%}")
    rec.fact("rho_orders", len(null), "{:,}")
    rec.fact("t6_models", len({r["name"] for r in rows}))
    for r in rows:
        key = f"t6_{slug(r['name'])}_{r['epochs']}"
        quote(rec, f"{key}_top1", r["top1"], "{:.2f}")
        quote(rec, f"{key}_exaflops", r["exaflops"], "{:,}")
        rec.fact(f"{key}_estimate", r["estimate"], "{:,.0f}")
        rec.fact(f"{key}_params_m", r["params"] / 1e6, "{:.1f}M")
    b16, l32 = rows[1], rows[2]
    rec.fact("t6_l32_over_b16_params", l32["params"] / b16["params"], "{:.1f}")
    l16a, l16b = rows[3], rows[4]
    rec.fact("t6_l16_epoch_gain", l16b["top1"] - l16a["top1"], "{:.2f}")
    quote(rec, "t6_epochs_short", l16a["epochs"])
    quote(rec, "t6_epochs_long", l16b["epochs"])
    for key, value in D2_BASE.items():
        quote(rec, f"d2_base_{key}", value, "{:,}")
    quote(rec, "d2_depth_visible", D2_DEPTH_VISIBLE)
    quote(rec, "d2_depth_diminishing", D2_DEPTH_DIMINISHING)
    # D.2's base model, and the same with the patch halved: what "no extra parameters" costs
    # (the head count, which D.2 does not give, changes neither parameters nor MACs)
    base = d2_base()
    half = ViTConfig(**{**base.__dict__, "patch_size": D2_BASE["patch"] // 2})
    rec.fact("d2_half_patch", D2_BASE["patch"] // 2)
    p0, p1 = param_breakdown(base)["total"], param_breakdown(half)["total"]
    rec.fact("d2_half_params_change", (p1 - p0) / p0, "{:+.1%}")
    rec.fact("d2_half_macs_ratio", macs(half)["total"] / macs(base)["total"], "{:.1f}")
    deep = ViTConfig(**{**base.__dict__, "depth": 2 * D2_BASE["depth"]})
    rec.fact("d2_double_depth_params_ratio", param_breakdown(deep)["total"] / p0, "{:.1f}")
    return {"rows": rows}


#: Where each point's label goes (offset in points, alignment), where the default (right, below)
#: would collide with a neighbour or the axis.
PLACE = {
    "params": {
        ("B/32", 7): (6, 3, "left", "bottom"),
        ("L/16", 7): (-6, -3, "right", "top"),
        ("H/14", 14): (-6, 0, "right", "center"),
    },
    "exaflops": {
        ("B/32", 7): (6, 3, "left", "bottom"),
        ("L/32", 7): (-6, 3, "right", "bottom"),
        ("H/14", 14): (-6, 0, "right", "center"),
    },
}


@scaling_study.draw
def draw_scaling_study(d, v):
    c = plot.colors(v)
    fig, (ax, bx) = plot.subplots(v, 1, 2, sharey=True, phone_cols=1)
    rows = d["rows"]
    phone = plot.is_phone(v)
    for axis, key, scale, label in (
        (ax, "params", 1e6, "parameters (millions, exact)"),
        (bx, "exaflops", 1.0, "pre-training compute (exaFLOPs, Table 6)"),
    ):
        xs = [r[key] / scale for r in rows]
        ys = [r["top1"] for r in rows]
        axis.plot(xs[3:5], ys[3:5], color=c["muted"], lw=1, ls=":")  # L/16: 7 and 14 epochs
        axis.scatter(xs, ys, s=28, color=[c["orange"] if r["epochs"] == 14 else c["blue"]
                                         for r in rows], zorder=3)  # fmt: skip
        for r, x, y in zip(rows, xs, ys, strict=True):
            name = r["name"].removeprefix("vit-").upper()
            dx, dy, ha, va = PLACE[key].get((name, r["epochs"]), (6, -3, "left", "top"))
            axis.annotate(
                f"{name}, {r['epochs']} ep.",
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=8,
                color=c["fg"],
            )
        axis.set_xscale("log")
        axis.set_xlabel(label if not phone else label.replace(" (", "\n("), fontsize=9)
        axis.grid(True, which="major", axis="y")
        axis.margins(x=0.25)
        axis.set_ylim(80, 89)
    ax.set_ylabel("ImageNet top-1 (%), Table 6")
    if phone:
        bx.set_ylabel("ImageNet top-1 (%), Table 6")
    ax.set_title("against parameters", fontsize=10)
    bx.set_title("against pre-training compute", fontsize=10)
    for axis in (ax, bx):
        axis.xaxis.set_major_formatter(
            plot.matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}")
        )
        axis.xaxis.set_minor_formatter(plot.matplotlib.ticker.NullFormatter())
    return fig


def params_by_equation(cfg: ViTConfig, mlp: int | None = None) -> int:
    """Eq. 8.1 written out: the parameters of a ViT from its patch size P, channels C, width D,
    MLP width M, depth L, classes K and its number of patches N. ``mlp`` overrides M (``4 * D``:
    the shorthand 12 D^2 + 13 D per block, which holds only where the MLP is four times D)."""
    P, C, D, L, K = cfg.patch_size, cfg.in_chans, cfg.dim, cfg.depth, cfg.num_classes
    M, N = cfg.mlp_dim if mlp is None else mlp, cfg.num_patches
    block = 4 * D * D + 2 * D * M + M + 9 * D  # qkv 3D^2+3D, proj D^2+D, MLP 2DM+M+D, norms 4D
    return (P * P * C + 1) * D + D + (N + 1) * D + L * block + 2 * D + (D + 1) * K


def cfg_of(patch: int) -> ViTConfig:
    """The UvA tutorial's ViT for CIFAR-10 with patches of ``patch`` pixels."""
    return ViTConfig(image_size=UVA["image"], patch_size=patch, dim=UVA["dim"],
                     depth=UVA["depth"], heads=UVA["heads"], mlp_ratio=UVA["mlp"] / UVA["dim"],
                     num_classes=UVA["classes"])  # fmt: skip


def d2_base() -> ViTConfig:
    """Appendix D.2's base model (16 heads: D.2 gives none, and they change no count)."""
    return ViTConfig(image_size=PRETRAIN_SIZE, patch_size=D2_BASE["patch"], dim=D2_BASE["dim"],
                     depth=D2_BASE["depth"], heads=16,
                     mlp_ratio=D2_BASE["mlp"] / D2_BASE["dim"])  # fmt: skip


@facts(chapter=8, id="small-images")
def small_images(rec):
    """The UvA tutorial's ViT for CIFAR-10 (32x32) at the three patch sizes it tried, counted by
    ``vitbook.calc``: tokens, head width, parameters, MACs and the attention matmuls' share."""
    out = {}
    quote(rec, "uva_image", UVA["image"])
    quote(rec, "uva_dim", UVA["dim"])
    quote(rec, "uva_heads", UVA["heads"])
    rec.fact("uva_head_dim", UVA["dim"] // UVA["heads"])
    quote(rec, "uva_mlp", UVA["mlp"])
    quote(rec, "uva_depth", UVA["depth"])
    quote(rec, "uva_best_patch", UVA["best_patch"])
    quote(rec, "uva_key_min_lo", UVA["key_min"][0])
    quote(rec, "uva_key_min_hi", UVA["key_min"][1])
    quote(rec, "uva_test_acc", UVA["test_acc"], "{:.1%}")
    quote(rec, "uva_cnn_acc", UVA["cnn_acc"], "{:.0%}")
    for p in UVA["patches"]:
        cfg = cfg_of(p)
        m = macs(cfg)
        rec.fact(f"uva_p{p}", p)
        rec.fact(f"uva_p{p}_patches", cfg.num_patches)
        rec.fact(f"uva_p{p}_tokens", cfg.seq_len)
        rec.fact(f"uva_p{p}_params", param_breakdown(cfg)["total"], "{:,}")
        rec.fact(f"uva_p{p}_mmacs", m["total"] / 1e6, "{:,.1f}")
        rec.fact(f"uva_p{p}_matmul_share", (m["attn_qk"] + m["attn_av"]) / m["total"], "{:.0%}")
        out[p] = {"tokens": cfg.seq_len, "macs": m["total"]}
    rec.fact("uva_p2_over_p4_macs", out[2]["macs"] / out[4]["macs"], "{:.1f}")
    # Eq. 8.1 with the MLP width as a parameter, against the calculator, for the chapter's
    # small models (MLP = 2D: the UvA models and appendix D.2's base); and how far the
    # shorthand 12 D^2 + 13 D per block (MLP = 4D) overcounts them
    small = [cfg_of(p) for p in UVA["patches"]] + [d2_base()]
    family = [preset(n) for n in ("vit-ti/16", "vit-s/16", "vit-b/16", "vit-l/16", "vit-h/14")]
    for cfg in small + family:  # the general form, for the family (M = 4D) and the small ones
        assert params_by_equation(cfg) == param_breakdown(cfg)["total"]
    for cfg in family:  # the shorthand is exact where M = 4D
        assert params_by_equation(cfg, mlp=4 * cfg.dim) == params_by_equation(cfg)
    over = [params_by_equation(c, mlp=4 * c.dim) / params_by_equation(c) - 1 for c in small]
    rec.fact("small_models", len(small))
    rec.fact("small_mlp_ratio", small[0].mlp_dim / small[0].dim, "{:g}")
    rec.fact("overcount_4d_lo", min(over), "{:.0%}")
    rec.fact("overcount_4d_hi", max(over), "{:.0%}")
    rec.fact("uva_p4_params_4d", params_by_equation(cfg_of(4), mlp=4 * UVA["dim"]), "{:,}")
    b16 = preset("vit-b/16")
    rec.fact("uva_b16_head_dim", b16.head_dim)
    return out
