"""The lab, the practice notebook and the chapter notebooks: well-formed, and they run.

They are kept in Git as jupytext percent scripts (``docs/*.py``, ``docs/notebooks/*.py``),
each with an ``.ipynb`` twin for Colab. The site build executes the lab and the practice
notebook (mkdocs-jupyter); the slow tests read their outputs from the pages that build wrote
(the session's build, see ``tests/browser/sitebuild.py``). The chapter notebooks, which the
site shows without outputs, are executed here with nbclient. Each notebook runs once per run.
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

from vitbook.site import notebooks as twins

DOCS = Path(__file__).resolve().parents[1] / "docs"
CHAPTER_NOTEBOOKS = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.glob("notebooks/ch*.py"))


def read(name: str):
    return jupytext.read(DOCS / name)


def execute(name: str):
    import nbclient

    nb = read(name)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(DOCS)}}
    ).execute()
    return nb


def text_of(nb) -> str:
    return "".join(
        o.get("text", "")
        for cell in nb.cells
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream"
    )


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
        #: plots shown by vitbook.notebook.show: (alt text, themes drawn as inline PNG)
        self.plots = [
            (
                {img.attributes.get("alt") for img in div.css("img")},
                sorted(
                    t
                    for img in div.css("img")
                    for t in ("light", "dark")
                    if f"vb-{t}" in (img.attributes.get("class") or "").split()
                    and (img.attributes.get("src") or "").startswith("data:image/png")
                ),
            )
            for div in html.css(".jp-OutputArea-output .vb-nb-plot")
        ]
        #: plain image outputs (plt.show), which would ignore the theme and have no alt text
        self.plain_images = sum(
            len(o.css("img"))
            for o, c in zip(outputs, classes, strict=True)
            if "jp-RenderedImage" in c
        )

    def assert_plots(self, n: int) -> None:
        assert self.plain_images == 0, "a plot shown with plt.show(): use vitbook.notebook.show"
        assert len(self.plots) == n
        for alts, themes in self.plots:
            assert themes == ["dark", "light"]
            (alt,) = alts  # one alt text, on both variants
            assert alt and len(alt) > 40


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
    nb.assert_plots(2)  # the digits and the training curves


@pytest.mark.slow
def test_practice_runs_with_its_outputs():
    nb = Executed("practice.py")
    out = nb.text
    assert "616,225" in out  # (784 + 1)^2 attention pairs at P = 8
    assert "token pairs: 8.58x" in out
    nb.assert_plots(3)  # shuffle accuracy, CLS attention, learning-rate curves
    in_order = re.search(r"in order: with positions ([\d.]+)%, without ([\d.]+)%", out)
    assert float(in_order.group(1)) > float(in_order.group(2))


# --- install cells, Colab twins, one notebook per chapter ------------------------------------


def test_every_chapter_has_a_notebook():
    chapters = sorted(p.stem for p in DOCS.glob("[0-9][0-9]-*.md"))
    assert [f"notebooks/ch{c}.py" for c in chapters] == CHAPTER_NOTEBOOKS
    assert len(CHAPTER_NOTEBOOKS) == 11


@pytest.mark.parametrize("name", ["lab-tinyvit8.py", "practice.py", *CHAPTER_NOTEBOOKS])
def test_first_code_cell_installs_the_edition_or_commit_it_belongs_to(name):
    """The first cell is the book's install cell (editions.INSTALL_CELL), naming an edition
    that exists or none; the repository's copy names no commit (the site's copy does, below).
    tests/test_notebook_install.py runs its branches."""
    from vitbook.site import editions

    code = [c for c in read(name).cells if c.cell_type == "code"]
    first = code[0].source
    edition = editions.notebook_edition(first)
    assert edition is None or edition in editions.tags(DOCS.parent), edition
    assert editions.notebook_commit(first) is None
    assert first == editions.install_cell(edition).rstrip("\n"), (
        "run `python -m vitbook.site.notebooks`"
    )
    assert 'find_spec("vitbook") is None' in first  # installed copies (tests, site) skip it
    assert 'find_spec("torch") is None' in first  # a reader's torch is kept
    assert "their last digits can differ" in first


def test_the_install_cell_installs_the_torch_that_requirements_pins():
    from vitbook.site import editions

    pins = (DOCS.parent / "requirements.txt").read_text().splitlines()
    (torch,) = [line for line in pins if line.startswith("torch==")]
    assert f'"{torch}"' in editions.INSTALL_CELL
    assert editions.TORCH_CPU_INDEX in editions.INSTALL_CELL


def git_has(obj: str) -> bool:
    import subprocess

    proc = subprocess.run(["git", "cat-file", "-e", obj], cwd=DOCS.parent, capture_output=True)
    return proc.returncode == 0


@pytest.mark.parametrize("name", ["lab-tinyvit8.py", "practice.py", *CHAPTER_NOTEBOOKS])
def test_the_published_copy_names_a_commit_or_edition_that_exists(name):
    """The .ipynb the site publishes beside each notebook's page (what its download button
    gives and the latest text's Colab button opens) is the twin with its install cell naming
    the commit this build is of, which exists in the repository; an edition's names its tag."""
    import json

    from vitbook.site import editions

    ed = editions.current(DOCS.parent)
    assert ed.commit, "no git here"
    nb = json.loads(twins.site_copy(DOCS / name, ed.commit))
    first = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    commit, edition = editions.notebook_commit(first), editions.notebook_edition(first)
    assert commit == ed.commit and git_has(f"{commit}^{{commit}}")
    assert edition is None or git_has(f"v{edition}^{{commit}}")
    # the rest is the twin: only that line differs
    twin = json.loads((DOCS / name).with_suffix(".ipynb").read_text(encoding="utf-8"))
    unstamped = ["".join(c["source"]) for c in nb["cells"]]
    unstamped = [editions.set_notebook_commit(src, None) for src in unstamped]
    assert unstamped == ["".join(c["source"]) for c in twin["cells"]]
    assert "".join("".join(c["source"]) for c in nb["cells"]).count(ed.commit) == 1
    assert not git_has("0" * 40 + "^{commit}")  # the check can fail


def test_colab_opens_an_editions_twin_at_its_tag_and_the_latest_texts_published_copy():
    from vitbook.site import editions

    ed = {"edition": "1.2.0", "ref": "v1.2.0", "path": "1.2.0"}
    blob = editions.colab_blob(ed, "notebooks/ch02-patches.py")
    assert blob == "v1.2.0/docs/notebooks/ch02-patches.ipynb"
    latest = {"edition": None, "ref": "abc", "path": "latest"}
    blob = editions.colab_blob(latest, "notebooks/ch02-patches.py")
    assert blob == "gh-pages/latest/notebooks/ch02-patches/ch02-patches.ipynb"
    # where macros.on_post_build writes it: <page folder>/<name>.ipynb under the version
    assert editions.colab_blob({**latest, "path": None}, "lab-tinyvit8.py") == (
        "gh-pages/latest/lab-tinyvit8/lab-tinyvit8.ipynb"
    )


def test_colab_twins_are_in_sync():
    """Each notebook's .ipynb (what Colab opens) is the jupytext conversion of its source."""
    stale = [
        src.name
        for src in twins.sources()
        if not src.with_suffix(".ipynb").exists()
        or src.with_suffix(".ipynb").read_text(encoding="utf-8") != twins.twin_text(src)
    ]
    assert not stale, f"run `python -m vitbook.site.notebooks`: {stale}"
    assert len(twins.sources()) == 13


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTER_NOTEBOOKS)
def test_chapter_notebook_runs(name):
    nb = execute(name)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors
    assert text_of(nb).strip(), f"{name} printed nothing"
