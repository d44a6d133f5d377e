"""The data files of Chapter 10's attention explorer (also read by Chapter 6's second tab): the
main file, which the first view needs (images, labels, predictions, colour map), and one part per
image with its maps, which the page loads when the reader picks the image: their sizes, their
shapes, and that the uint8 rows, in steps of their own row's largest weight, are the model's
attention and rollout to within half a step, which is less than a colour step of the row's map."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from vitbook.engine.explorer import ExplorerData, part_files, read
from vitbook.explore import COLORMAPS, colormap_table
from vitbook.figures.ch10_explore import (
    LEVELS,
    MAPS,
    N_IMAGES,
    PARTS,
    dequantise,
    explorer_attention,
    quantise,
    relative_error,
    sent_maps,
)
from vitbook.plot import THEMES

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "figures" / "ch10" / "attention-explorer.explorer.bin"
#: gzip-compressed bytes of the main file, which the first view downloads with image 1's part:
#: the twelve images (32 x 32 RGB), labels, predictions and colour maps (about 20 KB).
MAIN_BUDGET = 40 * 1024
#: gzip-compressed bytes of one image's part (about 70 KB): mostly the attention rows' rounding
#: below their largest weight, the precision that keeps a nearly uniform row's map free of
#: rounding patterns.
PART_BUDGET = 100 * 1024


@pytest.fixture(scope="module")
def data() -> ExplorerData:
    """The main file with its parts."""
    assert PATH.exists(), f"{PATH} is missing: run `python -m vitbook figures --chapter 10`"
    return read(PATH)


@pytest.fixture(scope="module")
def computed() -> dict:
    return explorer_attention()  # from the cached pre-trained run


#: Tests against the trained model: they train it on an empty cache (minutes), and they hold
#: only where the pre-training reproduces the reference build (docs/building.md), so they
#: belong to the full tier.
trained = pytest.mark.slow


def test_the_first_view_and_each_image_fit_their_budgets(data: ExplorerData) -> None:
    """The first view downloads the main file and image 1's part; each other image's part
    comes when the reader picks the image."""
    blob = PATH.read_bytes()
    size = len(gzip.compress(blob, 9))
    print(f"\nch10/attention-explorer: {len(blob):,} bytes, {size:,} gzip-compressed")
    assert size <= MAIN_BUDGET
    # the main file lists one part per image, in the images' order, and holds no maps
    assert data.meta["maps"] == list(PARTS) and len(PARTS) == N_IMAGES
    assert sorted(part_files(blob)) == sorted(PARTS)
    assert not set(MAPS) & set(data.arrays)
    for name, file in part_files(blob).items():
        part = (PATH.parent / file).read_bytes()
        size = len(gzip.compress(part, 9))
        print(f"  {file}: {len(part):,} bytes, {size:,} gzip-compressed")
        assert size <= PART_BUDGET, name
        assert sorted(data.parts[name].arrays) == sorted(MAPS)


def test_data_carries_the_house_palette(data: ExplorerData) -> None:
    assert data.meta["palette"] == THEMES
    for name in COLORMAPS:
        np.testing.assert_array_equal(data.arrays[f"cmap_{name}"], colormap_table(name))


@trained
def test_shapes_labels_and_predictions_are_the_models(data: ExplorerData, computed) -> None:
    cfg = computed["cfg"]
    T = cfg.grid[0] * cfg.grid[1] + 1
    L, H = cfg.depth, cfg.heads
    for part in data.parts.values():  # one image's maps each
        assert part.arrays["attn"].shape == (L, H, T, T)
        assert part.arrays["rollout"].shape == (L, T, T)
        assert part.arrays["attn"].dtype == np.uint8 and part.arrays["rollout"].dtype == np.uint8
        assert part.arrays["attn_top"].shape == (L, H, T)
        assert part.arrays["rollout_top"].shape == (L, T)
    assert data.arrays["images"].shape == (N_IMAGES, *cfg.image_hw, 3)
    assert data.meta["levels"] == LEVELS
    assert data.meta["labels"] == computed["labels"].tolist()
    assert data.meta["preds"] == computed["preds"].tolist()
    assert data.meta["grid"] == list(cfg.grid) and data.meta["depth"] == L
    # every image is a test image of its label, and the model's answer is the argmax
    np.testing.assert_array_equal(computed["probs"].argmax(-1), data.meta["preds"])


@trained
def test_dequantised_rows_are_within_half_a_step_of_their_largest_weight(data, computed) -> None:
    """Each image's part, in the order meta.maps gives, holds that image's maps."""
    maps = sent_maps(data)
    for name in ("attn", "rollout"):
        exact = computed[name]
        np.testing.assert_allclose(exact.sum(-1), 1.0, atol=1e-6)  # float32 softmax
        sent, top = maps[name], maps[f"{name}_top"]
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
def test_mean_over_heads_from_the_sent_rows_is_within_half_a_step(data, computed) -> None:
    """The page averages the heads of the sent rows: each head within half a step of its own
    largest weight, so the mean within the heads' mean half step."""
    maps = sent_maps(data)
    mean = dequantise(maps["attn"], maps["attn_top"]).mean(2)
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
