"""The engine records, per figure file, its width in inches and its smallest font size, the
numbers a browser test needs to compute how large figure text is displayed on a phone."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from vitbook.engine import build  # noqa: E402


def test_text_metrics_give_width_and_smallest_visible_font() -> None:
    fig, ax = plt.subplots(figsize=(7.2, 3.0))
    ax.set_title("title", fontsize=12)
    ax.set_xlabel("x", fontsize=9)
    ax.tick_params(labelsize=6.5)
    ax.text(0.5, 0.5, "hidden", fontsize=3, visible=False)
    ax.text(0.5, 0.5, "  ", fontsize=2)
    try:
        fig.canvas.draw()  # tick labels exist once drawn (render() measures after savefig)
        m = build.text_metrics(fig)
    finally:
        plt.close(fig)
    assert m == {"width_in": 7.2, "min_font_pt": 6.5}
