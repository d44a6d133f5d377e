"""The data file of Chapter 10's attention explorer (also read by Chapter 6's second tab): its
size, its shapes, and that the uint8 rows are the model's attention and rollout to within one
quantisation step, each row still summing to one."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from vitbook.engine.explorer import decode
from vitbook.explore import COLORMAPS, colormap_table
from vitbook.figures.ch10_explore import (
    LEVELS,
    N_IMAGES,
    explorer_attention,
    quantise,
    relative_error,
)
from vitbook.plot import THEMES

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "figures" / "ch10" / "attention-explorer.explorer.bin"
BUDGET = 300 * 1024


@pytest.fixture(scope="module")
def blob() -> bytes:
    assert PATH.exists(), f"{PATH} is missing: run `python -m vitbook figures --chapter 10`"
    return PATH.read_bytes()


@pytest.fixture(scope="module")
def computed() -> dict:
    return explorer_attention()  # from the cached pre-trained run


#: Tests against the trained model: they train it on an empty cache (minutes), and they hold
#: only where the pre-training reproduces the reference build (docs/building.md), so they
#: belong to the full tier.
trained = pytest.mark.slow


def test_data_fits_the_budget_and_carries_the_house_palette(blob: bytes) -> None:
    size = len(gzip.compress(blob, 9))
    print(f"\nch10/attention-explorer: {len(blob):,} bytes, {size:,} gzip-compressed")
    assert size <= BUDGET
    data = decode(blob)
    assert data.meta["palette"] == THEMES
    for name in COLORMAPS:
        np.testing.assert_array_equal(data.arrays[f"cmap_{name}"], colormap_table(name))


@trained
def test_shapes_labels_and_predictions_are_the_models(blob: bytes, computed: dict) -> None:
    data = decode(blob)
    cfg = computed["cfg"]
    T = cfg.grid[0] * cfg.grid[1] + 1
    L, H = cfg.depth, cfg.heads
    assert data.arrays["attn"].shape == (N_IMAGES, L, H, T, T)
    assert data.arrays["rollout"].shape == (N_IMAGES, L, T, T)
    assert data.arrays["images"].shape == (N_IMAGES, *cfg.image_hw, 3)
    assert data.arrays["attn"].dtype == np.uint8 and data.arrays["rollout"].dtype == np.uint8
    assert data.meta["levels"] == LEVELS
    assert data.meta["labels"] == computed["labels"].tolist()
    assert data.meta["preds"] == computed["preds"].tolist()
    assert data.meta["grid"] == list(cfg.grid) and data.meta["depth"] == L
    # every image is a test image of its label, and the model's answer is the argmax
    np.testing.assert_array_equal(computed["probs"].argmax(-1), data.meta["preds"])


@trained
def test_dequantised_rows_are_within_a_step_and_sum_to_one(blob: bytes, computed) -> None:
    data = decode(blob)
    step = 1 / LEVELS
    for name in ("attn", "rollout"):
        exact = computed[name]
        np.testing.assert_allclose(exact.sum(-1), 1.0, atol=1e-6)  # float32 softmax
        sent = data.arrays[name]
        np.testing.assert_array_equal(sent, quantise(exact))
        back = sent.astype(np.float64) / LEVELS
        err = np.abs(back - exact).max()
        print(f"\n{name}: largest |error| {err:.5f} (bound: less than {step:.5f})")
        assert 0 < err < step, (name, err)  # rounding bites, within one step
        # every row of steps sums to LEVELS: the dequantised rows sum to one
        np.testing.assert_array_equal(sent.astype(np.int64).sum(-1), LEVELS)
        np.testing.assert_allclose(back.sum(-1), 1.0, atol=1e-12)


@trained
def test_mean_over_heads_from_the_sent_rows_is_within_a_step(blob: bytes, computed) -> None:
    """The page averages the heads of the uint16 rows: still within a step of the model."""
    data = decode(blob)
    mean = (data.arrays["attn"].astype(np.float64) / LEVELS).mean(2)
    assert np.abs(mean - computed["attn"].mean(2)).max() < 1 / LEVELS


def test_quantise_keeps_row_sums_and_the_error_bound_on_random_rows() -> None:
    rng = np.random.default_rng(0)
    for temp in (0.1, 1.0, 10.0):  # peaked to nearly uniform rows
        z = rng.normal(size=(200, 65)) / temp
        w = np.exp(z - z.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        q = quantise(w)
        assert (q.astype(int).sum(-1) == LEVELS).all()
        assert np.abs(q / LEVELS - w).max() < 1 / LEVELS
    # a nearly uniform row (about 1/64 per patch) keeps its pattern: no weight moves by a
    # step of a 256-colour map stretched to the row's own largest weight
    w = 1 + rng.normal(size=(200, 64)) * 0.01
    w /= w.sum(-1, keepdims=True)
    assert relative_error(w) < 1 / 256
    # a one-hot row is sent exactly
    np.testing.assert_array_equal(quantise(np.eye(4)), np.eye(4) * LEVELS)
