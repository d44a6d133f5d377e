"""Two stores for expensive results, safe against crashes and damage.

* Item results (``.cache/vitbook/results``, local, never committed): pickles wrapped with a
  checksum, keyed by the item's computation, so that a figure whose files were deleted is
  redrawn without recomputing.
* Training runs (:func:`cached`): frozen in the repository, ``frozen/`` (see
  :mod:`vitbook.engine.frozen`), keyed by their code and arguments and the digests of the
  results of the runs they consumed; :meth:`Run.current` decides whether a record is current.

A missing, truncated or altered entry is treated as absent and recomputed; it is never
trusted. Writes go to a temporary file that is renamed into place, so a build killed half-way
leaves either the old entry or the new one, never half of one. A lock per entry keeps two
processes from computing the same expensive thing at once.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import inspect
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from . import frozen, runtime
from . import portable as _portable
from .deps import _keyed_by_runs, _module_file, code_of, environment, source_key
from .paths import cache_dir

MAGIC = b"VITBOOK1"
T = TypeVar("T")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the writer's pid in the name lets a later build remove what a killed one left behind
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_orphans(folder: Path) -> list[Path]:
    """Delete temporary files under ``folder`` whose writer is no longer running (or whose
    name carries no writer's pid at all: nothing can still be writing those)."""
    removed = []
    for tmp in folder.rglob(".*.tmp"):
        try:
            pid = int(tmp.name.rsplit(".", 3)[-3])
            os.kill(pid, 0)  # raises if no such process
        except (ProcessLookupError, ValueError, IndexError):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
        except PermissionError:  # a live process of another user
            continue
    return removed


class Busy(Exception):
    """Another process holds the lock of an entry this process was told not to wait for
    (see :func:`waiting`)."""


#: Whether an entry another process is computing is waited for (the default) or raises
#: :class:`Busy` so that a build worker can do something else first.
_WAIT = True


@contextmanager
def waiting(wait: bool) -> Iterator[None]:
    """Within the block, an entry another process is computing is waited for or not."""
    global _WAIT
    before, _WAIT = _WAIT, wait
    try:
        yield
    finally:
        _WAIT = before


@contextmanager
def file_lock(path: Path, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if needed); with ``wait=False``,
    raise :class:`Busy` at once if another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(str(path)) from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def store(path: Path, value: Any) -> None:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    atomic_write(path, MAGIC + hashlib.sha256(payload).digest() + payload)


def load(path: Path) -> tuple[bool, Any]:
    """Return ``(True, value)`` for a sound entry, ``(False, None)`` otherwise."""
    try:
        blob = path.read_bytes()
    except OSError:
        return False, None
    head, digest, payload = blob[:8], blob[8:40], blob[40:]
    if head != MAGIC or hashlib.sha256(payload).digest() != digest:
        return False, None
    try:
        return True, pickle.loads(payload)
    except Exception:  # a sound checksum over an unreadable pickle: recompute
        return False, None


# --- training runs, frozen in the repository --------------------------------------------------


class NotFrozen(RuntimeError):
    """A run had to be trained where training is switched off (``VITBOOK_NO_TRAINING=1``):
    its frozen files are missing, damaged or were made by other code."""


def training_allowed() -> bool:
    """False under ``VITBOOK_NO_TRAINING=1`` (``verify`` from frozen runs, a clean clone's
    build in the tests): a run that is not frozen then raises :class:`NotFrozen`."""
    return os.environ.get("VITBOOK_NO_TRAINING") != "1"


#: For the build report, per run function called in this process: its seconds (not counting
#: runs it called in turn), how many calls, and how many of them trained.
RUNS: dict[str, tuple[float, int, int]] = {}
#: The seconds spent in runs called from each run now in progress (innermost last).
_NESTED: list[float] = []
#: Every cached run function by name (``module.function``), so that a record's consumed runs
#: can be found and keyed again.
REGISTRY: dict[str, Run] = {}
#: Current records (and their tensors' bytes), by record file (its size and modification
#: time) and base key: a check asks for each run once however many computations read it.
_CURRENT: dict[tuple[str, int, int, str], tuple[dict[str, Any], bytes] | None] = {}


class Run:
    """A training run: a plain function whose results are frozen in ``frozen/``.

    Made by :func:`cached`. Calling it returns the frozen result when :meth:`current` finds its
    record current, and otherwise trains, stores and returns it (the same object a later load
    returns: the stored one, decoded).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        portable: bool,
        given: dict[str, Callable[[], Any]],
        declared_in: str,
    ) -> None:
        self.fn, self.portable, self.given, self.declared_in = fn, portable, given, declared_in
        self.name = f"{fn.__module__}.{fn.__qualname__}"
        home = _module_file(fn.__module__)
        if home is not None and _keyed_by_runs(home):
            raise TypeError(
                f"{self.name}: define a run's function in its own module (vitbook.experiments), "
                "not in a module that declares runs: its key would cover every experiment there"
            )
        sig = inspect.signature(fn)
        unknown = set(given) - set(sig.parameters)
        if unknown:
            raise TypeError(f"{self.name} has no parameter {sorted(unknown)[0]!r} to be given")
        self.signature = sig.replace(
            parameters=[p for n, p in sig.parameters.items() if n not in given]
        )
        functools.update_wrapper(self, fn)
        REGISTRY[self.name] = self

    # the key -----------------------------------------------------------------------------

    def bind(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The arguments of a call bound to the parameters, the defaults filled in."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def base_key(self, arguments: dict[str, Any], env: dict | None = None) -> str:
        """What the run's own result depends on: the code of its function's module and what it
        imports (comments, formatting and docstrings left out), its bound arguments (by their
        ``repr``: two calls whose arguments give one file name have two keys), the engine code
        that runs it (seeds, threads; the portable paths for a portable run), the code of its
        ``given`` inputs and the result encoding. (``env``: for :func:`migrate` only.)"""
        extra: list[Any] = [frozen.ENCODING, code_of(runtime)]
        if self.portable:
            extra += [sorted(_portable.env().items()), code_of(_portable._child)]
        extra += [(n, code_of(g)) for n, g in sorted(self.given.items())]
        return source_key(
            self.fn.__module__, self.fn.__qualname__, sorted(arguments.items()), *extra,
            compute_only=True, env=env,
        )  # fmt: skip

    def paths(self, arguments: dict[str, Any], root: Path | None = None) -> tuple[Path, Path]:
        return frozen.record_paths(self.name, arguments, root)

    def current(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], bytes] | None:
        """Whether the frozen record of this call is current: the one place that decides.

        Current means sound (every byte what its digests name, :func:`frozen.read`), made by
        this code (its base key is the run's now) and from what its consumed runs give now
        (each is current and its result has the digest recorded). Returns the record and its
        tensors' bytes, or None."""
        path, _ = self.paths(arguments)
        try:
            st = path.stat()
        except OSError:
            return None
        base = self.base_key(arguments)
        memo = (str(path), st.st_size, st.st_mtime_ns, base)
        if memo not in _CURRENT:
            record, blob, _ = frozen.read(path)
            ok = (
                record is not None
                and record["base"] == base
                and all(consumed_result(c) == c["result"] for c in record["consumed"])
            )
            _CURRENT[memo] = (record, blob) if ok else None
        return _CURRENT[memo]

    # calling -------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arguments = self.bind(*args, **kwargs)
        start = time.perf_counter()
        _NESTED.append(0.0)
        try:
            value, record, hit = self._get_or_compute(arguments)
        finally:
            inner = _NESTED.pop()
        elapsed = time.perf_counter() - start
        if _NESTED:
            _NESTED[-1] += elapsed
        secs, calls, trained = RUNS.get(self.__qualname__, (0.0, 0, 0))
        RUNS[self.__qualname__] = (secs + elapsed - inner, calls + 1, trained + (not hit))
        # what the computation that called it records: which call, and the result it read
        frozen.note_consumed({
            "run": self.name, "slug": frozen.slug(arguments), "args": frozen.Encoder()(arguments),
            "result": frozen.result_digest(record), "declared_in": self.declared_in,
        })  # fmt: skip
        return value

    def _get_or_compute(self, arguments: dict[str, Any]) -> tuple[Any, dict[str, Any], bool]:
        found = self.current(arguments)
        if found is not None:
            return frozen.load_result(*found), found[0], True
        if not training_allowed():
            raise NotFrozen(
                f"{self.name}({frozen.slug(arguments)}) is not frozen for this code: build with "
                "`python -m vitbook figures` and commit frozen/"
            )
        lock = cache_dir() / "locks" / self.name / f"{frozen.slug(arguments)}.lock"
        with file_lock(lock, wait=_WAIT):
            found = self.current(arguments)  # another process may have finished it
            if found is not None:
                return frozen.load_result(*found), found[0], True
            record, blob = self.compute(arguments)
            self.store(record, blob)
            return frozen.load_result(record, blob), record, False

    def compute(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """Train from nothing (the runs it consumes are read from the frozen store): the
        record to store and its tensor file's bytes."""
        if _portable.IN_CHILD:
            raise RuntimeError(f"{self.name}: a portable run cannot train other runs inside it")
        base = self.base_key(arguments)
        start = time.perf_counter()
        with frozen.tracing() as consumed:
            inputs = {n: g() for n, g in self.given.items()}
            if self.portable:
                value = _portable.call(self.fn, {**inputs, **arguments})
            else:
                with runtime.preserved_rng(), runtime.book_conditions():
                    value = self.fn(**inputs, **arguments)
        seconds = time.perf_counter() - start
        enc = frozen.Encoder()
        result = enc(value)
        blob = frozen.tensor_bytes(enc.tensors)
        if self.base_key(arguments) != base:
            raise RuntimeError(
                f"{self.name}: a source file it depends on changed while it trained; train again"
            )
        record = {
            "format": frozen.FORMAT,
            "run": self.name,
            "declared_in": self.declared_in,
            "args": frozen.Encoder()(arguments),
            "key": frozen.full_key(base, consumed),
            "base": base,
            "consumed": consumed,
            "portable": self.portable,
            "result": result,
            "measured": enc.measured,
            "tensors": hashlib.sha256(blob).hexdigest() if blob else None,
            "seconds": round(seconds, 2),
            "computed_on": computed_on(self.portable),
            "environment": environment(),
        }
        return record, blob

    def store(self, record: dict[str, Any], blob: bytes, root: Path | None = None) -> None:
        """Write a record (the tensors first: the JSON, written last, is what makes it valid)."""
        path, tensor_path = self.paths(frozen.decode(record["args"], {}, {}), root)
        if blob:
            atomic_write(tensor_path, blob)
        else:
            tensor_path.unlink(missing_ok=True)
        atomic_write(path, frozen.seal(record).encode())


def run_named(name: str, declared_in: str | None) -> Run | None:
    """The cached run called ``name`` (``module.function``), importing the module that
    declares it if need be; None if there is none any more."""
    if name not in REGISTRY and declared_in:
        import importlib

        try:
            importlib.import_module(declared_in)
        except ImportError:
            return None
    return REGISTRY.get(name)


def consumed_result(entry: dict[str, Any]) -> str | None:
    """The digest of the result a consumed run gives now (None: it is not current any more)."""
    run = run_named(entry["run"], entry.get("declared_in"))
    found = run.current(frozen.decode(entry["args"], {}, {})) if run is not None else None
    return frozen.result_digest(found[0]) if found is not None else None


def migrate(record_environment: bool = False) -> list[str]:
    """Rewrite every record of ``frozen/`` in format 1 into :data:`frozen.FORMAT`, training
    nothing; returns one line per record it could not migrate, and a summary.

    A format-1 record is migrated only where it was current under the keys it was made with:
    its base key then (which held the installed :func:`environment`) is the one it records,
    and each run it consumed has the key it recorded. Its result, tensors and timings are
    kept as they are (the result digests before and after are checked equal); its consumed
    runs are recorded by their results' digests, the environment as its provenance, the old
    key as ``migrated_from``. Records already in the format are left alone, so it can run
    again on a tree where new format-1 records arrived. ``record_environment``: also record
    the installed environment as the provenance of every record (after a deliberate
    upgrade, once ``verify --runs --new-environment`` passed)."""
    import json

    paths = sorted(frozen.frozen_dir().glob("*/*.json"))
    raw = {p: json.loads(p.read_text("utf-8")) for p in paths}
    env, notes, done = environment(), [], 0
    for path, r in raw.items():
        if r.get("format") == frozen.FORMAT:
            if record_environment and r.get("environment") != env:
                atomic_write(path, frozen.seal({**r, "environment": env}).encode())
                done += 1
            continue
        run = run_named(r["run"], r.get("declared_in"))
        args = frozen.decode(r["args"], {}, {})
        blob = path.with_suffix(".safetensors").read_bytes() if r.get("tensors") else b""
        consumed, why = [], None
        if run is None or r.get("format") != 1:
            why = "no such run" if run is None else f"unknown format {r.get('format')}"
        elif r["tensors"] and hashlib.sha256(blob).hexdigest() != r["tensors"]:
            why = "its tensor file is damaged"
        elif run.base_key(args, env=env) != r["base"]:
            why = "stale under the keys it was made with (retrain it)"
        for c in r.get("consumed", []) if why is None else []:
            p = raw.get(frozen.record_paths(c["run"], frozen.decode(c["args"], {}, {}))[0])
            if p is None or c["key"] not in (p["key"], p.get("migrated_from", {}).get("key")):
                why = f"the run it consumed, {c['run']}({c['slug']}), is not the one it read"
                break
            consumed.append({**{k: v for k, v in c.items() if k != "key"},
                             "result": frozen.result_digest(p)})  # fmt: skip
        if why is not None:
            notes.append(f"not migrated: {path.relative_to(frozen.frozen_dir())}: {why}")
            continue
        base = run.base_key(args)
        new = {**r, "format": frozen.FORMAT, "base": base, "consumed": consumed,
               "key": frozen.full_key(base, consumed), "environment": env,
               "migrated_from": {"format": 1, "key": r["key"]}}  # fmt: skip
        assert frozen.result_digest(new) == frozen.result_digest(r)  # the result is untouched
        atomic_write(path, frozen.seal(new).encode())
        done += 1
    return [*notes, f"{done} of {len(raw)} records rewritten, {len(notes)} left as they were"]


def computed_on(portable: bool) -> dict[str, str]:
    """The CPU a computation ran on, and the code paths (portable or the CPU's own)."""
    import platform

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    torch = sys.modules.get("torch")
    native = torch.backends.cpu.get_cpu_capability() if torch is not None else "unknown"
    return {
        "cpu": model,
        "machine": platform.machine(),
        "capability": "DEFAULT" if portable else native,
        "paths": "portable" if portable else "native",
    }


def cached(
    fn: Callable[..., T] | None = None,
    *,
    portable: bool = False,
    given: dict[str, Callable[[], Any]] | None = None,
) -> Any:
    """Freeze an expensive function (a training run) in ``frozen/``, one record per call.

    The key covers the code the run executes (the function's module and everything it
    imports, not the chapter that calls it), the engine code that runs it, the function's
    name, its arguments bound to its parameters with the defaults filled in (so ``f(500)``,
    ``f(epochs=500)`` and, if 500 is the default, ``f()`` are one record), and the digests of
    the results of the runs it consumed, recorded when it was computed. The environment
    (library versions, Python, threads, device) and the CPU are recorded as its provenance.
    Arguments must have a faithful ``repr`` (numbers, strings, tuples, frozen dataclasses).

    Args:
        portable: compute in a child process on code paths that give the same bits whatever
            the CPU's vector width (:mod:`vitbook.engine.portable`); ``fn`` must be a
            module-level function.
        given: parameters of ``fn`` filled by calling these functions (zero arguments) when
            the run trains, typically the result of another run: their code is in the key and
            the runs they call are recorded as consumed, so retraining those retrains this.
    """
    declared_in = sys._getframe(1).f_globals.get("__name__", "")

    def wrap(f: Callable[..., T]) -> Run:
        return Run(f, portable=portable, given=dict(given or {}), declared_in=declared_in)

    return wrap if fn is None else wrap(fn)


def prune_frozen(consumed: list[dict[str, Any]]) -> list[Path]:
    """Delete the frozen records that no computation reaches from ``consumed`` (what the
    items of a whole-book build that succeeded recorded), directly or through the runs those
    consumed: runs left behind by changed arguments. Returns the files deleted."""
    keep: set[Path] = set()
    todo = list(consumed)
    while todo:
        entry = todo.pop()
        path, tensors = frozen.record_paths(entry["run"], frozen.decode(entry["args"], {}, {}))
        if path in keep:
            continue
        keep.update((path, tensors))
        record = frozen.read_record(path)
        todo.extend(record.get("consumed", []) if record else [])
    removed = []
    for path in sorted(frozen.frozen_dir().glob("*/*")):
        if path.suffix in (".json", ".safetensors") and path not in keep:
            path.unlink()
            removed.append(path)
    for folder in frozen.frozen_dir().glob("*/"):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return removed
