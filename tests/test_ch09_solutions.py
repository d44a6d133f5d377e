"""Chapter 9's computed side notes (vitbook/figures/ch09_solutions.py): the reference points
(d2l's and the UvA tutorial's recipes, with what the calculator and PyTorch say about them) and
the imbalanced-frames example, recomputed and checked against independent counts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from vitbook.engine import Recorder
from vitbook.figures import ch09_solutions as sol

DOC = Path(__file__).resolve().parents[1] / "docs" / "09-training.md"


def _facts(item) -> dict:
    rec = Recorder(9)
    item(rec)
    return {k: v["value"] for k, v in rec.facts.items()}


def test_d2l_parameter_count_matches_a_model_built_like_d2l():
    """d2l's ViT rebuilt from torch.nn layers as its section defines them: a patch Conv2d with
    bias, the class token and a (1, 37, 512) position table, per block two LayerNorms, four
    bias-free attention projections and a two-layer MLP, then LayerNorm and Linear."""
    d = sol.D2L
    dim, mlp = d["dim"], d["mlp"]
    tokens = (d["image"] // d["patch"]) ** 2 + 1
    parts = [nn.Conv2d(d["channels"], dim, d["patch"], d["patch"])]
    for _ in range(d["depth"]):
        parts += [nn.LayerNorm(dim), nn.LayerNorm(dim)]
        parts += [nn.Linear(dim, dim, bias=False) for _ in range(4)]  # W_q, W_k, W_v, W_o
        parts += [nn.Linear(dim, mlp), nn.Linear(mlp, dim)]
    parts += [nn.LayerNorm(dim), nn.Linear(dim, d["classes"])]
    count = sum(p.numel() for m in parts for p in m.parameters()) + dim + tokens * dim
    facts = _facts(sol.reference_points)
    assert facts["d2l_params"] == count
    assert facts["d2l_tokens"] == tokens
    assert facts["d2l_train"] == 60_000 and facts["d2l_test"] == 10_000


def test_optimiser_defaults_are_what_pytorch_uses():
    """The sources call SGD and AdamW without these arguments: the recorded defaults are the
    ones a constructed optimiser really has."""
    facts = _facts(sol.reference_points)
    w = [nn.Parameter(torch.zeros(1))]
    assert torch.optim.SGD(w, lr=0.1).defaults["momentum"] == facts["sgd_default_momentum"]
    assert torch.optim.AdamW(w, lr=3e-4).defaults["weight_decay"] == facts["adamw_default_wd"]


def test_uva_recipe_splits_cifar10s_training_set():
    facts = _facts(sol.reference_points)
    assert facts["uva_train"] + facts["uva_val"] == 50_000  # CIFAR-10's training images
    assert facts["uva_milestone_1"] < facts["uva_milestone_2"] < facts["uva_epochs"]
    assert facts["uva_lr"] == "3e-4" and facts["d2l_lr"] == "0.1"


def test_imbalance_example_supports_what_the_page_says():
    ex = sol.imbalance_example()
    never, half, tuned = ex["never"], ex["half"], ex["tuned"]
    share = ex["positives"] / ex["n"]
    # a constant answer: accuracy is the majority's share, balanced accuracy and AUC are chance
    assert never["acc"] == pytest.approx(1 - share)
    assert never["bal"] == 0.5 and never["auc"] == 0.5 and never["recall"] == 0
    # accuracy barely separates the constant answer from the model cut at 0.5 ...
    assert abs(half["acc"] - never["acc"]) < 0.02 and half["recall"] > never["recall"]
    # ... and puts the tuned cut, which finds most pain frames, last
    assert tuned["acc"] < never["acc"] < half["acc"] or tuned["acc"] < half["acc"] < never["acc"]
    assert tuned["recall"] > 0.5 > half["recall"]
    # balanced accuracy orders them by what they get right; the AUC ignores the threshold
    assert never["bal"] < half["bal"] < tuned["bal"]
    assert half["auc"] == tuned["auc"] > 0.8


def test_balanced_accuracy_is_the_mean_recall_of_the_classes():
    rng = np.random.default_rng(1)
    y, s = sol.imbalanced_frames(500, 0.1, rng)
    pred = (s >= 0.2).astype(int)
    by_hand = np.mean([np.mean(pred[y == c] == c) for c in (0, 1)])
    assert sol.scores_for(y, pred, s)["bal"] == pytest.approx(by_hand)
    # ROC AUC: the share of (pain, other) pairs in which the pain frame scores higher
    pos, neg = s[y == 1], s[y == 0]
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert sol.scores_for(y, pred, s)["auc"] == pytest.approx(pairs)


def test_imbalance_example_is_seeded():
    a, b = sol.imbalance_example(), sol.imbalance_example()
    assert a == b


def test_every_new_fact_reaches_the_page():
    text = DOC.read_text(encoding="utf-8")
    quoted = set(re.findall(r"ch09\.(\w+)", text))
    for item in (sol.reference_points, sol.imbalance):
        missing = set(_facts(item)) - quoted
        assert not missing, missing
