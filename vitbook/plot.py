"""The house style and the drawing helpers every chapter reuses.

Figures are drawn on a light and on a dark page, each at the text column's width and at a
phone's (``v.phone``: 3.8 in, larger text, no text under 8 pt). Every helper takes the
variant ``v`` (``v.dark`` says which) and an ``ax``, draws, and returns what it drew,
in the manner of matplotlib's annotated-heatmap gallery example. Few colours,
direct labels instead of legends, units on every axis, text readable at phone width:
:func:`is_phone`, :func:`pick` and ``subplots(..., phone_cols=)`` help a figure lay itself
out again for the phone (fewer columns, fewer ticks, shorter labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

#: This module only draws: computations never call it, so the engine leaves it out of their
#: keys (editing the house style redraws every figure and recomputes nothing). Keep it so.
DRAWING_ONLY = True

#: Page colours of Material's default (light) and slate (dark) schemes, and the inks on them.
THEMES: dict[str, dict[str, str]] = {
    "light": {
        "bg": "#ffffff",
        "fg": "#1f2328",
        "muted": "#6e7781",
        "grid": "#d8dee4",
        "blue": "#1f6feb",
        "orange": "#d9480f",
        "green": "#1a7f37",
        "purple": "#8250df",
        "red": "#cf222e",
        "yellow": "#9a6700",
        "highlight": "#d9480f",
    },
    "dark": {
        "bg": "#1e2129",
        "fg": "#e6edf3",
        "muted": "#9ba6b2",
        "grid": "#3d444d",
        "blue": "#58a6ff",
        "orange": "#ffa657",
        "green": "#56d364",
        "purple": "#d2a8ff",
        "red": "#ff7b72",
        "yellow": "#e3b341",
        "highlight": "#ffa657",
    },
}
#: The order in which series take colours.
CYCLE = ("blue", "orange", "green", "purple", "red", "yellow")


def colors(v: Any) -> dict[str, str]:
    """The palette of variant ``v`` (anything with ``.dark``; a string "dark"/"light" works too)."""
    dark = v.dark if hasattr(v, "dark") else v == "dark"
    return THEMES["dark" if dark else "light"]


def is_phone(v: Any) -> bool:
    """Whether ``v`` is a phone variant (a narrow figure, 3.8 in)."""
    return bool(getattr(v, "phone", False))


def sequence(v: Any, n: int) -> list[Any]:
    """``n`` colours in order (viridis), the end that would vanish on the page's background
    left out: for lines that stand for an ordered quantity (learning rates, depths)."""
    lo, hi = (0.3, 1.0) if colors(v)["bg"] != "#ffffff" else (0.0, 0.85)
    cmap = plt.get_cmap("viridis")
    return [cmap(lo + (hi - lo) * i / max(1, n - 1)) for i in range(n)]


def pick(v: Any, desktop: Any, phone: Any) -> Any:
    """``phone`` for a phone variant, ``desktop`` otherwise: ``pick(v, "learning rate", "lr")``."""
    return phone if is_phone(v) else desktop


#: Font sizes (points) at the text column's width, and at a phone's (larger against the
#: narrower figure; nothing under 8 pt).
FONTS = {
    False: {"title": 11, "label": 10, "tick": 9, "legend": 9, "base": 10},
    True: {"title": 9.5, "label": 9, "tick": 8, "legend": 8, "base": 9},
}


def rc(v: Any) -> dict[str, Any]:
    c = colors(v)
    f = FONTS[is_phone(v)]
    return {
        "figure.facecolor": c["bg"],
        "axes.facecolor": c["bg"],
        "savefig.facecolor": c["bg"],
        "text.color": c["fg"],
        "axes.labelcolor": c["fg"],
        "axes.edgecolor": c["muted"],
        "xtick.color": c["muted"],
        "ytick.color": c["muted"],
        "xtick.labelcolor": c["fg"],
        "ytick.labelcolor": c["fg"],
        "grid.color": c["grid"],
        "grid.linewidth": 0.6,
        "axes.prop_cycle": matplotlib.cycler(color=[c[k] for k in CYCLE]),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": f["title"],
        "axes.titleweight": "bold",
        "axes.titlelocation": "left",
        "axes.labelsize": f["label"],
        "xtick.labelsize": f["tick"],
        "ytick.labelsize": f["tick"],
        "legend.fontsize": f["legend"],
        "legend.frameon": False,
        "font.size": f["base"],
        "lines.linewidth": pick(v, 2.0, 1.6),
        "lines.markersize": pick(v, 5, 4),
        "image.cmap": "viridis",
        "figure.dpi": 100,
    }


def subplots(
    v: Any, nrows: int = 1, ncols: int = 1, *, phone_cols: int | None = None, **kwargs: Any
) -> tuple[Figure, Any]:
    """A new figure in the house style at the variant's size (``v.size`` in inches).

    With ``phone_cols``, a phone variant lays the ``nrows * ncols`` panels out in rows of
    ``phone_cols`` instead (in reading order; a short last row's panels widen to fill it when
    they can), and returns them in the shape the desktop layout has, so the drawing code is
    the same for both. (``width_ratios``/``height_ratios`` apply to the desktop grid only.)

    The style is applied to the global rcParams, so that every artist drawn afterwards
    inherits it; the engine restores rcParams after each drawing.
    """
    plt.rcParams.update(rc(v))
    kwargs.setdefault("layout", "constrained")
    size = getattr(v, "size", None) or (7.0, 4.0)
    if not is_phone(v) or not phone_cols or phone_cols >= ncols:
        return plt.subplots(nrows, ncols, figsize=size, **kwargs)
    n = nrows * ncols
    rows = -(-n // phone_cols)
    squeeze = kwargs.pop("squeeze", True)
    share = {k: kwargs.pop(k, False) for k in ("sharex", "sharey")}
    gridspec_kw = dict(kwargs.pop("gridspec_kw", {}))
    subplot_kw = kwargs.pop("subplot_kw", {})
    for ratios in ("width_ratios", "height_ratios"):  # they describe the desktop grid
        kwargs.pop(ratios, None)
        gridspec_kw.pop(ratios, None)
    fig = plt.figure(figsize=size, **kwargs)
    grid = fig.add_gridspec(rows, phone_cols, **gridspec_kw)
    flat: list[Axes] = []
    for i in range(n):
        r, col = divmod(i, phone_cols)
        last = n - r * phone_cols  # panels in this row, if it is the last (short) one
        span = phone_cols // last if last < phone_cols and phone_cols % last == 0 else 1
        first = flat[0] if flat else None
        flat.append(
            fig.add_subplot(
                grid[r, col * span : (col + 1) * span],
                sharex=first if share["sharex"] else None,
                sharey=first if share["sharey"] else None,
                **subplot_kw,
            )
        )
    axes = np.empty(n, dtype=object)
    axes[:] = flat
    axes = axes.reshape(nrows, ncols)
    if squeeze:
        axes = axes.item() if n == 1 else axes.squeeze()
    return fig, axes


def new_figure(v: Any, **kwargs: Any) -> Figure:
    """An empty figure in the house style, for layouts built with ``add_gridspec``."""
    plt.rcParams.update(rc(v))
    kwargs.setdefault("layout", "constrained")
    return plt.figure(figsize=getattr(v, "size", None) or (7.0, 4.0), **kwargs)


def text_color_for(value: float, cmap: Any, norm: Any) -> str:
    """Black or white, whichever reads better on the colour ``value`` maps to."""
    r, g, b, _ = cmap(norm(value))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#ffffff"


def heatmap(
    ax: Axes,
    data: np.ndarray,
    v: Any,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    fmt: str | None = "{:.2f}",
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = False,
    fontsize: float = 9,
) -> Any:
    """A labelled heatmap with the value written in every cell (``fmt=None`` for none)."""
    data = np.asarray(data, dtype=float)
    im = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(
        range(data.shape[1]),
        labels=col_labels if col_labels is not None else [str(i) for i in range(data.shape[1])],
    )
    ax.set_yticks(
        range(data.shape[0]),
        labels=row_labels if row_labels is not None else [str(i) for i in range(data.shape[0])],
    )
    ax.tick_params(length=0)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    if fmt is not None:
        cm = im.get_cmap()
        for (i, j), value in np.ndenumerate(data):
            ax.text(
                j,
                i,
                fmt.format(value),
                ha="center",
                va="center",
                fontsize=fontsize,
                color=text_color_for(value, cm, im.norm),
            )
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax, shrink=0.8)
        cb.outline.set_visible(False)
    return im


def show_image(ax: Axes, image: np.ndarray, *, title: str | None = None) -> Any:
    """An image without ticks or spines (HxW greyscale or HxWx3 in [0, 1])."""
    img = ax.imshow(
        image, cmap="gray" if np.ndim(image) == 2 else None, vmin=0, vmax=1, interpolation="nearest"
    )
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    if title:
        ax.set_title(title)
    return img


def patch_grid(
    ax: Axes,
    image: np.ndarray,
    patch: int,
    v: Any,
    *,
    numbers: bool | str = True,
    highlight: int | None = None,
    line_width: float = 0.8,
) -> list[Any]:
    """Draw ``image`` cut into ``patch``-pixel squares, with each patch's raster index.

    Args:
        numbers: True to number every patch, "corners" for only the first and last few
            (for fine grids), False for none.
        highlight: a patch index to outline in the highlight colour.
    Returns:
        The artists drawn (image, lines, labels).
    """
    c = colors(v)
    h, w = image.shape[:2]
    rows, cols = h // patch, w // patch
    artists = [show_image(ax, image)]
    for r in range(1, rows):
        artists.append(ax.axhline(r * patch - 0.5, color="white", lw=line_width, alpha=0.9))
    for col in range(1, cols):
        artists.append(ax.axvline(col * patch - 0.5, color="white", lw=line_width, alpha=0.9))
    n = rows * cols
    shown = range(n) if numbers is True else ([0, 1, 2, n - 1] if numbers == "corners" else [])
    fs = max(5.0, min(9.0, 120.0 / max(rows, cols)))
    for idx in shown:
        r, col = divmod(idx, cols)
        artists.append(
            ax.text(
                col * patch + patch / 2 - 0.5,
                r * patch + patch / 2 - 0.5,
                str(idx),
                ha="center",
                va="center",
                fontsize=fs,
                color="white",
                bbox={"boxstyle": "round,pad=0.15", "fc": "black", "alpha": 0.55, "lw": 0},
            )
        )
    if highlight is not None:
        r, col = divmod(highlight, cols)
        artists.append(
            ax.add_patch(
                Rectangle(
                    (col * patch - 0.5, r * patch - 0.5),
                    patch,
                    patch,
                    fill=False,
                    ec=c["highlight"],
                    lw=2.5,
                )
            )
        )
    return artists


def attention_overlay(
    ax: Axes,
    image: np.ndarray,
    weights: np.ndarray,
    *,
    alpha: float = 0.6,
    cmap: str = "inferno",
    title: str | None = None,
) -> Any:
    """Draw a (rows, cols) map of weights upsampled over ``image`` (nearest, so patches show)."""
    h, w = image.shape[:2]
    weights = np.asarray(weights, dtype=float)
    show_image(ax, image, title=title)
    return ax.imshow(
        weights,
        cmap=cmap,
        alpha=alpha,
        extent=(-0.5, w - 0.5, h - 0.5, -0.5),
        interpolation="nearest",
    )


def label_line(ax: Axes, x: float, y: float, text: str, color: str, **kwargs: Any) -> Any:
    """A direct label at the end of a line, instead of a legend."""
    kwargs.setdefault("va", "center")
    kwargs.setdefault("ha", "left")
    kwargs.setdefault("fontsize", 9)
    return ax.annotate(
        text, (x, y), xytext=(4, 0), textcoords="offset points", color=color, **kwargs
    )


def log_x(ax: Axes, ticks: Sequence[float]) -> None:
    """A log-scale x axis whose ticks are ``ticks``, written plainly (0.001, not 10⁻³)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{t:g}" for t in ticks])
