"""The book's configuration (``mkdocs.yml``) and its date, read by the site's modules (the
PDF, the editions, the cite boxes) without a build."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


class _Loader(yaml.SafeLoader):
    """Reads mkdocs.yml, ignoring its ``!!python/name`` tags."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


@functools.cache
def mkdocs_config(root: Path = ROOT) -> dict[str, Any]:
    return yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506


def book_date(root: Path = ROOT) -> dt.date:
    """``SOURCE_DATE_EPOCH`` if set, else the date of the last commit (UTC), else 1 Jan of
    the book's year: never today's date, so that a rebuild gives the same bytes."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).date()
    with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError):
        out = subprocess.run(
            ["git", "log", "-1", "--format=%ct"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        return dt.datetime.fromtimestamp(int(out), dt.UTC).date()
    return dt.date(int(mkdocs_config(root).get("extra", {}).get("year", 2026)), 1, 1)
