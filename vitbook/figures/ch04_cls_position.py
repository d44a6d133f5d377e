"""Chapter 4, The CLS token and position embeddings: Eq. 1, permutation equivariance measured
on the real model, sin-cos similarity maps, and the two classic traps."""

from __future__ import annotations

import math
import os
import tempfile
import textwrap

import numpy as np
import torch
from matplotlib import patheffects

from vitbook import plot
from vitbook.analysis import cosine_similarity_map, interpolate_pos_embed, sincos_1d, sincos_2d
from vitbook.calc import param_breakdown
from vitbook.data.face import face, face_tensor
from vitbook.engine import facts, figure
from vitbook.model import VisionTransformer, load_pretrained, preset
from vitbook.patches import patchify, unpatchify
from vitbook.quoted import quote

IMAGE = 224
GRID = 14  # ViT-B/16 and ViT-Ti/16 at 224 pixels: a 14 x 14 grid of patches
PE_DIM = 768  # width of the sin-cos tables drawn (ViT-B's D)
# Patches whose similarity maps are drawn: (row, column) on the 14 x 14 grid.
CHOSEN = ((0, 0), (6, 13), (7, 7), (12, 3))
#: Bounds the pages print for differences at rounding level (float32 and float64 sums in
#: another order): "less than 1e-5", the same on every CPU, whatever this one's value.
F32_ROUNDING, F64_ROUNDING = 1e-5, 1e-13
#: A column of a sin-cos table whose angle turns by less than this over the whole grid is
#: "nearly constant": its cosine stays above cos(0.1) = 0.995, its sine below 0.1.
SLOW_RAD = 0.1


# --8<-- [start:shuffle]
def shuffle_patches(x: torch.Tensor, perm: torch.Tensor, patch: int) -> torch.Tensor:
    """Rearrange the P x P tiles of images x (B, C, H, W): tile perm[i] moves to place i."""
    B, C, H, W = x.shape
    tiles = patchify(x, patch)  # (B, N, C*P*P), raster order
    return unpatchify(tiles[:, perm], patch, C, (H // patch, W // patch))  # (B, C, H, W)
    # --8<-- [end:shuffle]


# --8<-- [start:assemble]
def assemble_z0(model: VisionTransformer, x: torch.Tensor) -> torch.Tensor:
    """Eq. 1 by hand: z0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos."""
    patches = model.patch_embed(x)  # (B, N, D): x_p^i E for every patch
    cls = model.cls_token.expand(x.shape[0], -1, -1)  # (B, 1, D): one copy per image
    z = torch.cat([cls, patches], dim=1)  # (B, N+1, D): CLS first, at index 0
    return z + model.pos_embed  # (B, N+1, D) + (1, N+1, D): one row per token, CLS included
    # --8<-- [end:assemble]


@figure(chapter=4, id="z0-assembly", size=(7.2, 3.6), phone_size=4.6)
def z0_assembly(rec):
    """Eq. 1 on the face: the face preset (49 patches, D = 8) with a 2D sin-cos table."""
    cfg = preset("face", pos_embed="sincos2d")
    model = VisionTransformer(cfg=cfg).eval()
    with torch.no_grad():
        model.cls_token.fill_(0.5)  # a visible stand-in for the learned CLS vector
        x = face_tensor(IMAGE)
        z0 = assemble_z0(model, x)
        out = model.forward_intermediates(x, attn=False)
    rec.fact("z0_rows", z0.shape[1])
    rec.fact("z0_cols", z0.shape[2])
    rec.fact("z0_match", float((z0 - out["with_pos"]).abs().max()), "{:.1e}")
    # the sin-cos table of D = 8 has two frequencies per axis, 1 and 1/100: over 7 positions
    # the slow one turns by 0.06 rad, so its sine column stays near 0, its cosine near 1
    table = model.pos_embed[0, 1:]  # (49, 8): the patches' rows
    spread = (table.max(0).values - table.min(0).values).double()  # (8,) range per column
    const = [int(k) for k in torch.nonzero(spread < SLOW_RAD).flatten()]
    rec.fact("z0_const_cols", len(const))
    rec.fact("z0_const_list", const, text=", ".join(str(k) for k in const))
    rec.fact("z0_const_spread", float(spread[const].max()), "{:.2f}")
    rec.fact("z0_slow_omega", 1 / 10000**0.5, "{:.2f}")
    rec.fact("z0_slow_turn", (model.cfg.grid[0] - 1) / 10000**0.5, "{:.2f}")
    tokens = out["with_cls"][0].numpy()
    return {"tokens": tokens, "pos": model.pos_embed[0].numpy(), "z0": z0[0].numpy()}


@z0_assembly.draw
def _(data, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 3)
    lim = float(max(np.abs(data[k]).max() for k in ("tokens", "pos", "z0")))
    titles = plot.pick(v, ("[x_class; x_p E]", "E_pos", "z0 = sum"), ("tokens", "+ E_pos", "= z0"))
    ops = ("+", "=", None)
    n = data["tokens"].shape[0]
    for ax, key, title, op in zip(axes, ("tokens", "pos", "z0"), titles, ops, strict=True):
        im = ax.imshow(
            data[key], cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest"
        )
        ax.set_title(title, fontsize=10, loc="center")
        ax.set_xlabel(plot.pick(v, "feature (D = 8)", "feature"))
        ax.set_xticks(range(0, 8, 2))
        ax.set_yticks(
            [0, 10, 20, 30, 40, n - 1], labels=["CLS 0", "10", "20", "30", "40", str(n - 1)]
        )
        # the CLS row's lower edge; a dark halo keeps it visible on the orange-ish CLS cells
        halo = [patheffects.withStroke(linewidth=3.2, foreground="black", alpha=0.8)]
        ax.axhline(0.5, color=c["highlight"], lw=1.6, path_effects=halo)
        if op and not plot.is_phone(v):  # on the phone the titles carry the + and =
            ax.text(
                1.06,
                0.5,
                op,
                transform=ax.transAxes,
                fontsize=plot.pick(v, 16, 12),
                fontweight="bold",
                ha="center",
                va="center",
                color=c["fg"],
            )
    axes[0].set_ylabel(plot.pick(v, "token (0 = CLS, then patches)", "token (0 = CLS)"))
    cb = fig.colorbar(im, ax=axes, shrink=0.85, pad=0.02)
    cb.set_label("value")
    cb.outline.set_visible(False)
    return fig


def _three_models() -> dict[str, VisionTransformer]:
    """ViT-Ti/16 with the same weights and three kinds of position table."""
    out = {}
    torch.manual_seed(0)
    base = VisionTransformer(cfg=preset("vit-ti/16", pos_embed="learned")).eval()
    state = {k: v for k, v in base.state_dict().items() if k != "pos_embed"}
    for kind in ("none", "learned", "sincos2d"):
        m = VisionTransformer(cfg=preset("vit-ti/16", pos_embed=kind)).eval()
        m.load_state_dict(state, strict=False)  # the same weights; only the table differs
        if kind == "learned":
            m.pos_embed.data.copy_(base.pos_embed.data)
        out[kind] = m
    return out


# --8<-- [start:equivariance]
@torch.no_grad()
def shuffle_test(model: VisionTransformer, x: torch.Tensor, perm: torch.Tensor) -> dict:
    """Run x and its patch-shuffled copy; compare the CLS outputs and the patch outputs."""
    a = model.forward_intermediates(x, attn=False)
    b = model.forward_intermediates(shuffle_patches(x, perm, model.cfg.patch_size), attn=False)
    return {
        "cls": (a["encoded"][:, 0] - b["encoded"][:, 0]).abs().max().item(),
        # patch i of the shuffled run is patch perm[i] of the original run
        "patches": (a["encoded"][:, 1:][:, perm] - b["encoded"][:, 1:]).abs().max().item(),
        "logits": (a["logits"] - b["logits"]).abs().max().item(),
    }
    # --8<-- [end:equivariance]


@figure(chapter=4, id="permutation", size=(7.2, 3.3), phone_size=6.2)
def permutation(rec):
    """Shuffle the face's 196 patches; measure how much ViT-Ti/16's CLS output moves."""
    x32 = face_tensor(IMAGE)
    g = torch.Generator().manual_seed(4)
    perm = torch.randperm(GRID * GRID, generator=g)
    res = {}
    for kind, m in _three_models().items():
        res[(kind, "f32")] = shuffle_test(m, x32, perm)
        if kind == "none":  # the same model in float64: what is left is float32 round-off
            res[(kind, "f64")] = shuffle_test(m.double(), x32.double(), perm)
    rec.fact("cls_diff_none", res[("none", "f64")]["cls"], "{:.1e}", tol=F64_ROUNDING)
    rec.fact("cls_diff_none_f32", res[("none", "f32")]["cls"], "{:.1e}", tol=F32_ROUNDING)
    rec.fact("patch_diff_none", res[("none", "f64")]["patches"], "{:.1e}", tol=F64_ROUNDING)
    rec.fact("cls_diff_learned", res[("learned", "f32")]["cls"], "{:.3f}")
    rec.fact("cls_diff_sincos", res[("sincos2d", "f32")]["cls"], "{:.3f}")
    rec.fact("patch_diff_sincos", res[("sincos2d", "f32")]["patches"], "{:.2f}")
    rec.fact("logit_diff_none_f32", res[("none", "f32")]["logits"], "{:.1e}", tol=F32_ROUNDING)
    rec.fact("logit_diff_learned", res[("learned", "f32")]["logits"], "{:.4f}")

    # global average pooling instead of CLS: also blind to the order without positions
    torch.manual_seed(0)
    gap = VisionTransformer(cfg=preset("vit-ti/16", pos_embed="none", pool="mean")).double()
    with torch.no_grad():
        xd = x32.double()
        pa = gap.eval().forward_intermediates(xd, attn=False)["pooled"]
        pb = gap.forward_intermediates(shuffle_patches(xd, perm, 16), attn=False)["pooled"]
    rec.fact("gap_diff_none", (pa - pb).abs().max().item(), "{:.1e}", tol=F64_ROUNDING)
    rec.fact("ti_params", param_breakdown(preset("vit-ti/16"))["total"])
    shuffled = shuffle_patches(x32, perm, 16)[0].permute(1, 2, 0).numpy()
    bars = {kind: res[(kind, "f32")]["cls"] for kind in ("none", "learned", "sincos2d")}
    bars["none (float64)"] = res[("none", "f64")]["cls"]
    # rounding-level bars are labelled with their bound, which does not change with the CPU
    bounds = {"none": F32_ROUNDING, "none (float64)": F64_ROUNDING}
    return {"image": face(IMAGE), "shuffled": shuffled, "bars": bars, "bounds": bounds}


@permutation.draw
def _(data, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, 3, width_ratios=[1, 1, 1.5], phone_cols=2)
    plot.show_image(axes[0], data["image"], title="the face")
    plot.show_image(axes[1], data["shuffled"], title="shuffled")
    for ax in axes[:2]:
        ax.title.set_fontsize(10)
    ax = axes[2]
    order = ["none (float64)", "none", "learned", "sincos2d"]
    labels = [
        "no positions\n(float64)",
        "no positions\n(float32)",
        "learned\n(at init)",
        "2D sin-cos",
    ]
    vals = [data["bars"][k] for k in order]
    colors = [c["green"], c["green"], c["orange"], c["orange"]]
    ax.barh(range(4), vals, color=colors)
    ax.set_xscale("log")
    ax.set_xlim(1e-17, 10)
    ax.set_ylim(3.5, -0.85)
    ax.set_yticks(range(4), labels=labels, fontsize=8.5)
    for i, (key, val) in enumerate(zip(order, vals, strict=True)):
        bound = data["bounds"].get(key)
        label = f"< {bound:.0e}".replace("e-0", "e-") if bound else f"{val:.1e}"
        ax.text(val * 2, i, label, va="center", fontsize=8.5, color=c["fg"])
    ax.axvline(np.finfo(np.float32).eps, color=c["muted"], lw=1, ls="--")
    ax.text(
        np.finfo(np.float32).eps * 0.5,
        -0.62,
        "float32 eps",
        color=c["muted"],
        fontsize=8,
        ha="right",
        va="center",
    )
    ax.set_xlabel("max |CLS output change| (log scale)")
    ax.set_title("ViT-Ti/16, same weights", fontsize=10)
    return fig


def _similarity_maps(table: torch.Tensor) -> np.ndarray:
    """(len(CHOSEN), 14, 14) cosine similarity of each chosen patch with every patch."""
    sim = cosine_similarity_map(table, GRID, num_prefix_tokens=0)  # (14, 14, 14, 14)
    return np.stack([sim[r, col].numpy() for r, col in CHOSEN])


@figure(chapter=4, id="sincos-similarity", size=(7.2, 3.9), phone_size=7.6)
def sincos_similarity(rec):
    """1D vs 2D sin-cos tables for 196 patches (D = 768), as Fig. 7 (centre) of the paper."""
    one = sincos_1d(GRID * GRID, PE_DIM)  # (196, 768): position = raster index only
    two = sincos_2d(GRID, GRID, PE_DIM)  # (196, 768): half row, half column
    s1 = cosine_similarity_map(one, GRID, num_prefix_tokens=0)
    s2 = cosine_similarity_map(two, GRID, num_prefix_tokens=0)
    # patch (7, 7) against its right neighbour, the patch below, and a wrap-around pair:
    # (6, 13) ends a row and (7, 0) starts the next, one step apart in raster order
    for name, s in (("1d", s1), ("2d", s2)):
        rec.fact(f"sim{name}_right", float(s[7, 7, 7, 8]), "{:.2f}")
        rec.fact(f"sim{name}_below", float(s[7, 7, 8, 7]), "{:.2f}")
        rec.fact(f"sim{name}_wrap", float(s[6, 13, 7, 0]), "{:.2f}")
        rec.fact(f"sim{name}_far", float(s[0, 0, 13, 13]), "{:.2f}")
    rec.fact("pe_dim", PE_DIM)
    rec.fact("grid", GRID)
    # why no pair is dissimilar: along one axis of the 2D table, D/4 frequencies
    # w_f = 10000^(-f / (D/4)), and between positions d apart the similarity is the mean of
    # cos(d w_f) over them; the slow half hardly turns over the 13 steps of a 14-wide axis
    rec.fact("sim2d_min", float(s2.min()), "{:.2f}")
    rec.fact("sim1d_min", float(s1.min()), "{:.2f}")
    n_freq = PE_DIM // 4
    omega = 1.0 / 10000 ** (torch.arange(n_freq, dtype=torch.float64) / n_freq)  # (192,)
    span = GRID - 1  # the largest distance along an axis
    turn = span * omega  # how far each column's angle turns across the axis
    slow = turn < SLOW_RAD
    rec.fact("axis_freqs", n_freq)
    rec.fact("axis_span", span)
    rec.fact("slow_rad", SLOW_RAD, "{:g}")
    rec.fact("slow_cos", math.cos(SLOW_RAD), "{:.3f}")
    rec.fact("slow_freqs", int(slow.sum()))
    rec.fact("slow_share", float(slow.double().mean()), "{:.0%}")
    rec.fact("quarter_turn_freqs", int((turn < math.pi / 2).sum()))
    far = torch.cos(span * omega)  # each frequency's share at the farthest distance
    rec.fact("far_slow_part", float(far[slow].sum() / n_freq), "{:.2f}")
    rec.fact("far_rest_part", float(far[~slow].sum() / n_freq), "{:.2f}")
    # the same kind of table on the grid of Chapter 9's small model, as the explorer shows it
    from vitbook.experiments.pretrain import SHAPES_CFG  # its configuration, not its weights

    gh, gw = SHAPES_CFG.grid
    small = cosine_similarity_map(sincos_2d(gh, gw, SHAPES_CFG.dim), (gh, gw), num_prefix_tokens=0)
    rec.fact("sim2d_min_small", float(small.min()), "{:.2f}")
    return {"1d": _similarity_maps(one), "2d": _similarity_maps(two)}


@sincos_similarity.draw
def _(data, v):
    # the chosen patch's outline on the viridis map: the light theme's strong orange in both
    # themes (the dark page's pale orange all but vanished on the map's yellow end)
    mark = plot.colors("light")["highlight"]
    fig, axes = plot.subplots(v, 2, len(CHOSEN), phone_cols=2)
    phone = plot.is_phone(v)
    lo = min(float(data[k].min()) for k in ("1d", "2d"))
    for row, (key, name) in enumerate((("1d", "1D sin-cos"), ("2d", "2D sin-cos"))):
        for col, (r, cc) in enumerate(CHOSEN):
            ax = axes[row, col]
            im = ax.imshow(data[key][col], cmap="viridis", vmin=lo, vmax=1, interpolation="nearest")
            ax.plot(cc, r, marker="s", ms=7, mfc="none", mec=mark, mew=2)
            ax.set_xticks([0, 13])
            ax.set_yticks([0, 13])
            ax.tick_params(labelsize=8, length=2)
            if phone:  # four rows of two: each panel says which table and which patch
                ax.set_title(f"{name}\npatch ({r}, {cc})", fontsize=9, loc="center")
                if col % 2 == 0:
                    ax.set_ylabel("row", fontsize=9)
                if col >= 2:
                    ax.set_xlabel("column", fontsize=9)
                continue
            if row == 0:
                ax.set_title(f"patch (row {r}, col {cc})", fontsize=9, loc="center")
            if col == 0:
                ax.set_ylabel(f"{name}\nrow", fontsize=9)
            if row == 1:
                ax.set_xlabel("column", fontsize=9)
    cb = fig.colorbar(im, ax=axes, shrink=0.8, pad=0.02)
    cb.set_label("cosine similarity")
    cb.outline.set_visible(False)
    return fig


@facts(chapter=4, id="pos-params")
def pos_params(rec):
    """What a learned position table costs, from the calculator."""
    for name in ("vit-b/16", "vit-ti/16", "vit-l/16", "vit-h/14"):
        cfg = preset(name)
        p = param_breakdown(cfg)
        tag = name.replace("vit-", "").replace("/", "")
        rec.fact(f"pos_params_{tag}", p["pos_embed"])
        if name == "vit-b/16":
            rec.fact("seq_b16", cfg.seq_len)
            rec.fact("dim_b16", cfg.dim)
            rec.fact("cls_params_b16", p["cls_token"])
            rec.fact("pos_share_b16", p["pos_embed"] / p["total"], "{:.2%}")
            big = preset(name, image_size=384)
            rec.fact("pos_params_b16_384", param_breakdown(big)["pos_embed"])
            rec.fact("seq_b16_384", big.seq_len)
            rec.fact("image", IMAGE)
            rec.fact("image_big", 384)
            rec.fact("patches_b16", cfg.num_patches)
    rec.fact("image_huge", 512)
    rec.fact("pos_params_l16_512", param_breakdown(preset("vit-l/16", image_size=512))["pos_embed"])
    rec.fact(
        "sincos_params_b16", param_breakdown(preset("vit-b/16", pos_embed="sincos2d"))["pos_embed"]
    )


#: The CLS-at-the-end trap is measured for seeds 0 .. TRAP_SEEDS - 1 (model and shuffle alike):
#: how far the wrong read-out moves depends on which patch lands at index 0, and on the weights.
TRAP_SEEDS = 10


def wrong_cls_shift(seed: int) -> float:
    """The CLS-at-the-end trap on a ViT-Ti/16 (4 blocks, no positions; weights drawn with
    ``seed``): the class token appended last, the output read at index 0, and the largest change
    of that output when the face's patches are shuffled (permutation drawn with ``seed``). The
    right read-out (class token first) changes by zero, up to float64 rounding."""
    torch.manual_seed(seed)
    m = VisionTransformer(cfg=preset("vit-ti/16", depth=4, pos_embed="none")).double().eval()
    x = face_tensor(IMAGE).double()
    perm = torch.randperm(GRID * GRID, generator=torch.Generator().manual_seed(seed))

    def wrong_readout(img):  # CLS appended at the end, output read from index 0
        z = m.patch_embed(img)
        z = torch.cat([z, m.cls_token.expand(img.shape[0], -1, -1)], dim=1)
        for blk in m.blocks:
            z, _ = blk(z)
        return m.norm(z)[:, 0]

    with torch.no_grad():
        wa, wb = wrong_readout(x), wrong_readout(shuffle_patches(x, perm, 16))
    return (wa - wb).abs().max().item()


@facts(chapter=4, id="traps")
def traps(rec):
    """The two traps: CLS appended at the end but read at 0 (over seeds 0-9); a table without
    the CLS row."""
    shifts = [wrong_cls_shift(s) for s in range(TRAP_SEEDS)]
    rec.fact("wrong_cls_seeds", TRAP_SEEDS)
    rec.fact("wrong_cls_diff", float(np.median(shifts)), "{:.2f}")
    rec.fact("wrong_cls_diff_lo", min(shifts), "{:.2f}")
    rec.fact("wrong_cls_diff_hi", max(shifts), "{:.2f}")

    # a (1, N, D) table: torch's broadcasting error, and vitbook's own check
    D, N = 768, GRID * GRID
    tokens = torch.zeros(1, N + 1, D)
    table = torch.zeros(1, N, D)
    try:
        tokens + table
        torch_msg = ""
    except RuntimeError as err:
        torch_msg = str(err)
    try:
        interpolate_pos_embed(table, GRID, 24)
        vit_msg = ""
    except ValueError as err:
        vit_msg = str(err)
    rec.fact("torch_table_error", torch_msg, text=torch_msg)
    rec.fact("vitbook_table_error", vit_msg, text=vit_msg)

    # loading such a checkpoint into the book's model: load_pretrained names the mismatch
    small = VisionTransformer(cfg=preset("vit-ti/16", depth=1))
    sd = {k: v.clone() for k, v in small.state_dict().items()}
    sd["pos_embed"] = sd["pos_embed"][:, 1:]  # the CLS row forgotten
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "forgot-cls.pth")
        torch.save(sd, path)
        try:
            load_pretrained(small, path)
            load_msg = ""
        except ValueError as err:
            load_msg = [ln.strip() for ln in str(err).splitlines() if "pos_embed:" in ln][0]
    rec.fact("load_table_error", load_msg, text=load_msg)
    return {"torch": torch_msg, "vitbook": textwrap.fill(vit_msg, 80), "load": load_msg}


def _default_epochs() -> int:
    """How many epochs the pre-training that ``pretrained_shapes_vit()`` runs lasts."""
    import inspect

    from vitbook.experiments.pretrain import pretrain

    return inspect.signature(pretrain).parameters["epochs"].default


@figure(chapter=4, id="learned-pos", size=(7.2, 2.4), trained=True, phone_size=4.6)
def learned_pos(rec):
    """The learned table of the small ViT pre-trained in Chapter 9 (8 x 8 grid, D = 64)."""
    from vitbook.runs import pretrained_shapes_vit

    run = pretrained_shapes_vit()
    model, cfg = run["model"], run["cfg"]
    gh, gw = cfg.grid
    sim = cosine_similarity_map(model.pos_embed.detach(), (gh, gw))  # (gh, gw, gh, gw)
    picks = ((0, 0), (2, 5), (4, 4), (7, 1))
    rec.fact("learned_grid", gh)
    rec.fact("learned_dim", cfg.dim)
    rec.fact("learned_n_train", run["n_train"])
    rec.fact("learned_epochs", _default_epochs())
    # same row or column versus neither, averaged over all pairs of distinct patches
    s = sim.reshape(gh * gw, gh * gw).double()
    rr, cc = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    r, c = rr.flatten(), cc.flatten()
    same = (r[:, None] == r[None, :]) | (c[:, None] == c[None, :])
    off = ~torch.eye(gh * gw, dtype=torch.bool)
    rec.fact("learned_same_line", float(s[same & off].mean()), "{:.2f}")
    rec.fact("learned_other", float(s[~same].mean()), "{:.2f}")
    return {"maps": np.stack([sim[a, b].numpy() for a, b in picks]), "picks": picks}


@learned_pos.draw
def _(data, v):
    # the chosen patch's outline on the viridis map: the light theme's strong orange in both
    # themes (the dark page's pale orange all but vanished on the map's yellow end)
    mark = plot.colors("light")["highlight"]
    fig, axes = plot.subplots(v, 1, len(data["picks"]), phone_cols=2)
    for ax, m, (r, cc) in zip(axes, data["maps"], data["picks"], strict=True):
        im = ax.imshow(m, cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
        ax.plot(cc, r, marker="s", ms=8, mfc="none", mec=mark, mew=2)
        ax.set_xticks([0, m.shape[1] - 1])
        ax.set_yticks([0, m.shape[0] - 1])
        ax.tick_params(labelsize=8, length=2)
        ax.set_title(
            plot.pick(v, f"patch (row {r}, col {cc})", f"patch ({r}, {cc})"),
            fontsize=9,
            loc="center",
        )
    cb = fig.colorbar(im, ax=axes, shrink=0.9, pad=0.02)
    cb.set_label("cosine similarity")
    cb.outline.set_visible(False)
    return fig


@facts(chapter=4, id="paper-pos-ablation")
def paper_pos_ablation(rec):
    """The paper's position-embedding ablation (appendix D.4, Table 8): ViT-B/16, ImageNet
    5-shot linear accuracy, embeddings added once at the input ("default/stem")."""
    table8 = {"none": 0.61382, "1d": 0.64206, "2d": 0.64001, "relative": 0.64032}
    for name, acc in table8.items():
        quote(rec, f"t8_{name}", acc, "{:.2%}")
    # differences of accuracies, in percentage points
    rec.fact("t8_gain_1d_over_none", 100 * (table8["1d"] - table8["none"]), "{:.1f}")
    spread = max(table8[k] for k in ("1d", "2d", "relative")) - min(
        table8[k] for k in ("1d", "2d", "relative")
    )
    rec.fact("t8_spread_with_pos", 100 * spread, "{:.2f}")
    return table8


@facts(chapter=4, id="init-sources")
def init_sources(rec):
    """How the class token and the position table start in the paper's JAX code,
    torchvision, timm (and the book's model) and vit-pytorch, and what the differences do
    before the first training step, computed on the book's ViT-B/16 and ViT-Ti/16."""
    from scipy.special import log_ndtr, ndtr

    std = 0.02  # the position table's standard deviation in JAX, torchvision and timm
    quote(rec, "init_std", std, "{:g}")
    quote(rec, "init_cls_std", 1e-6, text="1e-6")
    # timm's trunc_normal_(std=.02) keeps its default bounds a, b = -2, 2, in absolute units:
    # 100 standard deviations out, where no draw ever lands
    quote(rec, "trunc_bound", 2.0, "{:g}")
    rec.fact("trunc_sigmas", 2.0 / std, "{:.0f}")
    tail = (math.log(2) + float(log_ndtr(-2.0 / std))) / math.log(10)  # log10 P(|z| > 100)
    rec.fact("trunc_tail_log10", tail, "{:.0f}")
    torch.manual_seed(0)
    b16 = VisionTransformer(cfg=preset("vit-b/16")).eval()  # the book's init: timm's
    table = b16.pos_embed.detach()[0]  # (197, 768)
    rec.fact("trunc_draws", table.numel(), "{:,}")
    rec.fact("trunc_drawn_std", float(table.std()), "{:.4f}")
    rec.fact("trunc_drawn_max", float(table.abs().max() / std), "{:.1f}")
    # truncation at two standard deviations instead (TensorFlow's truncated normal, timm's
    # trunc_normal_tf_): 4.6% of draws redrawn, and the spread shrinks
    cut = 2 * float(ndtr(-2.0))
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)  # the standard normal density at 2
    shrink = math.sqrt(1 - 2 * 2 * phi2 / (1 - cut))
    rec.fact("tf_cut_share", cut, "{:.1%}")
    rec.fact("tf_std_factor", shrink, "{:.2f}")
    # at step 0 the class token enters block 1 as x_class + E_pos[0]: next to a position row
    # of std 0.02, timm's 1e-6 and the zeros of JAX and torchvision are the same start
    cls_norm = float(b16.cls_token.detach().norm())
    pos0_norm = float(table[0].norm())
    rec.fact("cls_norm", cls_norm, text=f"{cls_norm:.1e}".replace("e-0", "e-"))
    rec.fact("pos0_norm", pos0_norm, "{:.2f}")
    rec.fact(
        "cls_over_pos0",
        cls_norm / pos0_norm,
        text=f"{cls_norm / pos0_norm:.0e}".replace("e-0", "e-"),
    )
    torch.manual_seed(0)
    ti = VisionTransformer(cfg=preset("vit-ti/16")).double().eval()
    x = face_tensor(IMAGE).double()
    with torch.no_grad():
        before = ti(x)
        ti.cls_token.zero_()  # the JAX code's and torchvision's class token
        after = ti(x)
    change = float((before - after).abs().max())
    rec.fact("cls_zero_logit_change", change, text=f"{change:.0e}".replace("e-0", "e-"))
    rec.fact("cls_zero_logit_scale", float(before.abs().max()), "{:.2f}")
    # vit-pytorch draws both from a standard normal (std 1): its position rows are as long as
    # sqrt(D), against the std-0.02 rows and the book's patch tokens on the face
    with torch.no_grad():
        tokens = b16.patch_embed(face_tensor(IMAGE))[0]  # (196, 768), PyTorch's Conv2d init
    d = b16.cfg.dim
    patch_norm = float(tokens.norm(dim=-1).median())
    rec.fact("patch_token_norm", patch_norm, "{:.1f}")
    rec.fact("pos_row_norm", float(table.norm(dim=-1).median()), "{:.2f}")
    rec.fact("randn_row_norm", math.sqrt(d), "{:.1f}")
    rec.fact("randn_over_init_std", 1 / std, "{:.0f}")  # vit-pytorch's std 1 against 0.02
    rec.fact("pos_share_of_token", float(table.norm(dim=-1).median()) / patch_norm, "{:.0%}")
    rec.fact("randn_over_token", math.sqrt(d) / patch_norm, "{:.1f}")
    return {"cut": cut, "shrink": shrink, "cls_over_pos0": cls_norm / pos0_norm}
