"""Frozen runs: every training run of the book, stored in the repository (``frozen/``).

Like Quarto's ``_freeze``, a run is computed once, in the commit that changed it, and every
later build reads it instead of training. Unlike ``_freeze``, each file says how to compute it
again and what it must give: ``python -m vitbook verify --runs`` retrains runs from nothing and
compares them with these files.

One run is two files under ``frozen/<module>.<function>/``, named by the run's arguments:

* ``<args>.json``: the run's key, its arguments, the runs it consumed (each with the digest of
  the result it read), the seconds it took, its provenance (the CPU it was computed on and the
  library versions), its result: numbers, strings, lists, curves, numpy arrays and
  dataclasses (``History``, ``ViTConfig``) as JSON, and the digest of all of that;
* ``<args>.safetensors``: the tensors of its result (the weights of a model it returns), when
  there are any, with their digest in the JSON. No pickle is ever written here.

Every file is checked against its digest (:func:`read`) by ``runs``, ``figures`` and
``figures --check``: a damaged file stops them with its name, it is never read as absent.

The result is stored by :func:`encode` so that the same run gives the same bytes: wall-clock
timings (dictionary keys and dataclass fields named :data:`MEASURED`) are kept apart, in the
``measured`` field, and the rest is canonical JSON (sorted keys, shortest round-trip floats).
An ``nn.Module`` in a result is stored as its class, the keyword arguments that rebuild it
(its ``init_kwargs()`` method) and its ``state_dict``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .paths import frozen_dir

#: The version of the record's layout (:func:`migrate_record` brings format 1 to it).
FORMAT = 2
#: The version of the result's encoding (:class:`Encoder`); part of every run's key.
ENCODING = 1
#: Dictionary keys and dataclass fields that hold wall-clock seconds: measurements, not results.
MEASURED = "seconds"
#: Characters allowed in a file name made from arguments (longer or other names are hashed).
_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


# --- the codec -------------------------------------------------------------------------------


class Encoder:
    """Turns a run's result into JSON-ready data, collecting its tensors and its timings."""

    def __init__(self) -> None:
        self.tensors: dict[str, Any] = {}
        self.measured: dict[str, float] = {}

    def __call__(self, obj: Any, path: str = "") -> Any:  # noqa: C901 - one case per type
        import numpy as np

        if obj is None or isinstance(obj, bool | str):
            return obj
        if isinstance(obj, int) and not isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, float) and type(obj) is float:
            return obj if math.isfinite(obj) else {"__float__": repr(obj)}
        if isinstance(obj, np.generic):
            return {"__np__": obj.dtype.str, "value": self(obj.item(), path)}
        if isinstance(obj, np.ndarray):
            return {
                "__ndarray__": obj.dtype.str,
                "shape": list(obj.shape),
                "data": [self(x, path) for x in obj.ravel().tolist()],
            }
        if isinstance(obj, list):
            return [self(x, f"{path}/{i}") for i, x in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"__tuple__": [self(x, f"{path}/{i}") for i, x in enumerate(obj)]}
        if isinstance(obj, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in obj):
                return {k: self._field(k, v, path) for k, v in sorted(obj.items())}
            return {"__dict__": [[self(k, path), self(v, f"{path}/{i}")]
                                 for i, (k, v) in enumerate(obj.items())]}  # fmt: skip
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
            return {
                "__dataclass__": _qualified(type(obj)),
                "fields": {k: self._field(k, v, path) for k, v in sorted(fields.items())},
            }
        if _is_tensor(obj):
            name = path.strip("/") or "tensor"
            self.tensors[name] = obj.detach().cpu().contiguous().clone()
            return {"__tensor__": name}
        if _is_module(obj):
            if not callable(getattr(obj, "init_kwargs", None)):
                raise TypeError(
                    f"cannot freeze {type(obj).__name__}: give it an init_kwargs() method that "
                    "returns the keyword arguments rebuilding it"
                )
            prefix = path.strip("/") or "module"
            for k, v in obj.state_dict().items():
                self.tensors[f"{prefix}/{k}"] = v.detach().cpu().contiguous().clone()
            return {
                "__module__": _qualified(type(obj)),
                "init": self(obj.init_kwargs(), f"{path}/init"),
                "state": prefix,
                "training": bool(obj.training),
            }
        raise TypeError(f"cannot freeze a {type(obj).__name__} at {path or 'the top'}")

    def _field(self, name: str, value: Any, path: str) -> Any:
        here = f"{path}/{name}"
        if name == MEASURED and isinstance(value, int | float) and not isinstance(value, bool):
            self.measured[here] = float(value)
            return {"__measured__": here}
        return self(value, here)


def decode(obj: Any, tensors: dict[str, Any], measured: dict[str, float]) -> Any:
    """The inverse of :class:`Encoder`: the result, with its tensors and timings put back."""
    if isinstance(obj, list):
        return [decode(x, tensors, measured) for x in obj]
    if not isinstance(obj, dict):
        return obj
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__measured__" in obj:
        return measured[obj["__measured__"]]
    if "__np__" in obj:
        import numpy as np

        return np.dtype(obj["__np__"]).type(decode(obj["value"], tensors, measured))
    if "__ndarray__" in obj:
        import numpy as np

        data = [decode(x, tensors, measured) for x in obj["data"]]
        return np.array(data, dtype=np.dtype(obj["__ndarray__"])).reshape(obj["shape"])
    if "__tuple__" in obj:
        return tuple(decode(x, tensors, measured) for x in obj["__tuple__"])
    if "__dict__" in obj:
        return {decode(k, tensors, measured): decode(v, tensors, measured)
                for k, v in obj["__dict__"]}  # fmt: skip
    if "__dataclass__" in obj:
        cls = _import(obj["__dataclass__"])
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{obj['__dataclass__']} is not a dataclass")
        return cls(**{k: decode(v, tensors, measured) for k, v in obj["fields"].items()})
    if "__tensor__" in obj:
        return tensors[obj["__tensor__"]].clone()
    if "__module__" in obj:
        cls = _import(obj["__module__"])
        module = cls(**decode(obj["init"], tensors, measured))
        prefix = obj["state"] + "/"
        state = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
        module.load_state_dict(state, strict=True)
        module.train(obj["training"])
        return module
    return {k: decode(v, tensors, measured) for k, v in obj.items()}


def _qualified(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _import(name: str) -> Any:
    """A class named ``module:qualname``, from the project's own package only."""
    module, _, qualname = name.partition(":")
    if module.split(".")[0] != __name__.split(".")[0]:
        raise TypeError(f"frozen runs rebuild only the project's own classes, not {name}")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _is_tensor(obj: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(obj, torch.Tensor)


def _is_module(obj: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(obj, torch.nn.Module)


def _torch() -> Any:
    import sys

    return sys.modules.get("torch")


def canonical(obj: Any) -> str:
    """The JSON text every frozen file uses: sorted keys, one level per line."""
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def tensor_bytes(tensors: dict[str, Any]) -> bytes:
    """The safetensors file of ``tensors`` (empty bytes for none)."""
    if not tensors:
        return b""
    from safetensors.torch import save

    return save(dict(sorted(tensors.items())))


def tensors_from(blob: bytes) -> dict[str, Any]:
    if not blob:
        return {}
    from safetensors.torch import load

    return load(blob)


# --- names, records and what a computation consumed ------------------------------------------


def slug(arguments: dict[str, Any]) -> str:
    """A file name made from a run's bound arguments (``arm=cnn,n_train=100,seed=0``), or a
    hash of them when they are long or hold other characters."""
    parts = []
    for k, v in sorted(arguments.items()):
        if isinstance(v, tuple | list):
            text = "+".join(map(_slug_value, v))
        else:
            text = _slug_value(v)
        parts.append(f"{k}={text}")
    name = ",".join(parts) or "default"
    if len(name) > 120 or not set(name) <= _SAFE | {"=", ",", "+"}:
        return "args-" + hashlib.sha256(repr(sorted(arguments.items())).encode()).hexdigest()[:16]
    return name


def _slug_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, int | str):
        text = str(v)
        return text if set(text) <= _SAFE else "\0"  # forces a hashed name
    return "\0"


def record_paths(
    name: str, arguments: dict[str, Any], root: Path | None = None
) -> tuple[Path, Path]:
    """The JSON and safetensors paths of run ``name`` with these arguments."""
    folder = (root or frozen_dir()) / name
    stem = slug(arguments)
    return folder / f"{stem}.json", folder / f"{stem}.safetensors"


def seal(record: dict[str, Any]) -> str:
    """The record's text, with the digest of everything else it holds as ``digest``."""
    body = {k: v for k, v in record.items() if k not in ("digest", "_path")}
    return canonical({**body, "digest": hashlib.sha256(canonical(body).encode()).hexdigest()})


def result_digest(record: dict[str, Any]) -> str:
    """The digest of what a run gives (its result and tensors; not its timings or its
    provenance): what a computation that read it records, and what a retraining must keep."""
    what = {"result": record["result"], "tensors": record.get("tensors")}
    return hashlib.sha256(canonical(what).encode()).hexdigest()[:20]


def read(path: Path) -> tuple[dict[str, Any] | None, bytes, str | None]:
    """The frozen record at ``path``, its tensor file's bytes, and what is wrong with them
    (unreadable, of another format, or not the bytes their digests name; None if sound). The
    one check of a frozen file: a damaged record is reported, never read."""
    try:
        text = path.read_text(encoding="utf-8")
        record = json.loads(text)
    except (OSError, ValueError) as exc:
        return None, b"", f"unreadable ({type(exc).__name__})"
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        found = record.get("format") if isinstance(record, dict) else "?"
        return None, b"", f"format {found}, not {FORMAT}: run `python -m vitbook migrate`"
    if seal(record) != text:
        return None, b"", "its bytes are not those its digest names"
    tensors, blob = path.with_suffix(".safetensors"), b""
    if record.get("tensors"):
        try:
            blob = tensors.read_bytes()
        except OSError:
            return None, b"", f"{tensors.name} is missing"
        if hashlib.sha256(blob).hexdigest() != record["tensors"]:
            return None, b"", f"{tensors.name} is not the bytes the record's digest names"
    return record, blob, None


def check_store(root: Path | None = None) -> list[str]:
    """Every damaged file of the frozen store, one line each (see :func:`read`), and every
    tensor file that no record names."""
    root = root or frozen_dir()
    out = []
    for path in sorted(root.glob("*/*")):
        rel = path.relative_to(root.parent)
        if path.suffix == ".json":
            problem = read(path)[2]
            if problem:
                out.append(f"{rel}: {problem}")
        elif path.suffix == ".safetensors" and not path.with_suffix(".json").exists():
            out.append(f"{rel}: no record names it")
    if out:
        out.append("restore what a checkout holds (`git checkout -- frozen/`), or run the "
                   "run again by deleting its record (`python -m vitbook figures`)")  # fmt: skip
    return out


def read_record(path: Path) -> dict[str, Any] | None:
    """A frozen run's JSON record, or None when it is missing or damaged (see :func:`read`)."""
    return read(path)[0]


def load_result(record: dict[str, Any], blob: bytes) -> Any:
    """The result a record holds, its tensors from ``blob`` (the bytes :func:`read` checked)."""
    return decode(record["result"], tensors_from(blob), record.get("measured", {}))


#: What the computations in progress consumed (innermost last): one list per computation, of
#: ``{"run", "slug", "args", "result", "declared_in"}`` entries; see :func:`tracing`.
_TRACE: list[list[dict[str, Any]]] = []


@contextmanager
def tracing() -> Iterator[list[dict[str, Any]]]:
    """Collect the frozen runs called (directly) inside the block: the list it yields fills
    with one entry per distinct run, sorted."""
    consumed: list[dict[str, Any]] = []
    _TRACE.append(consumed)
    try:
        yield consumed
    finally:
        _TRACE.pop()
        unique = {(c["run"], c["slug"]): c for c in consumed}
        consumed[:] = [unique[k] for k in sorted(unique)]


def note_consumed(entry: dict[str, Any]) -> None:
    """Tell the computation in progress (if any) that it read this run."""
    if _TRACE:
        _TRACE[-1].append(entry)


def full_key(base: str, consumed: list[dict[str, Any]]) -> str:
    """A run's key: its own (code and arguments) and the results of what it consumed."""
    h = hashlib.sha256(base.encode())
    for c in consumed:
        h.update(f"\0{c['run']}\0{c['slug']}\0{c['result']}".encode())
    return h.hexdigest()[:20]
