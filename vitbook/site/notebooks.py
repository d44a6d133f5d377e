"""The notebooks' ``.ipynb`` twins, for Google Colab (which opens only ``.ipynb`` files).

The notebooks are written as jupytext percent scripts (``docs/lab-tinyvit8.py``,
``docs/practice.py``, ``docs/notebooks/chNN-<slug>.py``); each has a twin ``.ipynb`` beside
it, without outputs, that the "Open in Colab" button of its page links to (at the tag of the
book's version). ``python -m vitbook.site.notebooks`` rewrites the twins after an edit;
``tests/test_notebooks.py`` fails when one is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext

DOCS = Path(__file__).resolve().parents[2] / "docs"


def sources(docs: Path = DOCS) -> list[Path]:
    """Every notebook source: the lab, the practice notebook and the chapter notebooks."""
    return sorted([*docs.glob("lab-*.py"), docs / "practice.py", *docs.glob("notebooks/ch*.py")])


def twin_text(src: Path) -> str:
    """The ``.ipynb`` that ``src`` gives (no outputs; the same text on every machine: cell ids
    are numbered, where nbformat would draw them at random)."""
    nb = jupytext.read(src)
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{k:03d}"
    return jupytext.writes(nb, fmt="ipynb")


def sync(docs: Path = DOCS) -> list[Path]:
    """Rewrite the twins that differ from their source; returns the ones written."""
    written = []
    for src in sources(docs):
        twin = src.with_suffix(".ipynb")
        text = twin_text(src)
        if not twin.exists() or twin.read_text(encoding="utf-8") != text:
            twin.write_text(text, encoding="utf-8")
            written.append(twin)
    return written


if __name__ == "__main__":
    for path in sync():
        print(f"wrote {path.relative_to(DOCS.parent)}")
    sys.exit(0)
