"""The lab and the practice notebook: well-formed, and they run and reach their results.

They are kept in Git as jupytext percent scripts (``docs/*.py``). The site build executes them
(mkdocs-jupyter, ``execute: true``); the slow tests here read the outputs from the pages that
build wrote (the session's build, shared with the browser tests and the link checker; see
``tests/browser/sitebuild.py``), so the notebooks run once per test run, not twice.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import pytest
from selectolax.lexbor import LexborHTMLParser

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs"


def read(name: str):
    return jupytext.read(DOCS / name)


class Executed:
    """The outputs of a notebook as the built site shows them (mkdocs-jupyter's HTML)."""

    def __init__(self, name: str) -> None:
        try:
            site = sitebuild.built_site()
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        page = site / sitebuild.page_url(name) / "index.html"
        html = LexborHTMLParser(page.read_text(encoding="utf-8"))
        outputs = html.css(".jp-OutputArea-output")
        if not outputs:
            pytest.fail(
                f"{page} shows no cell outputs: the site was built without executing the "
                f"notebooks (mkdocs.yml: mkdocs-jupyter execute: true)",
                pytrace=False,
            )
        classes = [(o.attributes.get("class") or "").split() for o in outputs]
        #: printed text (stdout and stderr), in order; execute results are left out
        self.text = "".join(
            o.text(deep=True)
            for o, c in zip(outputs, classes, strict=True)
            if "jp-RenderedText" in c and "jp-OutputArea-executeResult" not in c
        )
        #: inline PNG images (matplotlib figures)
        self.images = sum(
            1
            for o, c in zip(outputs, classes, strict=True)
            if "jp-RenderedImage" in c
            for img in o.css("img")
            if (img.attributes.get("src") or "").startswith("data:image/png")
        )


def test_lab_milestones_predict_then_check():
    """Each milestone: a 'Predict ... first' cell, the code, then a check cell that asserts."""
    cells = read("lab-tinyvit8.py").cells
    heads = [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "markdown" and c.source.startswith("## Milestone")
    ]
    assert len(heads) == 4
    for start, end in zip(heads, heads[1:] + [len(cells)], strict=True):
        block = cells[start:end]
        assert "Predict" in block[0].source and "first" in block[0].source
        checks = [c for c in block if c.cell_type == "code" and "assert" in c.source]
        assert checks, f"milestone at cell {start} has no check"
        assert any(".shape" in c.source for c in checks), "a check must assert a shape"


def test_practice_has_five_tasks_each_with_a_prediction_and_an_assert():
    cells = read("practice.py").cells
    heads = [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "markdown" and c.source.startswith("## Task")
    ]
    assert len(heads) == 5
    for start, end in zip(heads, heads[1:] + [len(cells)], strict=True):
        block = cells[start:end]
        assert "**Predict" in block[0].source
        assert any(c.cell_type == "code" and "assert " in c.source for c in block)


@pytest.mark.slow
def test_lab_runs_and_trains_past_95_percent():
    nb = Executed("lab-tinyvit8.py")
    out = nb.text
    for k in range(1, 5):
        assert f"milestone {k} passed" in out
    accuracy = float(re.search(r"milestone 4 passed: ([\d.]+)%", out).group(1)) / 100
    assert accuracy > 0.95
    assert "26,538 parameters, as counted on paper" in out
    assert re.search(r"book model: 26,538 parameters", out)
    assert nb.images == 2  # the digits and the training curves


@pytest.mark.slow
def test_practice_runs_with_its_outputs():
    nb = Executed("practice.py")
    out = nb.text
    assert "616,225" in out  # (784 + 1)^2 attention pairs at P = 8
    assert "token pairs: 8.58x" in out
    assert nb.images == 3  # shuffle accuracy, CLS attention, learning-rate curves
    in_order = re.search(r"in order: with positions ([\d.]+)%, without ([\d.]+)%", out)
    assert float(in_order.group(1)) > float(in_order.group(2))
