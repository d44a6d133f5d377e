"""TinyViT8 on scikit-learn's digits, with the book's initialisation or PyTorch's defaults."""

from __future__ import annotations

import torch
from torch import nn

from vitbook.data.digits import digits_split
from vitbook.experiments._pin import deterministic
from vitbook.model import VisionTransformer, preset
from vitbook.train import fit


def pytorch_default_init(model: VisionTransformer) -> VisionTransformer:
    """Re-initialise ``model`` as the lab's hand-written TinyViT is initialised: every Linear,
    Conv2d and LayerNorm with PyTorch's own default (``reset_parameters``: Kaiming-uniform
    weights, uniform biases), the position table normal with std 0.02, the class token zero."""
    for m in model.modules():
        if isinstance(m, nn.Linear | nn.Conv2d | nn.LayerNorm):
            m.reset_parameters()
    with torch.no_grad():
        model.pos_embed.normal_(0.0, 0.02)
        model.cls_token.zero_()
    return model


# --8<-- [start:digits-run]
def digits_run(epochs: int = 300, seed: int = 0, init: str = "book") -> dict:
    """TinyViT8 on the digits: Adam 3e-4, full-batch, 80/20 split (random_state 42).
    ``init``: ``"book"`` (timm's scheme, ``vitbook.model``) or ``"pytorch"`` (the lab's)."""
    xtr, ytr, xte, yte = digits_split(test_size=0.2, random_state=42)
    torch.manual_seed(seed)
    model = VisionTransformer(cfg=preset("tinyvit8"))
    if init == "pytorch":
        pytorch_default_init(model)
    with deterministic():
        hist = fit(model, (xtr, ytr), (xte, yte), epochs=epochs, batch_size=None, lr=3e-4,
                   optimizer="adam", seed=seed, desc="digits")  # fmt: skip
    return {"model": model, "history": hist, "n_train": len(ytr), "n_test": len(yte)}
    # --8<-- [end:digits-run]
