"""A content-addressed store for expensive results, safe against crashes and damage.

Entries are pickles wrapped with a checksum. A missing, truncated or altered entry
is treated as absent and recomputed; it is never trusted. Writes go to a temporary
file that is renamed into place, so a build killed half-way leaves either the old
entry or the new one, never half of one. A lock per key keeps two processes from
computing the same expensive thing at once.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import inspect
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from . import portable as _portable
from .deps import source_key

MAGIC = b"VITBOOK1"
#: The folder of a cache that holds training runs (``@cached``); results sit beside it.
RUN_DIR = "runs"
T = TypeVar("T")


def cache_dir() -> Path:
    """Where results live: ``$VITBOOK_CACHE`` or ``.cache/vitbook`` in the working directory."""
    return Path(os.environ.get("VITBOOK_CACHE", ".cache/vitbook"))


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


#: Whether :func:`get_or_compute` waits for an entry another process is computing (the
#: default) or raises :class:`Busy` so that a build worker can do something else first.
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


def get_or_compute(path: Path, compute: Callable[[], T]) -> tuple[T, bool]:
    """The value stored at ``path``, computing and storing it if absent or damaged.

    Returns ``(value, hit)`` where ``hit`` says whether it came from the cache. If another
    process is computing it, waits for that one, or raises :class:`Busy` inside
    ``waiting(False)``.
    """
    ok, value = load(path)
    if ok:
        return value, True
    with file_lock(path.with_suffix(".lock"), wait=_WAIT):
        ok, value = load(path)  # another process may have finished it meanwhile
        if ok:
            return value, True
        value = compute()
        store(path, value)
        return value, False


#: For the build report, per cached run function called in this process: its seconds (not
#: counting runs it called in turn), how many calls, and how many of them trained.
RUNS: dict[str, tuple[float, int, int]] = {}
#: The seconds spent in runs called from each run now in progress (innermost last).
_NESTED: list[float] = []


def cached(fn: Callable[..., T], *, portable: bool = False) -> Callable[..., T]:
    """Cache an expensive function (a training run) on disk, keyed like a figure.

    With ``portable=True`` the run is computed in a child process on code paths that give the
    same bits whatever the CPU's vector width (:mod:`vitbook.engine.portable`); ``fn`` must
    then be a module-level function, and its key also covers those paths.

    The key covers the code the run executes (the function's module and everything it
    imports, not the chapter that calls it), the environment (library versions, Python,
    threads, device; see :func:`vitbook.engine.deps.environment`), the function's name and its
    arguments bound to its parameters with the defaults filled in, so ``f(500)``,
    ``f(epochs=500)`` and, if 500 is the default, ``f()`` are one entry. Arguments must have
    a faithful ``repr`` (numbers, strings, tuples, frozen dataclasses).
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = run_key(fn, bound.arguments, portable)
        path = cache_dir() / RUN_DIR / f"{fn.__qualname__}-{key}.pkl"
        start = time.perf_counter()
        _NESTED.append(0.0)
        try:
            if portable:
                value, hit = get_or_compute(path, lambda: _portable.call(fn, bound.arguments))
            else:
                value, hit = get_or_compute(path, lambda: fn(*bound.args, **bound.kwargs))
        finally:
            inner = _NESTED.pop()
        elapsed = time.perf_counter() - start
        if _NESTED:
            _NESTED[-1] += elapsed
        secs, calls, trained = RUNS.get(fn.__qualname__, (0.0, 0, 0))
        RUNS[fn.__qualname__] = (secs + elapsed - inner, calls + 1, trained + (not hit))
        return value

    return wrapper


def run_key(fn: Callable[..., Any], arguments: dict[str, Any], portable: bool = False) -> str:
    """The key of a cached run of ``fn`` with these bound ``arguments`` (defaults applied);
    a portable run's key also covers the code paths it is held to."""
    held = [sorted(_portable.ENV.items()), inspect.getsource(_portable._child)]
    extra = held if portable else []
    return source_key(fn.__module__, fn.__qualname__, sorted(arguments.items()), *extra)


def share_runs(src: Path, dest: Path) -> int:
    """Copy the run cache entries of cache ``src`` that cache ``dest`` lacks (atomically, so a
    reader of ``dest`` never sees half a file); return how many were copied."""
    copied = 0
    for entry in sorted((src / RUN_DIR).glob("*.pkl")):
        target = dest / RUN_DIR / entry.name
        if not target.exists():
            atomic_write(target, entry.read_bytes())
            copied += 1
    return copied
