"""Chapter 2, From image to sequence: the face cut into patches, and what patch size costs."""

from __future__ import annotations

import textwrap

import numpy as np
import torch
from matplotlib import patheffects

from vitbook import calc, plot
from vitbook.data.face import face, face_tensor
from vitbook.engine import facts, figure
from vitbook.model import preset
from vitbook.patches import check_divisible, patchify

SIZES = (8, 16, 32)
IMAGE = 224
CHANNELS = 3


@figure(chapter=2, id="patch-grids", size=(7.2, 2.9), phone_size=4.8)
def patch_grids(rec):
    """The face cut at P = 8, 16 and 32, each with its raster order."""
    rows = {}
    for p in SIZES:
        r, c = check_divisible(IMAGE, IMAGE, p)
        rows[p] = (r, c)
    return {"image": face(IMAGE), "grids": rows}


@patch_grids.draw
def _(data, v):
    c = plot.colors(v)
    fig, axes = plot.subplots(v, 1, len(SIZES), phone_cols=2)
    for ax, p in zip(axes, SIZES, strict=True):
        rows, cols = data["grids"][p]
        plot.patch_grid(
            ax,
            data["image"],
            p,
            v,
            # at P = 8 a cell is too small for a readable number: say it below instead
            numbers={8: False, 16: plot.pick(v, "corners", False), 32: True}[p],
            line_width=0.5 if p == 8 else 0.8,
        )
        ax.set_title(
            plot.pick(
                v, f"P = {p}: {rows}×{cols} = {rows * cols} patches", f"P = {p}: {rows}×{cols}"
            ),
            fontsize=10,
        )
        if p == 8 or (p == 16 and plot.is_phone(v)):
            sep = plot.pick(v, " … ", " …\n")
            ax.set_xlabel(f"patch 0 top left{sep}patch {rows * cols - 1} bottom right", fontsize=8)
        if p == 32:
            continue
        # the raster path through the first two rows: each row left to right (arrowheads point
        # the way the sequence runs), then a dashed jump back to the start of the next row

        def centre(r: int, col: int, p: int = p) -> tuple[float, float]:
            return col * p + p / 2 - 0.5, r * p + p / 2 - 0.5

        halo = [patheffects.withStroke(linewidth=3.2, foreground="black", alpha=0.6)]
        for r in range(2):
            ax.annotate(
                "",
                xy=centre(r, cols - 1),
                xytext=centre(r, 0),
                arrowprops={"arrowstyle": "-|>", "color": c["highlight"], "lw": 1.6,
                            "mutation_scale": 11, "path_effects": halo},
            )  # fmt: skip
        (x0, y0), (x1, y1) = centre(0, cols - 1), centre(1, 0)
        ax.plot([x0, x1], [y0, y1], color=c["highlight"], lw=1.0, ls=(0, (3, 2)), alpha=0.9)
    return fig


@figure(chapter=2, id="patch-sequence", size=(7.2, 3.0), phone_size=5.2)
def patch_sequence(rec):
    """The P = 32 patches laid out as the sequence the transformer reads."""
    seq = patchify(face_tensor(IMAGE), 32)[0]  # (49, 3*32*32)
    rec.fact("flat_len_p32", seq.shape[1])
    rec.fact("tokens_p32_seq", seq.shape[0])
    patches = seq.reshape(-1, CHANNELS, 32, 32).permute(0, 2, 3, 1).numpy()  # (49, 32, 32, 3)
    return {"patches": patches, "vector": seq[24].numpy()}


@patch_sequence.draw
def _(data, v):
    c = plot.colors(v)
    fig = plot.new_figure(v, layout=None)
    phone = plot.is_phone(v)
    grid = fig.add_gridspec(
        2,
        1,
        height_ratios=[0.55, 1.0] if not phone else [1.0, 0.9],
        left=0.16 if phone else 0.08,
        right=0.97 if phone else 0.98,
        top=0.96 if phone else 0.95,
        bottom=0.13 if phone else 0.15,
        hspace=0.35 if not phone else 0.3,
    )
    per_row = 13 if phone else 25
    n = len(data["patches"])
    strip = grid[0].subgridspec(-(-n // per_row), per_row, wspace=0.1, hspace=0.5)
    for i in range(n):
        ax = fig.add_subplot(strip[i // per_row, i % per_row])
        plot.show_image(ax, data["patches"][i])
        ax.set_title(
            str(i),
            fontsize=7,
            pad=1,
            fontweight="normal",
            color=c["highlight"] if i == 24 else c["fg"],
            loc="center",
        )
        if i == 24:
            for s in ax.spines.values():
                s.set_visible(True)
                s.set_edgecolor(c["highlight"])
                s.set_linewidth(2)
    ax = fig.add_subplot(grid[1])
    vec = data["vector"]
    ax.plot(np.arange(len(vec)), vec, lw=0.6, color=c["highlight"])
    ax.set_xlim(0, len(vec))
    ax.set_ylim(0, 1)
    for k, name in enumerate(("red", "green", "blue")):
        ax.axvspan(k * 1024, (k + 1) * 1024, color=c[("red", "green", "blue")[k]], alpha=0.08, lw=0)
        ax.text(
            k * 1024 + 512,
            1.02,
            plot.pick(v, f"{name} channel", name),
            ha="center",
            va="bottom",
            fontsize=8,
            color=c["muted"],
        )
    ax.set_xlabel(
        plot.pick(
            v,
            "position in the flattened patch (channel, row, column)",
            "position in the flattened patch\n(channel, row, column)",
        )
    )
    ax.set_ylabel("pixel value")
    return fig


def divisors(n: int) -> list[int]:
    """Every patch size that cuts an n-pixel side without remainder, 1 and n included."""
    return [p for p in range(1, n + 1) if n % p == 0]


def token_table(image: int = IMAGE, sizes=(4, 7, 8, 14, 16, 28, 32, 56)) -> dict[int, dict]:
    """Tokens, flattened length and attention-matrix entries per head for each patch size."""
    out = {}
    for p in sizes:
        rows, cols = check_divisible(image, image, p)
        n = rows * cols
        out[p] = {"tokens": n, "flat": p * p * CHANNELS, "entries": (n + 1) ** 2}
    return out


@figure(chapter=2, id="token-counts", size=(7.2, 3.6))
def token_counts(rec):
    """Sequence length and attention entries against every patch size that divides 224."""
    table = token_table(sizes=divisors(IMAGE))
    rec.fact("n_divisors", len(table))
    rec.fact("p_min", min(table))
    rec.fact("p_max", max(table))
    for p in SIZES:
        rec.fact(f"tokens_p{p}", table[p]["tokens"])
        rec.fact(f"flat_p{p}", table[p]["flat"])
        rec.fact(f"entries_p{p}", table[p]["entries"])
    rec.fact("tokens_p14", table[14]["tokens"])
    rec.fact("entries_p14", table[14]["entries"])
    rec.fact("grid_p16", IMAGE // 16)
    rec.fact("image", IMAGE)
    rec.fact("ratio_entries_8_vs_16", table[8]["entries"] / table[16]["entries"], "{:.1f}")
    rec.fact("ratio_entries_16_vs_32", table[16]["entries"] / table[32]["entries"], "{:.1f}")
    rec.fact("ratio_entries_14_vs_16", table[14]["entries"] / table[16]["entries"], "{:.2f}")
    return table


@token_counts.draw
def _(table, v):
    c = plot.colors(v)
    fig, ax = plot.subplots(v)
    ps = sorted(table)
    tokens = [table[p]["tokens"] for p in ps]
    entries = [table[p]["entries"] for p in ps]
    ax.plot(ps, entries, "o-", color=c["orange"])
    ax.plot(ps, tokens, "o-", color=c["blue"])
    # direct labels where the two lines are far apart: above one, below the other
    plot.label_line(ax, 112, table[112]["entries"] * 2, "attention entries\nper head, (N+1)²",
                    c["orange"], va="bottom")  # fmt: skip
    if plot.is_phone(v):  # the lines are steeper: above the blue one, at the left
        plot.label_line(ax, 2, table[2]["tokens"] * 4, "tokens N", c["blue"], va="bottom")
    else:
        plot.label_line(ax, 56, table[56]["tokens"] / 3, "tokens N", c["blue"], va="top")
    # H/14 below-left of its point, the others above-right: no label crosses a line (the
    # phone has no room for H/14's, which the text gives)
    marks = [
        (1, "pixels (P = 1)", 10, "left"),
        (14, "ViT-H/14", -10, "right"),
        (16, "ViT-B/16", 10, "left"),
        (32, "ViT-B/32", 10, "left"),
    ]
    for p, name, dx, ha in marks[:1] + marks[2:] if plot.is_phone(v) else marks:
        dy, va = (-8, "top") if ha == "right" else (8, "bottom")
        ax.annotate(
            f"{name}: {table[p]['tokens']:,} tokens,\n{table[p]['entries']:,} entries",
            (p, table[p]["entries"]),
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            va=va,
            fontsize=8,
            color=c["fg"],
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # 7 sits next to 8, 14 next to 16, 28 next to 32: their labels go one line lower
    lower = (7, 14, 28)
    crowded = (2, 7, 14, 28, 112)  # on the phone they are left out, with 2 and 112
    shown = plot.pick(v, ps, [p for p in ps if p not in crowded])
    ax.set_xticks(shown, labels=[f"\n{p}" if p in lower else str(p) for p in shown])
    ax.minorticks_off()
    ax.set_xlim(0.8, 400)
    ax.set_ylim(0.5, entries[0] * 40)  # room above the P = 1 point for its label
    ax.set_xlabel(
        plot.pick(
            v,
            "patch size P (pixels) on a 224×224 image: every divisor of 224",
            "patch size P (pixels), 224×224 image",
        )
    )
    ax.set_ylabel("count (log scale)")
    ax.grid(True, which="major", axis="y")
    return fig


@figure(chapter=2, id="not-divisible", size=(7.2, 3.0), phone_size=6.2)
def not_divisible(rec):
    """The trap: P = 30 on a 224-pixel image, and what a bare strided convolution does."""
    p = 30
    try:
        check_divisible(IMAGE, IMAGE, p)
        message = ""
    except ValueError as err:
        message = str(err)
    conv = torch.nn.Conv2d(CHANNELS, 4, kernel_size=p, stride=p)
    with torch.no_grad():
        out = conv(face_tensor(IMAGE))
    kept = out.shape[-1] * p
    rec.fact("bad_patch", p)
    rec.fact("bad_grid", out.shape[-1])
    rec.fact("bad_kept", kept)
    rec.fact("bad_dropped", IMAGE - kept)
    rec.fact("bad_dropped_frac", 1 - (kept / IMAGE) ** 2, "{:.0%}")
    rec.fact("bad_message", message, text=message)
    return {"image": face(IMAGE), "patch": p, "kept": kept, "message": message}


@not_divisible.draw
def _(data, v):
    c = plot.colors(v)
    fig, (ax, ax2) = plot.subplots(v, 1, 2, width_ratios=[1, 1.25], phone_cols=1)
    p, kept, img = data["patch"], data["kept"], data["image"]
    plot.show_image(ax, img)
    for k in range(1, kept // p + 1):
        ax.axhline(k * p - 0.5, color="white", lw=0.7)
        ax.axvline(k * p - 0.5, color="white", lw=0.7)
    band = {"facecolor": c["red"], "alpha": 0.6, "hatch": "///", "edgecolor": "white", "lw": 0}
    ax.axvspan(kept - 0.5, IMAGE - 0.5, **band)
    ax.axhspan(kept - 0.5, IMAGE - 0.5, **band)
    ax.set_xlim(-0.5, IMAGE - 0.5)
    ax.set_ylim(IMAGE - 0.5, -0.5)
    ax.set_title(f"P = {p}: the red band is never seen", fontsize=10)
    ax2.axis("off")
    ax2.text(
        0.0,
        0.95,
        "Conv2d(kernel = stride = 30)",
        fontweight="bold",
        va="top",
        transform=ax2.transAxes,
    )
    ax2.text(
        0.0,
        0.80,
        f"keeps a {kept // p}×{kept // p} grid ({kept}×{kept} px),\n"
        f"drops {IMAGE - kept} px on the right and bottom,\nwithout any warning.",
        va="top",
        transform=ax2.transAxes,
        color=c["fg"],
    )
    ax2.text(
        0.0, 0.40, "vitbook refuses instead:", fontweight="bold", va="top", transform=ax2.transAxes
    )
    ax2.text(
        0.0,
        0.27,
        textwrap.fill(data["message"], 38),
        va="top",
        transform=ax2.transAxes,
        family="monospace",
        fontsize=8.5,
        color=c["red"],
    )
    return fig


@facts(chapter=2, id="vit-h-patch")
def vit_h_patch(rec):
    """Why ViT-H uses P = 14: the largest patch-size change that keeps 224 divisible."""
    table = token_table()
    big = token_table(384, sizes=(16,))[16]
    rec.fact("tokens_384", big["tokens"])
    rec.fact("seq_384", big["tokens"] + 1)
    rec.fact("h14_extra_tokens_pct", table[14]["tokens"] / table[16]["tokens"] - 1, "{:.0%}")
    return table


# --8<-- [start:pixel-index]
def pixel_to_token(c: int, row: int, col: int, patch: int, width: int) -> tuple[int, int]:
    """Where pixel (c, row, col) of a (C, H, W) image lands in ``patchify``'s output
    (B, N, C*P*P): the patch i (raster order) and the position inside its flattened vector.
    Every index counts from 0, as in PyTorch."""
    m, u = divmod(row, patch)  # the patch's row in the grid, the pixel's row inside it
    n, v = divmod(col, patch)  # the patch's column, the pixel's column inside it
    i = m * (width // patch) + n  # raster order: row by row, left to right
    return i, c * patch * patch + u * patch + v  # (C, P, P) order: channel first
    # --8<-- [end:pixel-index]


#: The pixel the chapter follows: green channel, inside patch 105 at P = 16 (the corner of
#: the mouth, Chapter 3's patch).
PIXEL = (1, 117, 121)


@facts(chapter=2, id="pixel-index")
def pixel_index(rec):
    """One pixel of the face, found in patchify's output by the index formula (Eq. 2.3)."""
    c, row, col = PIXEL
    p = 16
    x = face_tensor(IMAGE)  # (1, 3, 224, 224)
    i, f = pixel_to_token(c, row, col, p, IMAGE)
    seq = patchify(x, p)  # (1, 196, 768)
    if not torch.equal(seq[0, i, f], x[0, c, row, col]):
        raise AssertionError(f"pixel {PIXEL} is not at patch {i}, position {f}")
    m, u = divmod(row, p)
    n, v = divmod(col, p)
    rec.fact("px_c", c)
    rec.fact("px_channel", ("red", "green", "blue")[c])
    rec.fact("px_row", row)
    rec.fact("px_col", col)
    rec.fact("px_m", m)
    rec.fact("px_u", u)
    rec.fact("px_n", n)
    rec.fact("px_v", v)
    rec.fact("px_patch", i)
    rec.fact("px_pos", f)
    rec.fact("px_flat", seq.shape[-1])
    # the same pixel if the patch were flattened (P, P, C), pixel by pixel with its colours
    rec.fact("px_pos_channels_last", (u * p + v) * CHANNELS + c)
    rec.fact("px_pos_no_channel", u * p + v)
    return {"patch": i, "pos": f}


@facts(chapter=2, id="why-patches")
def why_patches(rec):
    """What attention over pixels would cost: ViT-B with one token per pixel (P = 1), from
    the calculator, against ViT-B/16; and Cordonnier et al.'s 2 x 2 patches."""
    pixels = preset("vit-b/16", patch_size=1)
    b16 = preset("vit-b/16")
    m_pix, m_b16 = calc.macs(pixels), calc.macs(b16)
    entries = calc.token_pairs(pixels)  # one head's attention matrix
    rec.fact("pix_tokens", pixels.num_patches)
    rec.fact("pix_entries", entries, "{:,}")
    rec.fact("pix_entries_bn", entries / 1e9, "{:.1f}")
    rec.fact("pix_gb_head", 4 * entries / 1e9, "{:.0f}")  # float32, one head, one layer
    rec.fact("pix_gb_layer", 4 * entries * pixels.heads / 1e9, "{:,.0f}")
    rec.fact("b16_heads", pixels.heads)
    attn = m_pix["attn_qk"] + m_pix["attn_av"]  # the two products that grow with T^2
    rec.fact("pix_attn_tmacs", attn / 1e12, "{:.0f}")
    rec.fact("b16_gmacs", m_b16["total"] / 1e9, "{:.1f}")
    rec.fact("pix_attn_over_b16", attn / m_b16["total"], "{:,.0f}")
    rec.fact("pix_entries_over_b16", entries / calc.token_pairs(b16), "{:,.0f}")
    # Cordonnier et al. (2020): full self-attention on 2 x 2 patches of 32 x 32 CIFAR-10 images
    cifar = token_table(32, sizes=(2,))[2]
    rec.fact("cifar_image", 32)
    rec.fact("cifar_tokens", cifar["tokens"])
    at224 = token_table(IMAGE, sizes=(2,))[2]
    rec.fact("p2_tokens_224", at224["tokens"], "{:,}")
    rec.fact("p2_entries_224_m", at224["entries"] / 1e6, "{:.0f}")
    return {"pixel_tokens": pixels.num_patches, "entries": entries}
