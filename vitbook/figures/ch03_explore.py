"""Chapter 3's explorer: a patch's embedding in the face's own PCA basis, and the patch rebuilt
from its first k components (slider k), with the reconstruction error.

The basis is the one of Chapter 3's ``pca-rebuild`` figure (``patch_pca`` of the 196 patches of
16 x 16 x 3 pixels). The first ``K_MAX`` components travel to the browser as int16 with one
scale per component (the data must stay small); the explorer rebuilds from those, and this module
computes the errors from the same rounded basis, so that the numbers match.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib import patheffects
from matplotlib.patches import Rectangle

from vitbook import plot
from vitbook.data.face import face, face_tensor
from vitbook.engine import figure
from vitbook.explore import explorer_data, image_u8
from vitbook.figures.ch03_patch_embedding import CHOSEN, IMAGE, KS, P
from vitbook.handset import patch_pca
from vitbook.patches import patchify

#: The most components the explorer offers (the chapter's KS up to this one).
K_MAX = 64
INT16_MAX = 32767


def quantized_basis(k_max: int = K_MAX) -> dict[str, np.ndarray]:
    """The face's first ``k_max`` components as int16 with a per-component scale, and the mean."""
    patches = patchify(face_tensor(IMAGE), P)[0].double()  # (196, 768)
    comps, mean, share = patch_pca(patches, k_max)
    scale = comps.abs().amax(dim=1) / INT16_MAX  # (k,)
    q = torch.round(comps / scale[:, None]).to(torch.int16)
    return {
        "patches": patches.numpy(),
        "q": q.numpy(),
        "scale": scale.float().numpy(),
        "mean": mean.float().numpy(),
        "share": share.float().numpy(),
    }


def dequantize(b: dict[str, np.ndarray]) -> np.ndarray:
    """(k, d) float64: the components as the browser rebuilds them (float32 scale times int16)."""
    return b["q"].astype(np.float64) * b["scale"].astype(np.float32).astype(np.float64)[:, None]


def rebuild(b: dict[str, np.ndarray], index: int, k: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(scores (k,), rebuilt patch (d,), RMS pixel error) of patch ``index`` from k components."""
    comps = dequantize(b)[:k]
    x = b["patches"][index]
    mean = b["mean"].astype(np.float64)
    scores = comps @ (x - mean)
    approx = mean + scores @ comps
    return scores, approx, float(np.sqrt(((x - approx) ** 2).mean()))


@figure(chapter=3, id="pca-embedding", size=(7.2, 1.9), phone_size=4.2)
def pca_embedding(rec):
    """Patch ``CHOSEN``'s embedding and rebuilds at the chapter's k values up to ``K_MAX``."""
    b = quantized_basis()
    ks = [k for k in KS if k <= K_MAX]
    rebuilt = {k: rebuild(b, CHOSEN, k) for k in ks}
    return {"basis": b, "ks": ks, "rebuilt": rebuilt, "image": face(IMAGE)}


@pca_embedding.draw
def _(d, v):
    c = plot.colors(v)
    shown = [k for k in d["ks"] if k in (1, 4, 16, K_MAX)]
    fig, axes = plot.subplots(v, 1, len(shown) + 2, phone_cols=3)

    def img(x):
        return np.clip(x.reshape(3, P, P).transpose(1, 2, 0), 0, 1)

    plot.show_image(axes[0], d["image"])
    r, col = divmod(CHOSEN, IMAGE // P)
    axes[0].add_patch(  # a dark halo keeps the outline visible on skin, in light and dark mode
        Rectangle(
            (col * P - 0.5, r * P - 0.5), P, P, fill=False, ec=c["highlight"], lw=2.0,
            path_effects=[patheffects.withStroke(linewidth=3.6, foreground="black", alpha=0.8)],
        )
    )  # fmt: skip
    axes[0].set_title(f"patch {CHOSEN}", fontsize=8.5, loc="center")
    plot.show_image(axes[1], img(d["basis"]["patches"][CHOSEN]))
    axes[1].set_title("original", fontsize=8.5, loc="center")
    for ax, k in zip(axes[2:], shown, strict=True):
        _, approx, err = d["rebuilt"][k]
        plot.show_image(ax, img(approx))
        ax.set_title(f"k = {k}", fontsize=8.5, loc="center")
        ax.set_xlabel(f"RMS {err:.3f}", fontsize=8)
    return fig


@pca_embedding.export
def _(d):
    b = d["basis"]
    return explorer_data(
        {
            "image": IMAGE,
            "patch": P,
            "channels": 3,
            "grid": IMAGE // P,
            "k_max": int(b["q"].shape[0]),
            "ks": d["ks"],
            "initial_k": 8,
            "chosen": CHOSEN,
            "digits": 3,
        },
        {
            "image": image_u8(d["image"]),
            "q": b["q"],
            "scale": b["scale"],
            "mean": b["mean"],
            "share": b["share"],
        },
    )
