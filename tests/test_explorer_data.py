"""The explorer data format (vitbook/engine/explorer.py), its parts (files of their own that a
page loads when it needs them), and the fact tolerance contract."""

from __future__ import annotations

import numpy as np
import pytest

from vitbook.engine import ExplorerData, Recorder
from vitbook.engine.explorer import decode, encode, encode_files, part_files, read
from vitbook.engine.registry import Item


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


def test_data_without_parts_gives_the_bytes_it_gave_before_parts_existed() -> None:
    data = ExplorerData({"a": 1}, {"w": np.arange(3)})
    assert encode(data) == encode(data, {})
    assert b"parts" not in encode(data) and part_files(encode(data)) == {}


def _item_with_parts(declared: tuple[str, ...]):
    """A figure item (chapter 90, outside the registry) whose explorer data has two parts."""
    import matplotlib.pyplot as plt

    item = Item(90, "demo", lambda rec: None, "vitbook.figures.ch90_demo", size=(1.0, 1.0),
                phone_size=(1.0, 1.0))  # fmt: skip
    item.draw(lambda data, v: plt.figure(figsize=v.size))

    @item.export(parts=declared)
    def _(data):
        one, two = ExplorerData({}, {"y": np.ones(2)}), ExplorerData({}, {"y": -np.ones(2)})
        parts = {"one": one, "two": two}
        return ExplorerData({"n": 2}, {"x": np.arange(3)}, parts)

    return item


def test_each_part_is_a_file_of_its_own_that_the_main_file_lists(tmp_path) -> None:
    from vitbook.engine.build import file_names, render

    item = _item_with_parts(("one", "two"))
    names = file_names(item)
    assert names[-3:] == [
        "ch90/demo.explorer.bin", "ch90/demo.one.explorer.bin", "ch90/demo.two.explorer.bin"
    ]  # fmt: skip
    files = render(item, None)
    assert sorted(files) == sorted(names)
    main = files["ch90/demo.explorer.bin"]
    assert part_files(main) == {"one": "demo.one.explorer.bin", "two": "demo.two.explorer.bin"}
    assert sorted(decode(main).arrays) == ["x"]  # the parts' arrays are not in the main file
    for name, blob in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(blob)
    back = read(tmp_path / "ch90/demo.explorer.bin")
    assert back.meta == {"n": 2} and sorted(back.parts) == ["one", "two"]
    np.testing.assert_array_equal(back.parts["two"].arrays["y"], -np.ones(2, np.float32))


def test_parts_must_be_the_ones_declared_and_named_as_ids() -> None:
    from vitbook.engine.build import render

    with pytest.raises(ValueError, match="declares"):
        render(_item_with_parts(("one",)), None)
    with pytest.raises(ValueError, match="parts"):
        _item_with_parts(("One part",))
    with pytest.raises(ValueError, match="parts"):
        _item_with_parts(("one", "one"))
    nested = ExplorerData({}, {}, {"a": ExplorerData({}, {}, {"b": ExplorerData()})})
    with pytest.raises(ValueError, match="parts of its own"):
        encode_files("ch90/demo", nested)
