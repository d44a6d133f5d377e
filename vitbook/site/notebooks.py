"""The notebooks' ``.ipynb`` twins, for Google Colab (which opens only ``.ipynb`` files).

The notebooks are written as jupytext percent scripts (``docs/lab-tinyvit8.py``,
``docs/practice.py``, ``docs/notebooks/chNN-<slug>.py``); each has a twin ``.ipynb`` beside
it, without outputs; an edition's "Open in Colab" button opens the twin at the edition's tag.
``python -m vitbook.site.notebooks`` writes the install cell (``editions.INSTALL_CELL``) into
every source, keeping the edition it names, and rewrites the twins after an edit;
``tests/test_notebooks.py`` fails when one is out of date.

The site's build publishes a copy of each notebook beside its page (:func:`site_copy`, the
download button's ``.ipynb``) whose install cell also names the commit the site was built from:
a file in the repository cannot name its own commit, so the twins say ``COMMIT = None``, and the
latest text's Colab button opens the published copy in the ``gh-pages`` branch instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext

DOCS = Path(__file__).resolve().parents[2] / "docs"


def sources(docs: Path = DOCS) -> list[Path]:
    """Every notebook source: the lab, the practice notebook and the chapter notebooks."""
    return sorted([*docs.glob("lab-*.py"), docs / "practice.py", *docs.glob("notebooks/ch*.py")])


def twin_text(src: Path, commit: str | None = None) -> str:
    """The ``.ipynb`` that ``src`` gives (no outputs; the same text on every machine: cell ids
    are numbered, where nbformat would draw them at random); with ``commit``, its install cell
    names that commit (:func:`site_copy`)."""
    from vitbook.site import editions

    text = src.read_text(encoding="utf-8")
    if commit:
        text = editions.set_notebook_commit(text, commit)
    nb = jupytext.reads(text, fmt="py:percent")
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{k:03d}"
    return jupytext.writes(nb, fmt="ipynb")


def site_copy(src: Path, commit: str) -> str:
    """The ``.ipynb`` the site publishes beside a notebook's page: the twin, its install cell
    naming ``commit``, the commit the site is built from (none without git)."""
    return twin_text(src, commit or None)


def write_install_cells(docs: Path = DOCS) -> list[Path]:
    """Write ``editions.INSTALL_CELL`` into every source (keeping its edition)."""
    from vitbook.site import editions

    written = []
    for src in sources(docs):
        text = src.read_text(encoding="utf-8")
        new = editions.with_install_cell(text)
        if new != text:
            src.write_text(new, encoding="utf-8")
            written.append(src)
    return written


def sync(docs: Path = DOCS) -> list[Path]:
    """Write the install cells, then rewrite the twins that differ from their source; returns
    the files written."""
    written = write_install_cells(docs)
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
