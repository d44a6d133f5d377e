"""Chapter 10's "What came next" numbers (vitbook/figures/ch10_next.py): registers, MLP-Mixer's
token mixing, MoCo v3's frozen patch projection and ViT-G/14, each checked against an
independent count (a PyTorch module's parameters, a formula written out) or a model built here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from vitbook.calc import macs, param_breakdown
from vitbook.engine import Recorder
from vitbook.figures import ch10_next as nxt
from vitbook.model import VisionTransformer, preset

DOC = Path(__file__).resolve().parents[1] / "docs" / "10-inside-a-trained-vit.md"


@pytest.fixture(scope="module")
def facts() -> dict:
    rec = Recorder(10)
    nxt.what_came_next(rec)
    return {k: v["value"] for k, v in rec.facts.items()}


def _block_macs(t: int, d: int, m: int) -> int:
    """One ViT block written out: qkv 3TD^2, Q K^T and A V T^2 D each, proj TD^2, MLP 2TDM."""
    return 3 * t * d * d + 2 * t * t * d + t * d * d + 2 * t * d * m


def test_encoder_macs_rescale_the_calculator_exactly():
    b16 = preset("vit-b/16")
    m = macs(b16)
    assert nxt.encoder_macs(b16, b16.seq_len) == m["total"] - m["patch_embed"] - m["head"]
    for t in (b16.seq_len + nxt.REGISTERS, 196, 50):
        assert nxt.encoder_macs(b16, t) == b16.depth * _block_macs(t, 768, 3072)
    attn = nxt.attention_macs_per_block(b16, 196)
    assert attn == 4 * 196 * 768**2 + 2 * 196**2 * 768


def test_registers(facts):
    assert facts["reg_tokens_with"] == 197 + 4 == facts["reg_tokens"] + facts["reg_n"]
    assert facts["reg_entries_with"] == 201**2
    assert facts["reg_params"] == 4 * 768
    # the entries grow with the square of the tokens, the blocks' MACs by less
    growth = pytest.approx(201**2 / 197**2 - 1)
    assert facts["reg_macs_growth"] < facts["reg_entries_growth"] == growth


def test_token_mixing_mlp_against_torch_layers(facts):
    s, w, c = 196, 384, 768
    mlp = nn.Sequential(nn.Linear(s, w), nn.GELU(), nn.Linear(w, s))
    assert facts["mixer_tok_params"] == sum(p.numel() for p in mlp.parameters())
    # shared by the channels: one (C, S) table through it costs 2 S W C multiply-adds
    assert nxt.token_mixing_macs(s, w, c) == 2 * s * w * c
    x = torch.randn(1, s, c)
    assert mlp(x.transpose(1, 2)).transpose(1, 2).shape == x.shape
    assert facts["mixer_attn_params"] == param_breakdown(preset("vit-b/16"))["attn"]
    assert facts["mixer_params_ratio"] > 10 and facts["mixer_macs_ratio"] > 1


class _Mixer(nn.Module):
    """MLP-Mixer in the layout of vit_jax/models_mixer.py, in PyTorch, to count its weights."""

    def __init__(self, *, image, patch, dim, depth, tokens_mlp, channels_mlp, classes):
        super().__init__()
        s = (image // patch) ** 2
        self.stem = nn.Conv2d(3, dim, patch, patch)
        self.blocks = nn.ModuleList(
            nn.ModuleList(
                [
                    nn.LayerNorm(dim),
                    nn.Linear(s, tokens_mlp),
                    nn.Linear(tokens_mlp, s),
                    nn.LayerNorm(dim),
                    nn.Linear(dim, channels_mlp),
                    nn.Linear(channels_mlp, dim),
                ]
            )  # fmt: skip
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)


def test_mixer_count_matches_a_built_mixer_and_the_paper():
    small = {"dim": 32, "depth": 2, "tokens_mlp": 16, "channels_mlp": 64, "patch": 8}
    model = _Mixer(image=32, classes=10, **small)
    built = sum(p.numel() for p in model.parameters())
    assert nxt.mixer_params(image=32, classes=10, **small) == built
    b16 = nxt.MIXER_B16
    head = b16["dim"] * 1000 + 1000
    # the paper's Table 1 lists Mixer-B/16 at 59M parameters without its head
    assert round((nxt.mixer_params(**b16) - head) / 1e6) == nxt.MIXER_PAPER["b16_params_m"]


def test_square_multiples():
    assert nxt.is_square_multiple(196, 196) and nxt.is_square_multiple(784, 196)
    assert not nxt.is_square_multiple(576, 196) and not nxt.is_square_multiple(392, 196)


def test_freezing_the_patch_projection_removes_its_parameters_from_training():
    """MoCo v3's stop_grad_conv1 on the book's model (a small one, same code as ViT-B/16)."""
    cfg = dataclasses.replace(preset("vit-ti/16"), num_classes=0, pos_embed="sincos2d")
    model = VisionTransformer(cfg=cfg)
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    for p in model.patch_embed.proj.parameters():
        p.requires_grad = False
    after = sum(p.numel() for p in model.parameters() if p.requires_grad)
    pb = param_breakdown(cfg)
    assert before == pb["total"] and before - after == pb["patch_embed"]


def test_moco_facts(facts):
    b16 = preset("vit-b/16")
    assert facts["moco_frozen"] == param_breakdown(b16)["patch_embed"]
    assert facts["moco_patch_numbers"] == 16 * 16 * 3 == facts["moco_dim"] == facts["moco_rank"]
    w = nxt.random_patch_projection(b16, seed=1)
    bound = (6 / (768 + 768)) ** 0.5
    assert w.abs().max() <= bound and torch.linalg.matrix_rank(w) == 768


def test_vit_g14(facts):
    cfg = dataclasses.replace(preset("vit-h/14"), dim=1664, depth=48, mlp_ratio=8192 / 1664)
    assert cfg.mlp_dim == 8192
    assert facts["g14_params"] == param_breakdown(cfg)["total"]
    assert facts["h14_params_next"] == 632_045_800  # REFERENCE-FACTS.md
    assert 1.8e9 < facts["g14_params"] < 2.0e9  # the abstract's "two billion parameters"


def test_every_fact_reaches_the_page(facts):
    quoted = set(re.findall(r"ch10\.(\w+)", DOC.read_text(encoding="utf-8")))
    assert not set(facts) - quoted, sorted(set(facts) - quoted)
