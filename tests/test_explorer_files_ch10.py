"""The data files of Chapter 10's attention explorer (also read by Chapter 6's second tab): the
main file, which the first view needs (images, labels, predictions, colour map), and one part per
image with its maps, which the page loads when the reader picks the image: their sizes, their
shapes, and that the uint8 rows, in steps of their own row's largest patch weight (the top of the
colour bar the page draws them with), are the model's attention, its mean over heads and rollout
to within half a step, so that no map of any kind is drawn more than one colour away from the
colours of the exact weights."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from vitbook.engine.explorer import ExplorerData, part_files, read
from vitbook.explore import COLORMAPS, colormap_table
from vitbook.figures.ch10_explore import (
    COLOURS,
    LEVELS,
    MAPS,
    N_IMAGES,
    PARTS,
    colour_errors,
    dequantise,
    drawn_colours,
    exact_rows,
    explorer_attention,
    map_kinds,
    quantise,
    relative_error,
    sent_kinds,
    sent_maps,
)
from vitbook.plot import THEMES

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "figures" / "ch10" / "attention-explorer.explorer.bin"
#: gzip-compressed bytes of the main file, which the first view downloads with image 1's part:
#: the twelve images (32 x 32 RGB), labels, predictions and colour maps (about 20 KB).
MAIN_BUDGET = 40 * 1024
#: gzip-compressed bytes of one image's part (81-99 KB): mostly the attention rows' rounding
#: below their largest patch weight, the precision that keeps a nearly uniform row's map free
#: of rounding patterns, and the mean over heads sent as a map of its own.
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
        assert part.arrays["mean"].shape == (L, T, T) and part.arrays["mean"].dtype == np.uint8
        for name, lead in (("attn", (L, H, T)), ("mean", (L, T)), ("rollout", (L, T))):
            assert part.arrays[f"{name}_top"].shape == part.arrays[f"{name}_cls"].shape == lead
    assert data.arrays["images"].shape == (N_IMAGES, *cfg.image_hw, 3)
    assert data.meta["levels"] == LEVELS
    assert data.meta["labels"] == computed["labels"].tolist()
    assert data.meta["preds"] == computed["preds"].tolist()
    assert data.meta["grid"] == list(cfg.grid) and data.meta["depth"] == L
    # every image is a test image of its label, and the model's answer is the argmax
    np.testing.assert_array_equal(computed["probs"].argmax(-1), data.meta["preds"])


@trained
def test_dequantised_rows_are_within_half_a_step_of_their_largest_patch_weight(data, computed):
    """Each image's part, in the order meta.maps gives, holds that image's maps: the patch
    columns within half a step of the row's largest patch weight, the class token's exact."""
    maps = sent_maps(data)
    for name in ("attn", "mean", "rollout"):
        exact = exact_rows(computed, name)
        np.testing.assert_allclose(exact.sum(-1), 1.0, atol=1e-6)  # float32 softmax
        sent, top, cls = maps[name], maps[f"{name}_top"], maps[f"{name}_cls"]
        q, t, c = quantise(exact)
        np.testing.assert_array_equal(sent, q)
        np.testing.assert_array_equal(top, t)
        np.testing.assert_array_equal(cls, c)
        np.testing.assert_allclose(top, exact[..., 1:].max(-1), rtol=1e-7)
        back = dequantise(sent, top, cls)
        rel = (np.abs(back - exact)[..., 1:].max(-1) / exact[..., 1:].max(-1)).max()
        print(f"\n{name}: largest |error| / row's largest patch weight {rel:.5f}")
        assert 0 < rel <= 0.5 / LEVELS * (1 + 1e-6), (name, rel)  # rounding bites, half a step
        np.testing.assert_allclose(back[..., 0], exact[..., 0], rtol=1e-6)


@trained
def test_every_map_kind_is_drawn_within_one_colour_of_the_exact_weights(computed) -> None:
    """What the page paints (drawn_colours of the sent rows) against what the exact weights
    would paint, for a head, the mean over heads and rollout, from a patch and from the class
    token: never more than one colour apart, the error under half a colour step of the bar."""
    exact, sent = sent_kinds(computed)
    assert len(exact) == 6
    for kind, e in colour_errors(exact, sent).items():
        print(f"\n{kind}: {e}")
        assert e["colours"] <= 1 and e["maps_off"] == 0, kind
        assert e["rel"] < 0.5 / (COLOURS - 1), kind
    # the class token's rollout rows are the ones the old quantisation broke: through the
    # first block their own weight is several times any patch's
    rows = exact["rollout, class-token query"][:, 0]
    assert (rows[..., 0] > 3 * rows[..., 1:].max(-1)).all()


def test_quantise_keeps_the_error_below_half_a_step_of_each_rows_patch_top() -> None:
    rng = np.random.default_rng(0)
    for temp in (0.1, 1.0, 10.0):  # peaked to nearly uniform rows
        z = rng.normal(size=(200, 65)) / temp
        w = np.exp(z - z.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        q, top, cls = quantise(w)
        assert q.dtype == np.uint8 and top.dtype == cls.dtype == np.float32
        assert (q[:, 1:].max(-1) == LEVELS).all() and (q[:, 0] == 0).all()
        err = np.abs(dequantise(q, top, cls) - w)[:, 1:].max(-1)
        assert (err <= w[:, 1:].max(-1) / (2 * LEVELS) * (1 + 1e-6)).all()
    # a nearly uniform row (about 1/64 per patch) keeps its pattern: no weight moves by a
    # step of a 256-colour map stretched to the row's own largest patch weight
    w = 1 + rng.normal(size=(200, 65)) * 0.1
    w /= w.sum(-1, keepdims=True)
    assert relative_error(w) < 1 / 256
    # steps of 1/255 of one, as an earlier edition sent them, move such a row by a third of
    # its colour bar: the pattern this test exists to catch
    old = np.round(w * 255) / 255
    assert (np.abs(old - w)[:, 1:].max(-1) / w[:, 1:].max(-1)).max() > 0.1
    # a one-hot row is sent exactly, on a patch and on the class token
    q, top, cls = quantise(np.eye(4)[1:])
    np.testing.assert_array_equal(dequantise(q, top, cls), np.eye(4)[1:])
    q, top, cls = quantise(np.array([[0.5, 0.5, 0.0, 0.0]]))
    np.testing.assert_array_equal(dequantise(q, top, cls), [[0.5, 0.5, 0.0, 0.0]])


def test_a_row_whose_class_token_outweighs_its_patches_is_drawn_in_its_own_colours() -> None:
    """Class-token rows of rollout: the token's own weight about half the row, every patch a
    few per cent. Steps of the whole row's largest weight (an earlier edition) drew them a
    dozen colours apart from the exact weights; steps of the largest patch weight, at most one."""
    rng = np.random.default_rng(1)
    patches = rng.uniform(0.2, 1.0, size=(48, 64))
    patches *= 0.47 / patches.sum(-1, keepdims=True)  # about 0.015 per patch, 0.036 at most
    w = np.concatenate([np.full((48, 1), 0.53), patches], -1)
    top = w.max(-1, keepdims=True)
    old = np.round(w / top * LEVELS) * top / LEVELS  # the earlier edition's rows
    exact = drawn_colours(w)
    assert np.abs(drawn_colours(old) - exact).max() > 4  # coarse: a pattern of its own
    assert len(np.unique(drawn_colours(old))) < len(np.unique(exact)) / 2
    new = dequantise(*quantise(w))
    assert np.abs(drawn_colours(new) - exact).max() <= 1
    kinds = map_kinds(w[None, None, None], w[None])  # a head, its mean and a rollout row
    assert set(kinds) == {f"{k}, {q} query" for k in ("head", "mean", "rollout")
                          for q in ("patch", "class-token")}  # fmt: skip
