"""Which parameters decay and how fast each layer learns (vitbook/train.py ``_param_groups``):
timm's rule for weight decay, a frozen backbone for head-only fine-tuning, BEiT's layer-wise
learning-rate decay."""

from __future__ import annotations

import pytest
import torch

from vitbook.model import VisionTransformer, ViTConfig
from vitbook.train import _param_groups

CFG = ViTConfig(image_size=8, patch_size=4, in_chans=1, dim=16, depth=3, heads=2, num_classes=3)


def groups_by_name(model, **kw):
    names = {id(p): n for n, p in model.named_parameters()}
    out = _param_groups(model, head_prefix="head", **kw)
    return {names[id(p)]: g for g in out for p in g["params"]}


def test_weight_decay_leaves_biases_norms_and_the_embedding_tables_alone() -> None:
    model = VisionTransformer(cfg=CFG)
    by = groups_by_name(model, lr=1e-3, head_lr=None, weight_decay=0.05)
    no_decay = {n for n, g in by.items() if g["weight_decay"] == 0.0}
    assert {"pos_embed", "cls_token", "norm.weight", "norm.bias", "head.bias",
            "blocks.0.norm1.weight", "blocks.2.attn.qkv.bias"} <= no_decay  # fmt: skip
    decay = set(by) - no_decay
    matrices = {n for n, p in model.named_parameters() if p.ndim >= 2}
    assert decay == matrices - {"pos_embed", "cls_token"}


def test_a_step_with_no_gradient_shrinks_only_the_decayed_weights() -> None:
    torch.manual_seed(0)
    model = VisionTransformer(cfg=CFG)
    opt = torch.optim.AdamW(_param_groups(model, lr=0.1, head_lr=None, head_prefix="head",
                                          weight_decay=0.5))  # fmt: skip
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    after = dict(model.named_parameters())
    assert torch.allclose(
        after["blocks.0.mlp.fc1.weight"], before["blocks.0.mlp.fc1.weight"] * 0.95
    )
    for name in ("pos_embed", "cls_token", "blocks.0.norm1.weight", "blocks.0.mlp.fc1.bias"):
        assert torch.equal(after[name], before[name]), name


def test_a_frozen_backbone_leaves_only_the_head_to_train() -> None:
    model = VisionTransformer(cfg=CFG)
    by = groups_by_name(model, lr=0.0, head_lr=1e-2, weight_decay=0.0)
    assert set(by) == {"head.weight", "head.bias"}
    assert all(g["lr"] == 1e-2 for g in by.values())
    assert not model.blocks[0].attn.qkv.weight.requires_grad and model.head.weight.requires_grad


def test_layer_decay_slows_the_layers_nearest_the_input() -> None:
    model = VisionTransformer(cfg=CFG)
    d = 0.5
    by = groups_by_name(model, lr=1.0, head_lr=2.0, weight_decay=0.05, layer_decay=d)
    # three blocks: embeddings at d^4, block i at d^(3 - i), the final norm at 1, the head apart
    assert by["pos_embed"]["lr"] == by["patch_embed.proj.weight"]["lr"] == pytest.approx(d**4)
    for i in range(3):
        assert by[f"blocks.{i}.attn.qkv.weight"]["lr"] == pytest.approx(d ** (3 - i))
    assert by["norm.weight"]["lr"] == 1.0 and by["head.weight"]["lr"] == 2.0
    assert all(g["base_lr"] == g["lr"] for g in by.values())  # the schedule scales these
