"""A scratch copy of the package for the engine's tests: vitbook without the book's chapters,
plus three tiny chapters (90-92) made up here, so that each build takes a second. The
``book`` fixture (tests/conftest.py) makes one per test; the helpers run the real command line
on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Tests that run a build in a subprocess (seconds each) belong to the full tier (CI's),
#: not to the quick one (`-m "not slow"`).
builds = pytest.mark.slow


SHARED = """
def value():
    return 41
"""

ONLY_B = """
def offset():
    return 1
"""

MODULE = """
import os, time
from vitbook import plot
from vitbook.engine import figure, facts

{imports}

@figure(chapter={ch}, id="{id}", size=(3.0, 2.0))
def fig(rec):
    if os.environ.get("SLOW"):
        time.sleep(float(os.environ["SLOW"]))
    if os.environ.get("EDIT"):  # a contributor saves a file while the build runs
        with open(os.environ["EDIT"], "a") as f:
            f.write("EDITED = True\\n")  # code, not a comment: comments key nothing
    rec.fact("answer", {expr})
    return [1, 3, 2, {expr}]

def _title(name):
    return name

@fig.draw
def _(data, v):
    fig, ax = plot.subplots(v)
    ax.plot(data)
    ax.set_title(_title("{id}"))
    return fig

@facts(chapter={ch}, id="{id}-facts")
def more(rec):
    rec.fact("twice", 2 * {expr})
"""


def make_book(tmp_path: Path) -> Path:
    """A scratch project: vitbook without its chapters, plus chapters 90-92 made up here."""
    shutil.copytree(
        ROOT / "vitbook",
        tmp_path / "vitbook",
        ignore=shutil.ignore_patterns("__pycache__", "ch[0-9][0-9]_*.py"),
    )
    (tmp_path / "vitbook" / "shared_for_test.py").write_text(SHARED)
    (tmp_path / "vitbook" / "only_b.py").write_text(ONLY_B)
    figs = tmp_path / "vitbook" / "figures"
    specs = {
        "ch90_alpha.py": (90, "alpha", "from vitbook.shared_for_test import value", "value()"),
        "ch91_beta.py": (
            91,
            "beta",
            "from vitbook.shared_for_test import value\nfrom vitbook.only_b import offset",
            "value() + offset()",
        ),
        "ch92_gamma.py": (92, "gamma", "", "7"),
    }
    for name, (ch, fid, imports, expr) in specs.items():
        (figs / name).write_text(MODULE.format(ch=ch, id=fid, imports=imports, expr=expr))
    return tmp_path


def book_env(book: Path, env: dict | None = None) -> dict:
    """The environment in which a process imports the scratch ``book`` and builds into it."""
    return dict(
        os.environ,
        PYTHONPATH=str(book),
        VITBOOK_FIGURES=str(book / "figures"),
        VITBOOK_CACHE=str(book / ".cache"),
        **(env or {}),
    )


def run(book: Path, *args: str, env: dict | None = None, check: bool = True):
    proc = subprocess.run(
        [sys.executable, "-m", "vitbook", *args],
        cwd=book,
        env=book_env(book, env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def statuses(stdout: str) -> dict[str, str]:
    """The build report's table as {figure: status}."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith("ch") and "/" in parts[0]:
            out[parts[0]] = parts[1]
    return out


def check_with(book: Path, patch: str) -> subprocess.CompletedProcess:
    """``python -m vitbook figures --check`` in a process where ``patch`` ran first (a
    monkeypatch: another Pillow, another thread count...)."""
    code = f"import sys\n{patch}\nfrom vitbook.engine.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = book_env(book)
    return subprocess.run(
        [sys.executable, "-c", code, "figures", "--check"],
        cwd=book,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def stale_names(stdout: str) -> set[str]:
    return {line.split()[1] for line in stdout.splitlines() if line.startswith("stale: ")}
