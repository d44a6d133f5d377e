"""The data file of Chapter 10's attention explorer (also read by Chapter 6's second tab): its
size, its shapes, and that the uint8 rows, in steps of their own row's largest weight, are the
model's attention and rollout to within half a step, which is less than a colour step of the
row's map."""

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
    dequantise,
    explorer_attention,
    quantise,
    relative_error,
)
from vitbook.plot import THEMES

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "figures" / "ch10" / "attention-explorer.explorer.bin"
#: Compressed, the file is mostly the rows' rounding below their largest weight: the precision
#: that keeps a nearly uniform row's map free of rounding patterns costs about 0.6 MB over steps
#: of 1/255 of one (which packed into about 0.2 MB).
BUDGET = 1000 * 1024


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
    assert data.arrays["attn_top"].shape == (N_IMAGES, L, H, T)
    assert data.arrays["rollout_top"].shape == (N_IMAGES, L, T)
    assert data.meta["levels"] == LEVELS
    assert data.meta["labels"] == computed["labels"].tolist()
    assert data.meta["preds"] == computed["preds"].tolist()
    assert data.meta["grid"] == list(cfg.grid) and data.meta["depth"] == L
    # every image is a test image of its label, and the model's answer is the argmax
    np.testing.assert_array_equal(computed["probs"].argmax(-1), data.meta["preds"])


@trained
def test_dequantised_rows_are_within_half_a_step_of_their_largest_weight(blob, computed) -> None:
    data = decode(blob)
    for name in ("attn", "rollout"):
        exact = computed[name]
        np.testing.assert_allclose(exact.sum(-1), 1.0, atol=1e-6)  # float32 softmax
        sent, top = data.arrays[name], data.arrays[f"{name}_top"]
        q, t = quantise(exact)
        np.testing.assert_array_equal(sent, q)
        np.testing.assert_array_equal(top, t)
        np.testing.assert_allclose(top, exact.max(-1), rtol=1e-7)
        back = dequantise(sent, top)
        rel = (np.abs(back - exact).max(-1) / exact.max(-1)).max()
        print(f"\n{name}: largest |error| / row's largest weight {rel:.5f}")
        assert 0 < rel <= 0.5 / LEVELS * (1 + 1e-6), (name, rel)  # rounding bites, half a step
        assert rel < 1 / 256  # less than a colour step of a 256-colour map
        # the rows still sum to one within T half steps of their largest weight
        T = exact.shape[-1]
        assert (np.abs(back.sum(-1) - 1) <= T * exact.max(-1) / (2 * LEVELS) + 1e-6).all()


@trained
def test_mean_over_heads_from_the_sent_rows_is_within_half_a_step(blob: bytes, computed) -> None:
    """The page averages the heads of the sent rows: each head within half a step of its own
    largest weight, so the mean within the heads' mean half step."""
    data = decode(blob)
    mean = dequantise(data.arrays["attn"], data.arrays["attn_top"]).mean(2)
    bound = (computed["attn"].max(-1, keepdims=True) / (2 * LEVELS)).mean(2) * (1 + 1e-6)
    assert (np.abs(mean - computed["attn"].mean(2)) <= bound).all()


def test_quantise_keeps_the_error_below_half_a_step_of_each_rows_top() -> None:
    rng = np.random.default_rng(0)
    for temp in (0.1, 1.0, 10.0):  # peaked to nearly uniform rows
        z = rng.normal(size=(200, 65)) / temp
        w = np.exp(z - z.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        q, top = quantise(w)
        assert q.dtype == np.uint8 and top.dtype == np.float32 and (q.max(-1) == LEVELS).all()
        err = np.abs(dequantise(q, top) - w).max(-1)
        assert (err <= w.max(-1) / (2 * LEVELS) * (1 + 1e-6)).all()
    # a nearly uniform row (about 1/64 per patch) keeps its pattern: no weight moves by a
    # step of a 256-colour map stretched to the row's own largest weight
    w = 1 + rng.normal(size=(200, 64)) * 0.1
    w /= w.sum(-1, keepdims=True)
    assert relative_error(w) < 1 / 256
    # steps of 1/255 of one, as an earlier edition sent them, move such a row by a third of
    # its colour bar: the pattern this test exists to catch
    old = np.round(w * 255) / 255
    assert (np.abs(old - w).max(-1) / w.max(-1)).max() > 0.1
    # a one-hot row is sent exactly
    q, top = quantise(np.eye(4))
    np.testing.assert_array_equal(dequantise(q, top), np.eye(4))
