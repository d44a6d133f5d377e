"""Chapter 6 explorer: hover a patch of the face and see each hand-set head's attention row.

The page receives the chapter's 196 hand-built tokens (``face_tokens``) and the qkv weights of
``hand_set_heads``; it computes each head's row for the patch under the pointer (queries
scaled as the model's ``Attention`` scales them) and that row's attention distance (as
``vitbook.analysis.mean_attention_distance`` measures it, for one query). The static figure is
the chapter's own four-head figure.
"""

from __future__ import annotations

import matplotlib
import numpy as np

from vitbook import plot
from vitbook.engine import ExplorerData, Recorder, figure

# every name this explorer takes from the chapter's own module, in one place
from vitbook.figures.ch06_multi_head import (
    GRID,
    HEAD_NAMES,
    PATCH,
    QUERY,
    face_tokens,
    four_heads,
    hand_set_heads,
)

#: The photograph is sent at half size (the maps are 14 x 14 patches; it is only a backdrop).
IMAGE_SIDE = GRID * PATCH // 2


@figure(chapter=6, id="heads", size=(7.2, 4.3), phone_size=7.6)
def heads(rec):
    """The chapter's four hand-set heads (computed there) and the data the page needs."""
    d = four_heads.compute(Recorder(6))  # its facts are recorded by the chapter's own item
    tokens, _ = face_tokens()
    attn = hand_set_heads()
    return d | {"tokens": tokens.numpy(), "qkv_w": attn.qkv.weight.detach().numpy(),
                "qkv_b": attn.qkv.bias.detach().numpy(), "num_heads": attn.heads}  # fmt: skip


@heads.draw
def _(d, v):
    return four_heads.draw_fn(d, v)


@heads.export
def _(d):
    from PIL import Image

    img = Image.fromarray(np.round(d["image"] * 255).astype(np.uint8))
    small = np.asarray(img.resize((IMAGE_SIDE, IMAGE_SIDE), Image.Resampling.BICUBIC))
    rgb = matplotlib.colormaps["viridis"](np.linspace(0, 1, 256))[:, :3]
    return ExplorerData(
        meta={
            "grid": GRID,
            "patch": PATCH,
            "heads": d["num_heads"],
            "head_names": list(HEAD_NAMES),
            "query": QUERY,
            "dist_mean": [float(x) for x in d["dist"]],
            "palette": plot.THEMES,
        },
        arrays={
            "tokens": d["tokens"].astype(np.float32),
            "qkv_w": d["qkv_w"].astype(np.float32),
            "qkv_b": d["qkv_b"].astype(np.float32),
            "image": small.astype(np.uint8),
            "viridis": np.round(rgb * 255).astype(np.uint8),
        },
    )


__all__ = ["heads"]
