"""Chapter 2, From image to sequence: the face cut into patches, and what patch size costs."""

from __future__ import annotations

import textwrap

import numpy as np
import torch
from matplotlib import patheffects

from vitbook import plot
from vitbook.data.face import face, face_tensor
from vitbook.engine import facts, figure
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


def token_table(image: int = IMAGE, sizes=(4, 7, 8, 14, 16, 28, 32, 56)) -> dict[int, dict]:
    """Tokens, flattened length and attention-matrix entries per head for each patch size."""
    out = {}
    for p in sizes:
        rows, cols = check_divisible(image, image, p)
        n = rows * cols
        out[p] = {"tokens": n, "flat": p * p * CHANNELS, "entries": (n + 1) ** 2}
    return out


@figure(chapter=2, id="token-counts", size=(7.2, 3.4))
def token_counts(rec):
    """Sequence length and attention entries against patch size at 224 x 224."""
    table = token_table()
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
    plot.label_line(ax, ps[-1], entries[-1], "attention entries\nper head, (N+1)²", c["orange"])
    plot.label_line(ax, ps[-1], tokens[-1], "tokens N", c["blue"])
    for p, name, dx, ha in (
        (14, "ViT-H/14", -10, "right"),
        (16, "ViT-B/16", 10, "left"),
        (32, "ViT-B/32", 10, "left"),
    ):
        # H/14 below-left of its point, the others above-right: no label crosses the line
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
    shown = plot.pick(v, ps, [p for p in ps if p not in (7, 14, 28)])  # phone: no crowding
    ax.set_xticks(shown, labels=[str(p) for p in shown])
    ax.minorticks_off()
    ax.set_xlim(3.5, 110)
    ax.set_xlabel("patch size P (pixels) on a 224×224 image")
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
