"""vitbook.notebook.show: notebook plots in both themes, with alt text, readable on a phone."""

from __future__ import annotations

import base64
import io
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from vitbook import notebook, plot


def line(theme: str):
    fig, ax = plt.subplots(figsize=(5.0, 3.0))
    ax.plot([0, 1, 2], [2.3, 1.0, 0.4])
    ax.set(xlabel="step", ylabel="loss", title="Loss")
    return fig


def images(html: str) -> dict[str, tuple[str, np.ndarray]]:
    out = {}
    for theme, data, alt in re.findall(
        r'<img class="vb-(\w+) vb-skip" src="data:image/png;base64,([^"]+)" alt="([^"]*)"', html
    ):
        png = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
        out[theme] = (alt, np.asarray(png))
    return out


def test_both_themes_are_drawn_on_their_own_page_colour_with_the_alt_text():
    got = images(notebook.render(line, "A falling loss curve & its steps."))
    assert set(got) == {"light", "dark"}
    for theme, (alt, pixels) in got.items():
        assert alt == "A falling loss curve &amp; its steps."
        page = plot.THEMES[theme]["bg"]
        corner = "#" + "".join(f"{int(v):02x}" for v in pixels[2, 2])
        assert corner == page, theme
    assert got["light"][1].shape == got["dark"][1].shape


def test_every_text_size_reads_at_9_px_on_a_390_px_phone():
    for theme in ("light", "dark"):
        rc = notebook.style(theme)
        sizes = [rc[k] for k in rc if k.endswith(("size", "fontsize")) and "marker" not in k]
        assert min(sizes) >= notebook.MIN_FONT_PT
    # shown at most the column's width: 390 px less Material's margins
    column_px = 390 - 2 * 16
    assert notebook.MIN_FONT_PT * column_px / (notebook.MAX_WIDTH_IN * 72) >= 9


def test_a_plot_without_alt_text_or_wider_than_a_phone_allows_is_refused():
    with pytest.raises(ValueError, match="alt text"):
        notebook.render(line, "  ")

    def wide(theme):
        return plt.figure(figsize=(9, 3))

    with pytest.raises(ValueError, match="wide"):
        notebook.render(wide, "A wide figure.")
