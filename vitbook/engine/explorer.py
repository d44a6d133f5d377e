"""Data for the book's in-browser explorers: one small binary file per explorer.

A figure item may export, besides its PNG/SVG, the arrays an explorer in the page needs
(``@item.export``). The file ``figures/chNN/<id>.explorer.bin`` is

* 4 bytes: the length ``n`` of the header, little-endian unsigned;
* ``n`` bytes: a UTF-8 JSON header ``{"meta": {...}, "arrays": {name: {"dtype", "shape",
  "offset", "length"}}}`` padded with spaces to a multiple of 8 bytes;
* the arrays, little-endian, each starting at ``offset`` bytes after the header (8-aligned).

``docs/javascripts/explorers/core.js`` reads it back into typed arrays. Floats in ``meta`` are
rounded to 7 significant digits and the JSON is written with sorted keys, so the same data gives
the same bytes, and last-bit noise of the computation does not reach the file.

Data the page needs only on a reader's request (one image's maps of twelve, say) can travel in
files of their own, *parts*: ``ExplorerData.parts`` holds them by name, each is a file of the
same format, ``figures/chNN/<id>.<name>.explorer.bin`` (:func:`file_name`), and the main file's
header lists them, ``"parts": {name: file name}``, so that the page finds them without knowing
how they are named. An item declares its parts' names where it attaches the export
(``@item.export(parts=...)``), so the engine knows its files before computing anything.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: dtypes the JavaScript side can view directly (names as numpy spells them).
DTYPES = ("float32", "int32", "uint8", "uint16", "int16")


@dataclass
class ExplorerData:
    """What an explorer receives: small values in ``meta``, big ones as ``arrays``."""

    meta: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, Any] = field(default_factory=dict)
    #: ``{name: ExplorerData}``: data in files of their own, loaded when the page needs them
    parts: dict[str, ExplorerData] = field(default_factory=dict)


def file_name(stem: str, part: str | None = None) -> str:
    """The file of an explorer's data, ``<stem>.explorer.bin``, or of one of its parts,
    ``<stem>.<part>.explorer.bin``."""
    return f"{stem}.explorer.bin" if part is None else f"{stem}.{part}.explorer.bin"


def encode_files(stem: str, data: ExplorerData) -> dict[str, bytes]:
    """Every file of ``data`` by name (:func:`file_name`): the main file, whose header lists
    the parts' files by their names relative to it, and one file per part."""
    if any(p.parts for p in data.parts.values()):
        raise ValueError(f"{stem}: a part of explorer data cannot have parts of its own")
    files = {name: file_name(stem.rsplit("/", 1)[-1], name) for name in data.parts}
    out = {file_name(stem): encode(data, files)}
    for name in sorted(data.parts):
        out[file_name(stem, name)] = encode(data.parts[name])
    return out


def _rounded(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and np.ndim(value) == 0:
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"explorer meta holds {value}: JSON has no such number")
        return float(f"{value:.7g}")
    if isinstance(value, np.ndarray):
        raise TypeError("put arrays in ExplorerData.arrays, not in meta")
    return value


def encode(data: ExplorerData, parts: dict[str, str] | None = None) -> bytes:
    """The bytes of ``figures/chNN/<id>.explorer.bin`` for ``data`` (its parts are not
    encoded here; ``parts``, ``{name: file name}``, goes to the header when given)."""
    headers: dict[str, dict[str, Any]] = {}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(data.arrays):
        arr = np.asarray(data.arrays[name])
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and (arr.size == 0 or np.abs(arr).max() < 2**31):
            arr = arr.astype(np.int32)
        if arr.dtype.name not in DTYPES:
            raise TypeError(f"explorer array {name!r} has dtype {arr.dtype}; use one of {DTYPES}")
        raw = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"))).tobytes()
        headers[name] = {
            "dtype": arr.dtype.name,
            "shape": list(arr.shape),
            "offset": offset,
            "length": int(arr.size),
        }
        pad = -len(raw) % 8
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    head: dict[str, Any] = {"meta": _rounded(data.meta), "arrays": headers}
    if parts:
        head["parts"] = dict(parts)
    header = json.dumps(
        head,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    header += b" " * (-(len(header) + 4) % 8)
    return struct.pack("<I", len(header)) + header + b"".join(blobs)


def part_files(blob: bytes) -> dict[str, str]:
    """The parts a main file lists: ``{name: file name}``, relative to the main file."""
    (n,) = struct.unpack_from("<I", blob)
    return json.loads(blob[4 : 4 + n]).get("parts", {})


def read(path: Path) -> ExplorerData:
    """An explorer's data file with its parts, read from the files beside it."""
    blob = path.read_bytes()
    data = decode(blob)
    for name, file in part_files(blob).items():
        data.parts[name] = decode((path.parent / file).read_bytes())
    return data


def decode(blob: bytes) -> ExplorerData:
    """The inverse of :func:`encode` (for tests and notebooks); the parts are not read (see
    :func:`read`)."""
    (n,) = struct.unpack_from("<I", blob)
    header = json.loads(blob[4 : 4 + n])
    base = 4 + n
    arrays = {}
    for name, h in header["arrays"].items():
        dtype = np.dtype(h["dtype"]).newbyteorder("<")
        start = base + h["offset"]
        arrays[name] = np.frombuffer(blob, dtype=dtype, count=h["length"], offset=start).reshape(
            h["shape"]
        )
    return ExplorerData(header["meta"], arrays)
