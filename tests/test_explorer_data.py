"""The explorer data format (vitbook/engine/explorer.py) and the fact tolerance contract."""

from __future__ import annotations

import numpy as np
import pytest

from vitbook.engine import ExplorerData, Recorder
from vitbook.engine.explorer import decode, encode


def test_arrays_and_meta_survive_the_round_trip_and_floats_are_rounded() -> None:
    w = np.linspace(-1, 1, 12).reshape(3, 4)
    blob = encode(ExplorerData({"p": 1 / 3, "names": ["a", "b"]}, {"w": w, "i": np.arange(5)}))
    back = decode(blob)
    assert back.meta == {"p": 0.3333333, "names": ["a", "b"]}
    assert back.arrays["w"].dtype == np.float32 and back.arrays["w"].shape == (3, 4)
    np.testing.assert_array_equal(back.arrays["w"], w.astype(np.float32))
    np.testing.assert_array_equal(back.arrays["i"], np.arange(5))
    # every array starts 8-aligned, so JavaScript can view it directly
    n = int.from_bytes(blob[:4], "little")
    assert (4 + n) % 8 == 0


def test_last_bit_noise_in_meta_gives_the_same_bytes() -> None:
    a = encode(ExplorerData({"x": 6.600783339149032}))
    b = encode(ExplorerData({"x": 6.600783339149031}))
    assert a == b


def test_unsupported_dtype_and_arrays_in_meta_are_refused() -> None:
    with pytest.raises(TypeError, match="dtype"):
        encode(ExplorerData({}, {"b": np.array([True])}))
    with pytest.raises(TypeError, match="arrays"):
        encode(ExplorerData({"w": np.zeros(3)}))


def test_a_tolerance_is_recorded_only_for_numbers() -> None:
    rec = Recorder(9)
    rec.fact("acc", 0.91, "{:.1%}", tol=0.03)
    assert rec.facts["acc"] == {"value": 0.91, "text": "91.0%", "tol": 0.03}
    with pytest.raises(ValueError, match="tol"):
        rec.fact("verdict", "better", tol=0.1)
