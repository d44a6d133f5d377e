"""Chapter 2's explorer: choose the patch size P and watch the grid, the raster order, the token
count N and the attention entries change; hover a patch for its index and flattened values."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from vitbook import plot
from vitbook.data.face import face, face_tensor
from vitbook.engine import figure
from vitbook.explore import explorer_data, image_u8
from vitbook.figures.ch02_patches import CHANNELS, IMAGE, token_table
from vitbook.patches import patchify

#: How many of a patch's flattened values the explorer prints.
FIRST_VALUES = 6


def patch_sizes(image: int = IMAGE, low: int = 8, high: int = 56) -> list[int]:
    """The chapter's patch sizes from ``low`` to ``high`` that divide the image."""
    return [p for p in token_table(image) if low <= p <= high and image % p == 0]


@figure(chapter=2, id="patch-size", size=(7.2, 1.9), phone_size=3.8)
def patch_size(rec):
    """The face at every patch size the explorer offers, with N and the attention entries."""
    sizes = patch_sizes()
    table = token_table(IMAGE)
    x = face_tensor(IMAGE)
    first = {p: patchify(x, p)[0][:, :FIRST_VALUES].numpy() for p in sizes}  # (N, FIRST_VALUES)
    return {"sizes": sizes, "table": {p: table[p] for p in sizes}, "first": first,
            "image": face(IMAGE)}  # fmt: skip


@patch_size.draw
def _(d, v):
    c = plot.colors(v)
    sizes = d["sizes"]
    fig, axes = plot.subplots(v, 1, len(sizes), phone_cols=3)
    for ax, p in zip(axes, sizes, strict=True):
        plot.show_image(ax, d["image"])
        g = IMAGE // p
        for k in range(1, g):
            ax.axhline(k * p - 0.5, color=c["bg"], lw=0.5, alpha=0.7)
            ax.axvline(k * p - 0.5, color=c["bg"], lw=0.5, alpha=0.7)
        ax.add_patch(Rectangle((-0.5, -0.5), p, p, fill=False, ec=c["highlight"], lw=1.5))
        t = d["table"][p]
        ax.set_title(f"P = {p}\nN = {t['tokens']}", fontsize=8.5, loc="center")
    return fig


@patch_size.export
def _(d):
    sizes = d["sizes"]
    return explorer_data(
        {
            "image": IMAGE,
            "channels": CHANNELS,
            "sizes": sizes,
            "initial": 16 if 16 in sizes else sizes[0],  # ViT-B/16's patch size
            "tokens": [d["table"][p]["tokens"] for p in sizes],
            "flat": [d["table"][p]["flat"] for p in sizes],
            "entries": [d["table"][p]["entries"] for p in sizes],
            "first_values": FIRST_VALUES,
            "digits": 3,
        },
        {"image": image_u8(d["image"])},
    )
