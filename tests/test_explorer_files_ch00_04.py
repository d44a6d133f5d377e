"""The data files of the explorers of Chapters 0-4: small, with the house palette, and holding
the same arrays the chapter's computations give."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from vitbook.engine import verify
from vitbook.engine.explorer import decode
from vitbook.explore import COLORMAPS, colormap_table
from vitbook.plot import THEMES

ROOT = Path(__file__).resolve().parents[1]
KEYS = [
    "ch00/forward-pass",
    "ch00/your-image",
    "ch02/patch-size",
    "ch03/pca-embedding",
    "ch04/position-similarity",
]
BUDGET = 300 * 1024


def _load(key: str):
    path = ROOT / "figures" / f"{key}.explorer.bin"
    assert path.exists(), f"{path} is missing: run `python -m vitbook figures`"
    return path.read_bytes()


@pytest.mark.parametrize("key", KEYS)
def test_data_is_small_and_carries_the_house_palette(key: str) -> None:
    blob = _load(key)
    assert len(gzip.compress(blob, 9)) <= BUDGET
    data = decode(blob)
    assert data.meta["palette"] == THEMES
    for name in COLORMAPS:
        np.testing.assert_array_equal(data.arrays[f"cmap_{name}"], colormap_table(name))


def test_your_image_weights_are_the_face_models() -> None:
    from vitbook.figures.ch00_see_it import run_face_model

    data = decode(_load("ch00/your-image"))
    model, _, _ = run_face_model()
    state = model.state_dict()
    assert {k.removeprefix("w:") for k in data.arrays if k.startswith("w:")} == set(state)
    for k, v in state.items():
        np.testing.assert_array_equal(data.arrays[f"w:{k}"], v.float().numpy())
    assert data.meta["eps"] == model.norm.eps and data.meta["dim"] == model.cfg.dim


def test_forward_pass_tokens_are_the_models() -> None:
    from vitbook.figures.ch00_explore import STAGES, forward_stages

    data = decode(_load("ch00/forward-pass"))
    d = forward_stages()
    keys = [key for kind, key, _ in STAGES if kind == "tokens"]
    # float32 on another CPU's SIMD path may move the last bits: the rule of verify.py for
    # explorer data (relative 1e-4 of the array's largest value)
    for i, key in enumerate(keys):
        assert verify.arrays_close(data.arrays["tokens"][i], d["tokens"][key])
    assert verify.arrays_close(data.arrays["attn"], d["attn"])
    assert len(data.meta["stages"]) == len(STAGES)


def test_pca_basis_rebuilds_a_patch_exactly_with_every_component() -> None:
    from vitbook.figures.ch03_explore import quantized_basis, rebuild

    b = quantized_basis(k_max=195)  # the full rank: the rounded basis still rebuilds the patch
    _, _, err = rebuild(b, 0, 195)
    assert err < 1e-3
    _, _, err8 = rebuild(b, 0, 8)
    assert err8 > 10 * err
