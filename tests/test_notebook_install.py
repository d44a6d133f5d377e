"""The notebooks against the package as a reader installs it (issue 26): a wheel built from this
checkout, installed into a clean virtual environment, with no network.

The book's own environment imports ``vitbook`` from the checkout, so a notebook that needs a
file the wheel leaves out, or a module that is not packaged, would pass every other test and
fail for a student on Colab. Here the wheel is built from the checkout (setuptools, no build
isolation: nothing is downloaded), installed into a fresh venv without its dependencies, which
come from the test environment's site-packages through a path file (so torch is not
installed twice; a path file does not run the editable install's hook, so the checkout is not
importable), and each notebook's first cells run there, from an empty folder, offline: the
install cell (which finds the package and installs nothing), every import the notebook makes,
and the first computing cell of the notebooks that compute in seconds. The install cell itself
is checked without the package: with no edition released it says so, and with an edition it
installs that edition's wheel from its release.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import jupytext
import pytest

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

from vitbook.site import editions  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [p.relative_to(ROOT / "docs").as_posix() for p in editions.notebook_sources(ROOT)]
#: notebooks whose first computing cell takes seconds: it runs whole; the others' imports run
QUICK = {"notebooks/ch02-patches.py", "notebooks/ch07-encoder-block.py"}


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_RETRIES": "0",
            "PIP_TIMEOUT": "3", "MPLBACKEND": "Agg"}  # fmt: skip


def offline(cmd: list[str]) -> list[str]:
    prefix, _ = sitebuild.offline_prefix()
    return [*(prefix or []), *cmd]


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with the wheel of this checkout and nothing else of the book."""
    tmp = tmp_path_factory.mktemp("install")
    wheel, sdist = editions.build_dist(ROOT, tmp / "dist")
    assert wheel.name == f"vitbook-{editions.package_version(ROOT)}-py3-none-any.whl"
    assert sdist.name.endswith(".tar.gz")
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, env=clean_env())
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, env=clean_env(),
    ).stdout.strip()  # fmt: skip
    # the dependencies (torch, numpy, ...) from the test environment, without its .pth hooks
    Path(site, "book-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        offline([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]),
        check=True, env=clean_env(),
    )  # fmt: skip
    return python


def cells(name: str) -> list[str]:
    nb = jupytext.read(ROOT / "docs" / name)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def imports_of(sources: list[str]) -> str:
    """Every import statement of the notebook, in order (top-level ones of each cell)."""
    import ast

    out = []
    for src in sources:
        for node in ast.parse(src).body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                out.append(ast.unparse(node))
    return "\n".join(out)


def run(python: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        offline([str(python), "-c", code]), cwd=cwd, env=clean_env(), capture_output=True,
        text=True, timeout=900,
    )  # fmt: skip


def test_the_first_cells_of_every_notebook_run_against_the_installed_wheel(venv, tmp_path):
    """One interpreter runs every notebook's cells in a namespace of its own, offline, from an
    empty folder; vitbook must come from the venv, not from the checkout."""
    plan = []
    for name in NOTEBOOKS:
        code = cells(name)
        body = code[1] if name in QUICK else imports_of(code[1:])
        plan.append((name, code[0], body))
    driver = textwrap.dedent(
        """
        import json, sys, traceback
        plan = json.loads(sys.argv[1])
        done = {}
        for name, install, body in plan:
            ns = {"__name__": "__main__"}
            try:
                exec(compile(install, name + ":install", "exec"), ns)
                exec(compile(body, name + ":first cells", "exec"), ns)
                done[name] = "ok"
            except BaseException:
                done[name] = traceback.format_exc()[-1500:]
        import vitbook
        print("RESULT", json.dumps({"done": done, "vitbook": vitbook.__file__}))
        """
    )
    proc = subprocess.run(
        offline([str(venv), "-c", driver, json.dumps(plan)]), cwd=tmp_path, env=clean_env(),
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    m = re.search(r"^RESULT (.*)$", proc.stdout, re.M)
    assert m, (proc.stdout + proc.stderr)[-3000:]
    result = json.loads(m.group(1))
    assert Path(result["vitbook"]).is_relative_to(venv.parent.parent), result["vitbook"]
    failed = {k: v for k, v in result["done"].items() if v != "ok"}
    assert failed == {}, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
    assert sorted(result["done"]) == sorted(NOTEBOOKS) and len(NOTEBOOKS) == 13


def install_cell(name: str) -> str:
    return cells(name)[0]


def test_without_an_edition_the_install_cell_says_so(tmp_path):
    """In a venv without vitbook, the cell of a notebook that names no edition stops with a
    message that says no edition has been released, and tries no install."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    cell = editions.set_notebook_edition(install_cell("notebooks/ch02-patches.py"), None)
    proc = run(bare / "bin" / "python", cell, tmp_path)
    assert proc.returncode != 0
    assert "RuntimeError: No edition of the book has been released yet" in proc.stderr
    assert "No module named pip" not in proc.stderr  # it did not try to install anything


def test_with_an_edition_the_install_cell_installs_its_wheel(tmp_path):
    """The cell of an edition's notebook installs that edition's wheel from its release (here
    offline, so pip fails, and the error names what it tried to install)."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True, env=clean_env())
    cell = editions.set_notebook_edition(install_cell("notebooks/ch02-patches.py"), "9.8.7")
    proc = run(bare / "bin" / "python", cell, tmp_path)
    assert proc.returncode != 0
    url = editions.wheel_url("https://github.com/vitbook/vitbook", "9.8.7")
    assert f"vitbook @ {url}" in proc.stderr, proc.stderr[-2000:]
