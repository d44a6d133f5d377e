"""Hand-set weights for Chapter 0's tiny face ViT, chosen so that every tensor can be read.

Chapter 0 runs the real model (``preset("face")``: 224x224 input, P = 32, so 7x7 = 49 patches,
D = 8, 2 heads of 4 dims, 2 blocks, MLP 32 wide, 2 classes) on the face photograph. An untrained
model has random weights and its tensors mean nothing; a trained one is not available offline.
So the weights are *set by hand*, from the image itself, as follows (every choice is a
function of the image and ``seed`` alone: the same inputs give the same bytes):

- ``patch_embed.proj``: the image's own top-8 principal components of its 49 flattened patches
  (``patch_pca``); the bias subtracts the mean patch, so token i's feature k is patch i's score
  on component k (exactly what PCA would print).
- ``cls_token``: e_1 - e_5, a fixed vector (the same for every image, like a learned one) that
  asks head 1 for patches high on component 1 and head 2 for patches low on component 5 (after
  LayerNorm it is exactly 2 e_1 - 2 e_5).
- ``pos_embed``: the fixed 2D sin-cos table of ``vitbook.analysis.sincos_2d`` for the 7x7 grid,
  with a zero row for the CLS token (as in MAE and the model's ``sincos2d`` option).
- ``blocks.i.attn.qkv``: selectors with zero bias; head 1's query, key and value are features
  1-4 of the normalised token, head 2's are features 5-8 (``gain`` scales the queries).
- ``blocks.i.attn.proj``: the identity with zero bias; each head writes back into the features
  it read.
- ``blocks.i.norm1/norm2`` and ``norm``: PyTorch's defaults (weight 1, bias 0), untouched.
- ``blocks.i.mlp``: seeded random, as at initialisation (timm: trunc-normal std 0.02, zero bias).
- ``head``: seeded random in the same way; its two logits mean nothing.

A trained ViT learns all of these numbers from data; Chapter 10 looks at what it learns.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from vitbook.analysis import pca, sincos_2d
from vitbook.model import VisionTransformer
from vitbook.patches import patchify

__all__ = ["HANDSET", "SEEDED", "handset", "patch_pca", "pca_reconstruct"]

#: Parameter names set by hand from the image (or fixed by construction), and seeded random.
HANDSET = ("patch_embed.proj", "cls_token", "pos_embed", "attn.qkv", "attn.proj")
SEEDED = ("mlp.fc1", "mlp.fc2", "head")


# --8<-- [start:patch-pca]
def patch_pca(patches: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Principal components of a set of flattened patches, computed in float64 with an SVD.

    Args:
        patches: (N, d) flattened patches, e.g. ``patchify(img, P)[0]`` with d = C P P.
        k: how many components to keep (at most min(N, d)).

    Returns:
        (components (k, d), orthonormal rows, largest variance first; mean patch (d,);
        share of the total variance each component explains (k,)). The sign of each component
        is fixed so that its entries sum to a positive number (SVD leaves it arbitrary).
    """
    return pca(patches, k, sign="sum")  # centre, SVD in float64, fix the signs
    # --8<-- [end:patch-pca]


# --8<-- [start:pca-reconstruct]
def pca_reconstruct(
    patch: torch.Tensor, comps: torch.Tensor, mean: torch.Tensor, k: int
) -> torch.Tensor:
    """Rebuild one flattened patch from its scores on the first ``k`` components.

    x_k = mean + sum_{j<k} ((x - mean) . c_j) c_j; with every component, x_k = x.
    """
    c = comps[:k]  # (k, d)
    scores = c @ (patch.double() - mean)  # (k,): the patch's embedding in this basis
    return mean + scores @ c  # (d,)
    # --8<-- [end:pca-reconstruct]


# --8<-- [start:handset]
@torch.no_grad()
def handset(
    model: VisionTransformer, image: torch.Tensor, *, seed: int = 0, gain: float = 1.0
) -> dict[str, np.ndarray]:
    """Set the face model's weights by hand from ``image`` (see the module docstring).

    Args:
        model: a ``VisionTransformer`` built from ``preset("face")`` (D = 8, 2 heads, P = 32).
        image: the image it will look at, (1, C, H, W) in [0, 1].
        seed: seeds the random MLP and head weights (a private generator, not the global one).
        gain: multiplies each head's queries; above 1 sharpens the attention.

    Returns:
        what was set from the image: "components" (D, C*P*P), "mean" (C*P*P,), "share" (D,).
        The model is changed in place.
    """
    cfg = model.cfg
    D, P, H = cfg.dim, cfg.patch_size, cfg.heads
    if cfg.pos_embed != "learned" or D % H or D != 8 or H != 2:
        raise ValueError(
            f"handset expects preset('face') (D 8, 2 heads, learned positions); got {cfg};"
            " build the model with VisionTransformer(cfg=preset('face'))"
        )
    # 1. Patch embedding: token = components @ (patch - mean), written as Conv2d weight and bias.
    comps, mean, share = patch_pca(patchify(image, P)[0], D)  # (D, C*P*P), (C*P*P,), (D,)
    proj = model.patch_embed.proj
    proj.weight.copy_(comps.reshape(D, cfg.in_chans, P, P))  # patches flatten as (C, P, P)
    proj.bias.copy_(-(comps @ mean))
    # 2. Class token: a fixed question for each head (e_1 for head 1, -e_5 for head 2).
    model.cls_token.zero_()
    model.cls_token[0, 0, 0], model.cls_token[0, 0, D // 2] = 1.0, -1.0
    # 3. Position table: fixed 2D sin-cos for the patches, zero for the class token.
    model.pos_embed.copy_(torch.cat([torch.zeros(1, D), sincos_2d(*cfg.grid, D)])[None])
    # 4. Attention: Q = K = V = the head's own slice of features; output projection = identity.
    eye = torch.eye(D)
    for blk in model.blocks:
        blk.attn.qkv.weight.copy_(torch.cat([gain * eye, eye, eye]))  # (3D, D): rows q, k, v
        blk.attn.qkv.bias.zero_()
        blk.attn.proj.weight.copy_(eye)
        blk.attn.proj.bias.zero_()
    # 5. MLP and head: seeded random, as at initialisation.
    g = torch.Generator().manual_seed(seed)
    for m in [*(b.mlp for b in model.blocks), model.head]:
        for lin in m.modules():
            if isinstance(lin, nn.Linear):
                nn.init.trunc_normal_(lin.weight, std=0.02, generator=g)
                nn.init.zeros_(lin.bias)
    return {
        "components": comps.float().numpy(),
        "mean": mean.float().numpy(),
        "share": share.float().numpy(),
    }
    # --8<-- [end:handset]
