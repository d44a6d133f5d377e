"""Chapter 7 explorer: GELU against ReLU, read off by pointer or keys.

The curves, slopes and GELU's minimum are the chapter's own (``ch07_block.gelu_vs_relu``,
torch's exact-erf GELU with autograd slopes and a Brent search for the minimum); the page only
draws them and reads values at the point the reader picks.
"""

from __future__ import annotations

import numpy as np

from vitbook import plot
from vitbook.engine import ExplorerData, Recorder, figure

# every name this explorer takes from the chapter's own module, in one place
from vitbook.figures.ch07_block import gelu_vs_relu


@figure(chapter=7, id="gelu-relu", size=(7.2, 3.2), phone_size=6.6)
def gelu_relu(rec):
    """The chapter's GELU and ReLU curves, slopes and GELU's minimum (computed there)."""
    return gelu_vs_relu.compute(Recorder(7))  # its facts are recorded by the chapter's item


@gelu_relu.draw
def _(d, v):
    return gelu_vs_relu.draw_fn(d, v)


@gelu_relu.export
def _(d):
    xm, ym = d["min"]
    return ExplorerData(
        meta={"min": {"x": xm, "y": ym}, "palette": plot.THEMES},
        arrays={
            k: np.asarray(d[k], dtype=np.float32)
            for k in ("x", "gelu", "relu", "gelu_slope", "relu_slope")
        },
    )
