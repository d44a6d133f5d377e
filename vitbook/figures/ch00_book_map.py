"""The landing page's map of the book: every chapter and lab, the reading order, the parts.

Registered under chapter 0 (the landing page has no chapter number of its own); the page
places it as an unnumbered figure. The plan below must match the ``nav`` of ``mkdocs.yml``;
``tests/test_back_matter.py`` checks that it does.
"""

from __future__ import annotations

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from vitbook import plot
from vitbook.engine import facts, figure
from vitbook.model import preset

# --8<-- [start:plan]
#: (page, short title for the map, what the reader computes there, part)
PLAN: list[tuple[str, str, str, str]] = [
    ("00-see-it-in-action.md", "0  See it in action", "one face, every tensor", "start"),
    ("01-why-transformers.md", "1  Why transformers?", "CNN bias vs attention", "start"),
    ("02-patches.md", "2  Patches", "N = HW / P²", "model"),
    ("03-patch-embedding.md", "3  Patch embedding", "linear map = Conv2d", "model"),
    ("04-cls-and-position.md", "4  CLS and position", "z₀ = [cls; xE] + pos", "model"),
    ("05-self-attention.md", "5  Self-attention", "softmax(QKᵀ/√d) V", "model"),
    ("06-multi-head-attention.md", "6  Multi-head", "heads of D / h dims", "model"),
    ("07-encoder-block.md", "7  Encoder block", "LN, MSA, MLP, residual", "model"),
    ("08-whole-model.md", "8  Whole model", "params and FLOPs", "model"),
    ("09-training.md", "9  Training", "digits > 95 %, fine-tune", "trained"),
    ("10-inside-a-trained-vit.md", "10  Inside a ViT", "rollout, distances", "trained"),
    ("lab-tinyvit8.py", "Lab: TinyViT8", "build it, train it", "practice"),
    ("practice.py", "Practice", "five short experiments", "practice"),
]
# --8<-- [end:plan]

PARTS = {
    "start": ("Start here", "blue"),
    "model": ("The model, piece by piece", "orange"),
    "trained": ("A trained ViT", "green"),
    "practice": ("Do it yourself", "purple"),
}

#: Where each box sits, in grid cells (column, row); rows run top to bottom.
LAYOUT = {
    0: (0, 0), 1: (1, 0),
    2: (0, 1), 3: (1, 1), 4: (2, 1), 5: (3, 1),
    6: (3, 2), 7: (2, 2), 8: (1, 2), 9: (0, 2),
    10: (0, 3), 11: (1, 3), 12: (2, 3),
}  # fmt: skip


@figure(chapter=0, id="book-map", size=(7.2, 4.4), phone_size=7.6)
def book_map(rec):
    """The chapters in reading order, grouped into parts, with the arrows a reader follows."""
    boxes = []
    for i, (page, title, idea, part) in enumerate(PLAN):
        col, row = LAYOUT[i]
        boxes.append(
            {"page": page, "title": title, "idea": idea, "part": part, "col": col, "row": row}
        )
    # reading order: chapter after chapter, then the lab, then the practice tasks
    arrows = [(i, i + 1) for i in range(len(PLAN) - 1)]
    rec.fact("map_chapters", sum(b["part"] != "practice" for b in boxes))
    rec.fact("map_notebooks", sum(b["part"] == "practice" for b in boxes))
    return {"boxes": boxes, "arrows": arrows}


@book_map.draw
def _(data, v):
    c = plot.colors(v)
    fig = plot.new_figure(v, layout=None)
    ax = fig.add_axes((0, 0, 1, 1))
    phone = plot.is_phone(v)
    # on a phone: two columns, in reading order
    place = {
        id(b): divmod(k, 2) if phone else (b["row"], b["col"]) for k, b in enumerate(data["boxes"])
    }
    rows = max(r for r, _ in place.values()) + 1
    ax.set_xlim(-0.05, 2.05 if phone else 4.05)
    ax.set_ylim(rows + 0.15, -0.75 if phone else -0.45)
    ax.axis("off")
    w, h = (0.92, 0.7) if phone else (0.85, 0.62)

    def centre(b):
        r, col = place[id(b)]
        return col + 0.5, r + 0.5

    for b in data["boxes"]:
        x, y = centre(b)
        colour = c[PARTS[b["part"]][1]]
        ax.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - h / 2),
                w,
                h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                fc=colour,
                alpha=0.14,
                ec="none",
            )
        )
        ax.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - h / 2),
                w,
                h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                fc="none",
                ec=colour,
                lw=1.6,
            )
        )
        ax.text(
            x,
            y - 0.09,
            b["title"],
            ha="center",
            va="center",
            fontsize=8.5,
            fontweight="bold",
            color=c["fg"],
        )
        ax.text(x, y + 0.14, b["idea"], ha="center", va="center", fontsize=8.5, color=c["muted"])
    for a, z in data["arrows"]:
        ba, bz = data["boxes"][a], data["boxes"][z]
        (xa, ya), (xz, yz) = centre(ba), centre(bz)
        if ya == yz:  # same row: from the side of one box to the side of the next
            s = 1 if xz > xa else -1
            start, end = (xa + s * (w / 2 + 0.01), ya), (xz - s * (w / 2 + 0.01), yz)
        else:  # down to the next row
            start, end = (xa, ya + h / 2 + 0.03), (xz, yz - h / 2 - 0.03)
        ax.add_patch(
            FancyArrowPatch(
                start,
                end,
                arrowstyle="-|>",
                mutation_scale=12,
                color=c["muted"],
                lw=1.3,
                connectionstyle="arc3,rad=0" if xa == xz or ya == yz else "arc3,rad=-0.15",
            )
        )
    # the parts, as a key across the top
    x, y = 0.05, -0.31 - (0.3 if phone else 0)
    for k, (name, colour) in enumerate(PARTS.values()):
        if phone and k == 2:  # the key in two rows
            x, y = 0.05, y + 0.3
        ax.add_patch(
            FancyBboxPatch(
                (x, y),
                0.09,
                0.13,
                boxstyle="round,pad=0.01",
                fc=c[colour],
                alpha=0.5,
                ec=c[colour],
            )
        )
        ax.text(x + 0.14, y + 0.065, name, va="center", fontsize=8.5, color=c["fg"])
        x += 0.14 + (0.065 if phone else 0.047) * len(name) + 0.15
    return fig


@facts(chapter=0, id="notation-example")
def notation_example(rec):
    """The sizes of ViT-B/16 at 224 pixels: the example column of the notation page."""
    cfg = preset("vit-b/16")
    h, w = cfg.image_hw
    sizes = {
        "c": cfg.in_chans,
        "h": h,
        "w": w,
        "p": cfg.patch_size,
        "n": cfg.num_patches,
        "t": cfg.seq_len,
        "d": cfg.dim,
        "l": cfg.depth,
        "heads": cfg.heads,
        "dh": cfg.head_dim,
        "m": cfg.mlp_dim,
        "k": cfg.num_classes,
    }
    for name, value in sizes.items():
        rec.fact(f"nt_{name}", value, "{}")
    return sizes
