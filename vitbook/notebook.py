"""Plots in the book's notebooks that follow the reader's theme and carry alt text.

``show(draw, alt)`` calls ``draw(theme)`` twice, under the book's light and dark styles
(``vitbook.plot.rc``), and displays both figures as one HTML output whose images carry ``alt``.
On the site the page's theme picks the variant (the same ``vb-light`` / ``vb-dark`` classes as the
chapters' figures); in Jupyter or Colab the light one shows unless the browser prefers dark. The
style's smallest text is ``MIN_FONT_PT`` and figures are at most ``MAX_WIDTH_IN`` wide, so that
text reads at 9 CSS pixels or more on a phone 390 pixels wide.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt

from vitbook import plot

MIN_FONT_PT = 10.0
MAX_WIDTH_IN = 5.4
DPI = 150

#: Without the site's stylesheet (Jupyter, Colab) show one variant, by the browser's preference.
_STYLE = (
    "<style>.vb-nb-plot img{max-width:100%;height:auto}.vb-nb-plot .vb-dark{display:none}"
    "@media (prefers-color-scheme:dark){.vb-nb-plot .vb-light{display:none}"
    ".vb-nb-plot .vb-dark{display:inline}}</style>"
)


def style(theme: str) -> dict[str, Any]:
    """The book's plot style for ``theme`` with every text size at least ``MIN_FONT_PT``."""
    rc = plot.rc(theme)
    for key in ("axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
                "legend.fontsize", "font.size"):  # fmt: skip
        rc[key] = max(float(rc[key]), MIN_FONT_PT)
    return rc


def render(draw: Callable[[str], Any], alt: str) -> str:
    """The HTML that :func:`show` displays: both variants as PNG data, each with ``alt``."""
    if not alt.strip():
        raise ValueError("a plot needs alt text: say what it shows")
    images = []
    for theme in ("light", "dark"):
        with plt.rc_context(style(theme)):
            fig = draw(theme)
            width = fig.get_size_inches()[0]
            if width > MAX_WIDTH_IN + 1e-9:
                plt.close(fig)
                raise ValueError(f"a notebook plot is at most {MAX_WIDTH_IN} in wide, not {width}")
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
            plt.close(fig)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        images.append(
            f'<img class="vb-{theme} vb-skip" src="data:image/png;base64,{data}" '
            f'alt="{html.escape(alt)}" style="width:{round(width * 100)}px">'
        )
    return f'<div class="vb-nb-plot">{_STYLE}{"".join(images)}</div>'


def show(draw: Callable[[str], Any], alt: str) -> None:
    """Display ``draw(theme)``'s figure in the notebook, in both themes, with alt text."""
    from IPython.display import HTML, display

    display(HTML(render(draw, alt)))
