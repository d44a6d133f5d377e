"""Chapter 5 explorer: the attention calculator.

Four tokens (CLS and three patches), D = 4, one head, with the chapter's hand-set projections;
or the worked example's one query, three keys and three values. The reader edits the inputs and
the page recomputes scores, scaling, softmax weights and outputs. The static figure is the
chapter's four-token figure; the explorer data carries the chapter's inputs and projections
(imported from ``ch05_attention``, the module that computes the chapter's figures).
"""

from __future__ import annotations

import matplotlib
import numpy as np

from vitbook import plot
from vitbook.engine import ExplorerData, figure

# every name this explorer takes from the chapter's own module, in one place
from vitbook.figures.ch05_attention import (
    W_K4,
    W_Q4,
    W_V4,
    WORKED_K,
    WORKED_Q,
    WORKED_V,
    X4,
    four_tokens,
    four_tokens_attention,
)

TOKENS = ["CLS", "p1", "p2", "p3"]


@figure(chapter=5, id="attention-calculator", size=(7.2, 5.0), phone_size=10.4)
def attention_calculator(rec):
    """The four tokens through the book's attention (the same numbers as the chapter's figure)."""
    return {k: t.numpy() for k, t in four_tokens_attention().items()}


@attention_calculator.draw
def _(d, v):
    return four_tokens.draw_fn(d, v)


@attention_calculator.export
def _(d):
    return ExplorerData(
        meta={
            "tokens": TOKENS,
            "x": X4,
            "w_q": W_Q4,
            "w_k": W_K4,
            "w_v": W_V4,
            "worked": {"q": WORKED_Q, "k": WORKED_K, "v": WORKED_V},
            "palette": plot.THEMES,
        },
        arrays={"viridis": viridis()},
    )


def viridis() -> np.ndarray:
    """matplotlib's viridis as 256 RGB rows (uint8), the colour map of the book's weights."""
    rgb = matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3]
    return np.round(rgb * 255).astype(np.uint8)
