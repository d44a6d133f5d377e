"""Chapter 9's recorded results (figures/facts.json, written by the figure build) against the
book's thresholds, and the cheap parts recomputed directly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from vitbook.analysis import interpolate_pos_embed
from vitbook.data.participants import make_participants
from vitbook.data.shapes import FINETUNE_CLASSES, PRETRAIN_CLASSES, make_shapes

FACTS = Path(__file__).resolve().parents[1] / "figures" / "facts.json"


def fact(name: str):
    ch = json.loads(FACTS.read_text())["ch09"]
    return ch[name]["value"]


def test_digits_accuracy_above_95():
    assert fact("digits_acc") > 0.95
    assert fact("digits_params") == 26538
    assert fact("digits_n_train") + fact("digits_n_test") == 1797
    assert fact("digits_loss_start") == pytest.approx(np.log(10), abs=0.25)


def test_pretraining_learned_something():
    chance = 1 / len(PRETRAIN_CLASSES)
    assert fact("pre_acc") > 2 * chance
    assert fact("pre_tokens") == 64


def test_lr_sweep_shows_divergence_and_its_cure():
    lowest_ok = max(fact("lr0_acc"), fact("lr1_acc"))
    assert fact("lr3_acc") < lowest_ok - 0.2  # the highest rate is far worse
    assert fact("lr3_max_loss") > 2 * np.log(len(FINETUNE_CLASSES))  # the loss blew up
    assert fact("safe_acc") > fact("lr2_acc")  # warm-up + clipping at the same rate helps


def test_transfer_facts_are_consistent():
    # pre-training helps the ViT when data is scarce
    assert fact("vit_full_100") > fact("vit_scratch_100")
    # the text: "the CNN is ahead of it by {{ ch09.cnn_minus_scratch_large }} points"
    assert fact("cnn_minus_scratch_large") > 0
    assert abs(fact("cnn_params") - fact("vit_params")) / fact("vit_params") < 0.05


def test_higher_resolution_claims():
    assert fact("cls_untouched") == "yes"
    assert fact("new_grid") == "12×12"
    # fine-tuning at 48x48 helps with either table
    for name in ("interpolated", "fresh"):
        assert fact(f"hires_{name}_after") > fact(f"hires_{name}_before")
    # the text says the two tables make no real difference on this position-invariant task
    assert abs(fact("hires_interpolated_before") - fact("hires_fresh_before")) < 0.05
    assert abs(fact("hires_interpolated_after") - fact("hires_fresh_after")) < 0.05


def test_vit_from_scratch_stays_near_chance_and_cnn_wins():
    # the text says: the CNN wins at every size, the ViT from scratch stays near chance
    for n in (100, 400, 1600):
        assert fact(f"cnn_{n}") > max(fact(f"vit_full_{n}"), fact(f"vit_head_{n}"))
        assert fact(f"vit_scratch_{n}") < fact("chance_fine") + 0.1
        assert fact(f"vit_full_{n}") > fact(f"vit_head_{n}")


def test_participant_leak_gap():
    assert fact("leak_frame_acc") > 0.9
    assert fact("leak_person_acc") < 0.65
    assert fact("leak_gap") > 30


def test_leak_recomputed():
    from sklearn.model_selection import GroupKFold, KFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    d = make_participants(n_people=20, frames=10, seed=1)
    assert d.x.shape == (200, 32) and set(np.unique(d.y)) == {0, 1}
    # every participant has exactly one label
    assert all(len(set(d.y[d.person == p])) == 1 for p in range(20))
    knn = KNeighborsClassifier(n_neighbors=5)
    frame = cross_val_score(knn, d.x, d.y, cv=KFold(5, shuffle=True, random_state=0)).mean()
    person = cross_val_score(knn, d.x, d.y, cv=GroupKFold(5), groups=d.person).mean()
    assert frame - person > 0.3


def test_interpolation_sanity():
    torch.manual_seed(0)
    table = torch.randn(1, 1 + 64, 8)
    same = interpolate_pos_embed(table, 8, 8)
    assert torch.equal(same, table)
    up = interpolate_pos_embed(table, 8, 12)
    assert up.shape == (1, 1 + 144, 8)
    assert torch.equal(up[0, 0], table[0, 0])  # CLS untouched
    const = torch.ones(1, 1 + 64, 4)  # a constant map stays constant
    assert torch.allclose(interpolate_pos_embed(const, 8, 12), torch.ones(1, 145, 4), atol=1e-6)


def test_shapes_generator():
    s = make_shapes(60, seed=3)
    assert s.images.shape == (60, 3, 32, 32) and s.images.dtype == np.float32
    assert np.bincount(s.labels).tolist() == [10] * 6  # balanced
    assert (s.boxes[:, :2] >= 0).all() and (s.boxes[:, 2:] <= 32).all()
    assert ((s.boxes[:, 2] - s.boxes[:, 0]) >= 10).all()
    # the object is saturated, the background is not: the most saturated pixel is in the box
    for i in range(10):
        img = s.images[i]
        sat = img.max(0) - img.min(0)
        y, x = np.unravel_index(sat.argmax(), sat.shape)
        x0, y0, x1, y1 = s.boxes[i]
        assert x0 <= x < x1 and y0 <= y < y1
    again = make_shapes(60, seed=3)
    assert np.array_equal(again.images, s.images)  # seeded
    f = make_shapes(8, classes=FINETUNE_CLASSES, seed=0)
    assert f.classes == FINETUNE_CLASSES
