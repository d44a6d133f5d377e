"""A build that has nothing to do should say so at once, without importing the book.

After a build or a check that left every item up to date, :func:`record` writes the size and
modification time of every file a key or a figure can depend on (the package's sources and
data, the frozen runs, the figures and their manifest), the environment in every key (library
versions, Python, threads, device) and the folders in use. While all of them are unchanged,
:func:`fresh` is true and the command line answers from the stamp. Any difference (a saved
file, a checkout, another library) sends it down the full path, which hashes what it must: the
stamp only skips work, it never calls up to date what the full check would call stale.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import cache
from .deps import environment
from .paths import cache_dir, figures_dir, frozen_dir, project_root


def _path() -> Path:
    return cache_dir() / "stamp.json"


def _files(folder: Path, out: dict[str, list[int]]) -> None:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.endswith((".pyc", ".lock")):
                continue
            path = Path(root) / name
            try:
                st = path.stat()
            except OSError:
                continue
            out[str(path)] = [st.st_size, st.st_mtime_ns]


def fingerprint() -> dict[str, Any]:
    """What the stamp compares: file sizes and times, library versions, folders in use."""
    files: dict[str, list[int]] = {}
    for folder in (project_root() / "vitbook", frozen_dir(), figures_dir()):
        _files(folder, files)
    return {
        "files": files,
        "environment": environment(),
        # the folders as resolved, so that naming the default folder in a variable (as the
        # tests do) answers from the same stamp as leaving it out
        "folders": [str(f.resolve()) for f in (figures_dir(), frozen_dir(), cache_dir())],
        "training": os.environ.get("VITBOOK_NO_TRAINING"),
    }


def fresh() -> bool:
    """Whether nothing changed since the last :func:`record`."""
    try:
        return json.loads(_path().read_text()) == fingerprint()
    except (OSError, ValueError):
        return False


def record() -> None:
    """Remember the files as they are now (call when everything is up to date)."""
    cache.atomic_write(_path(), json.dumps(fingerprint(), sort_keys=True).encode())


def forget() -> None:
    _path().unlink(missing_ok=True)
