"""Chapter 6: the split into heads, the fused projection, parameters, the four heads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from vitbook.analysis import mean_attention_distance
from vitbook.calc import param_breakdown
from vitbook.engine import Recorder
from vitbook.figures.ch06_multi_head import (
    QUERY,
    face_tokens,
    fused_qkv,
    fused_vs_separate,
    hand_set_heads,
    qkv_columns,
    split_heads_trace,
)
from vitbook.model import Attention, preset

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


def test_split_heads_shapes_and_module() -> None:
    steps, diff = split_heads_trace(B=2, T=197, D=768, heads=12)
    shapes = [tuple(t.shape) for _, t in steps]
    assert shapes == [
        (2, 197, 768), (2, 197, 2304), (2, 197, 3, 12, 64), (3, 2, 12, 197, 64),
        (2, 12, 197, 64), (2, 12, 197, 197), (2, 12, 197, 64), (2, 197, 768), (2, 197, 768),
    ]  # fmt: skip
    assert diff < 1e-6


def test_qkv_columns_layout() -> None:
    cols = qkv_columns(768, 12)
    assert cols.shape == (3, 12, 64)
    assert cols[0, 0, 0] == 0 and cols[0, 0, -1] == 63
    assert cols[1, 0, 0] == 768 and cols[2, 11, -1] == 2303
    assert sorted(cols.flatten().tolist()) == list(range(2304))


def test_fused_equals_separate_small() -> None:
    r = fused_vs_separate(D=48, heads=4, T=9)
    assert r["qkv_diff"] < 1e-6
    assert r["msa_diff"] < 1e-6


@pytest.mark.slow
def test_fused_equals_separate_b16() -> None:
    r = fused_vs_separate()
    assert r["qkv_diff"] < 1e-6
    assert r["msa_diff"] < 1e-6


def test_attention_parameters_b16() -> None:
    cfg = preset("vit-b/16")
    p = param_breakdown(cfg)
    assert p["qkv"] == 1_771_776 and p["proj"] == 590_592
    assert p["attn"] == 2_362_368 == 4 * 768**2 + 4 * 768
    for heads in (1, 12, 768):
        assert sum(t.numel() for t in Attention(dim=768, heads=heads).parameters()) == 2_362_368


def test_fused_qkv_facts() -> None:
    rec = Recorder(6)
    fused_qkv(rec)
    f = {k: v["value"] for k, v in rec.facts.items()}
    assert f["params_attn"] == f["params_attn_module"] == f["params_attn_formula"] == 2_362_368
    assert f["params_attn_1head"] == f["params_attn_768heads"] == 2_362_368
    assert f["params_attn_l16"] == 4 * 1024**2 + 4 * 1024
    assert f["qkv_max_diff"] < 1e-6 and f["msa_max_diff"] < 1e-6


def _four_heads() -> torch.Tensor:
    tokens, _ = face_tokens()
    with torch.no_grad():
        _, w = hand_set_heads()(tokens[None], return_weights=True)
    return w  # (1, 4, 196, 196)


def test_hand_set_heads_are_what_the_docstring_says() -> None:
    tokens, pcs = face_tokens()
    w = _four_heads()
    assert torch.allclose(w.sum(-1), torch.ones(1, 4, 196, dtype=torch.float64), atol=1e-12)
    # The local head is an exact Gaussian in patch distance: exp(-d^2 / 2) renormalised.
    pos = tokens[:, 10:12]
    d2 = torch.cdist(pos, pos) ** 2
    expected = torch.softmax(-d2 / 2.0, dim=-1)
    assert torch.allclose(w[0, 2], expected, atol=1e-10)
    # Appearance: exp(-16 |a_i - a_j|^2) over the first three components.
    a = pcs[:, :3]
    expected = torch.softmax(-16.0 * torch.cdist(a, a) ** 2, dim=-1)
    assert torch.allclose(w[0, 0], expected, atol=1e-10)
    # The local head's row for the query peaks on the query itself.
    assert int(w[0, 2, QUERY].argmax()) == QUERY


def test_distance_score_equation() -> None:
    """Eq. 6.4 on the raw dot products (before the softmax): the appearance head's q_i . k_j,
    with the module's 1/sqrt(Dh) applied, is -alpha |u_i - u_j|^2 + alpha |u_i|^2 for every
    pair, with u the first three components and alpha = t_app = 16."""
    tokens, pcs = face_tokens()
    attn = hand_set_heads()
    with torch.no_grad():
        q, k, _ = attn.qkv(tokens).reshape(196, 3, 4, 6).permute(1, 2, 0, 3)  # (heads, T, Dh)
    scores = q[0] @ k[0].T / math.sqrt(6)  # head 0, as the module scales it
    u, alpha = pcs[:, :3], 16.0
    expected = -alpha * torch.cdist(u, u) ** 2 + alpha * (u**2).sum(-1, keepdim=True)
    assert torch.allclose(scores, expected, atol=1e-9)


def test_mean_attention_distances() -> None:
    w = _four_heads()
    dist = mean_attention_distance(w, 14, 16, num_prefix_tokens=0)
    app, det, local, mix = dist.tolist()
    uniform = mean_attention_distance(
        torch.full((1, 1, 196, 196), 1 / 196), 14, 16, num_prefix_tokens=0
    ).item()
    assert 14 < local < 24  # about one patch of 16 px
    assert local < mix < app < uniform and local < det < uniform
    assert 100 < uniform < 130


def test_facts_file_has_chapter_6() -> None:
    facts = json.loads(FACTS.read_text())["ch06"]
    assert facts["params_attn"]["text"] == "2,362,368"
    assert facts["shape_qkv_perm"]["text"] == "(3, 2, 12, 197, 64)"
    assert facts["dist_local"]["value"] < facts["dist_mix"]["value"] < facts["dist_app"]["value"]


def test_reshape_without_permute_mistakes_do_what_the_text_says() -> None:
    """Common mistakes box: the fused (B, T, 3D) output cannot be reshaped to (B, heads, T, Dh)
    at all (PyTorch raises); a (B, T, D) tensor can, silently, and the result is wrong."""
    torch.manual_seed(0)
    B, T, D, H = 2, 5, 12, 3
    attn = Attention(dim=D, heads=H).eval()
    x = torch.randn(B, T, D)
    qkv = attn.qkv(x)  # (B, T, 3D)
    with pytest.raises(RuntimeError, match="is invalid for input of size"):
        qkv.reshape(B, H, T, D // H)
    q = qkv[..., :D]  # (B, T, D): the queries alone
    right = q.reshape(B, T, H, D // H).transpose(1, 2)  # (B, heads, T, Dh)
    wrong = q.reshape(B, H, T, D // H)  # runs without an error
    assert wrong.shape == right.shape and not torch.equal(wrong, right)
    # the concatenation back: a reshape alone runs and mixes tokens and heads
    out = torch.randn(B, H, T, D // H)
    assert not torch.equal(out.reshape(B, T, D), out.transpose(1, 2).reshape(B, T, D))
