"""Shared pieces of the explorers' data (``@item.export``): palette, colour maps, images.

Every explorer file carries the house palette (``vitbook.plot.THEMES``) and the colour maps
the static figures use, so that ``docs/javascripts/explorers/canvas.js`` draws with exactly the
figures' colours and no colour is typed twice.
"""

from __future__ import annotations

from typing import Any

import matplotlib
import numpy as np

from vitbook.engine import ExplorerData
from vitbook.plot import THEMES

#: Colour maps an explorer may use, by the name matplotlib gives them.
COLORMAPS = ("viridis", "RdBu_r", "inferno")


def colormap_table(name: str, n: int = 256) -> np.ndarray:
    """(n, 3) uint8: the colour map sampled at n evenly spaced points from 0 to 1."""
    rgba = matplotlib.colormaps[name](np.linspace(0.0, 1.0, n))
    return np.round(rgba[:, :3] * 255).astype(np.uint8)


def image_u8(img: np.ndarray) -> np.ndarray:
    """An (H, W, 3) image in [0, 1] as uint8 (exact for images made from 8-bit pixels)."""
    return np.clip(np.round(np.asarray(img, dtype=np.float64) * 255), 0, 255).astype(np.uint8)


def explorer_data(
    meta: dict[str, Any], arrays: dict[str, Any], parts: dict[str, ExplorerData] | None = None
) -> ExplorerData:
    """``ExplorerData`` with the palette in ``meta.palette`` and ``cmap_<name>`` arrays added
    (to the main file; ``parts``, the files the page loads when it needs them, as they are)."""
    meta = {**meta, "palette": THEMES, "colormaps": list(COLORMAPS)}
    arrays = {**arrays, **{f"cmap_{name}": colormap_table(name) for name in COLORMAPS}}
    return ExplorerData(meta, arrays, dict(parts or {}))
