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
is checked without the package: a copy that names no edition and no commit (the repository's
own) says where to get one that does, and an edition's installs that edition's wheel from its
release.

Then as a reader on a fresh machine meets it (issue 34): a venv that has only pip, the fastest
chapter notebook's published copy (its install cell naming this commit), the cell installing
torch (here from this machine's own store, with plain pip) and the package from a clone of the
repository at that commit (``VITBOOK_SOURCE``: GitHub is not reachable here), then the
notebook's cells. The same venv then installs the wheel and the sdist of this checkout, and
each gives a working ``python -m vitbook --help`` and ``import vitbook.model``.
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


def test_a_copy_naming_no_edition_and_no_commit_says_where_to_get_one(tmp_path):
    """In a venv without vitbook, the cell as the repository holds it (no edition yet, and a
    file cannot name its own commit) stops with a message that says where a copy that installs
    comes from, and tries no install."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    cell = editions.set_notebook_edition(install_cell("notebooks/ch02-patches.py"), None)
    assert editions.notebook_commit(cell) is None
    proc = run(bare / "bin" / "python", cell, tmp_path)
    assert proc.returncode != 0
    assert "RuntimeError: This copy names no edition and no commit of the book" in proc.stderr
    assert "No module named pip" not in proc.stderr  # it did not try to install anything


def with_torch(bare: Path) -> Path:
    """``bare``'s python, seeing the test environment's torch (and the rest) through a path
    file, which does not run the editable install's hook: vitbook stays missing."""
    python = bare / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, env=clean_env(),
    ).stdout.strip()  # fmt: skip
    Path(site, "book-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_with_an_edition_the_install_cell_installs_its_wheel(tmp_path):
    """The cell of an edition's notebook installs that edition's wheel from its release (here
    offline, so pip fails, and the error names what it tried to install); a torch that is there
    is kept (nothing else is installed first)."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True, env=clean_env())
    cell = editions.set_notebook_edition(install_cell("notebooks/ch02-patches.py"), "9.8.7")
    proc = run(with_torch(bare), cell, tmp_path)
    assert proc.returncode != 0
    url = editions.wheel_url("https://github.com/vitbook/vitbook", "9.8.7")
    assert f"vitbook @ {url}" in proc.stderr, proc.stderr[-2000:]
    assert "torch==" not in proc.stderr


def test_without_torch_the_install_cell_installs_torchs_cpu_build_first(tmp_path):
    """Where no torch is installed, the cell asks PyTorch's CPU index for the book's torch
    before the package (offline here: the error names what it tried)."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True, env=clean_env())
    cell = editions.install_cell(None, "0" * 40)
    proc = run(bare / "bin" / "python", cell, tmp_path)
    assert proc.returncode != 0
    assert f"'torch==2.13.0', '--index-url', '{editions.TORCH_CPU_INDEX}'" in proc.stderr
    assert "vitbook @" not in proc.stderr  # it stopped at torch


# --- a fresh machine: only pip, the published copy's install cell, then the notebook ------------

#: the chapter notebook that runs fastest whole (about 12 s here, with its imports)
FRESH = "notebooks/ch03-patch-embedding.py"


def pip_env(**extra: str) -> dict[str, str]:
    """This machine's pip as a reader's would be (its own configuration: here a local store
    that holds torch's CPU build), without the test environment's Python variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "MPLBACKEND": "Agg", **extra}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A venv with only pip, into which the published copy's install cell put torch and the
    package at this commit; returns (python, commit, the cell's run)."""
    tmp = tmp_path_factory.mktemp("fresh")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", f"file://{ROOT}", str(clone)],
                   check=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True, env=pip_env())
    python = tmp / "venv" / "bin" / "python"
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], check=True,
                            capture_output=True, text=True, env=pip_env()).stdout  # fmt: skip
    # what `python -m venv` gives: pip (and, before Python 3.12, setuptools)
    assert {line.split("==")[0] for line in listed.split()} <= {"pip", "setuptools"}, listed
    from vitbook.site import notebooks

    copy = json.loads(notebooks.site_copy(ROOT / "docs" / FRESH, commit))
    code = ["".join(c["source"]) for c in copy["cells"] if c["cell_type"] == "code"]
    assert editions.notebook_commit(code[0]) == commit
    work = tmp / "work"
    work.mkdir()
    # file://localhost/...: the pip that `python -m venv` brings (23.2 with Python 3.11) rejects
    # a git+file:/// address, which has no host
    env = pip_env(VITBOOK_SOURCE=f"git+file://localhost{clone}", VITBOOK_TORCH_INDEX="")
    proc = subprocess.run([str(python), "-c", code[0]], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return python, commit, code, work


def test_a_chapter_notebook_runs_on_a_fresh_machine_from_its_install_cell(fresh):
    """The cell installed torch 2.13.0 (the CPU build, from the store here) and vitbook from the
    repository at the commit the copy names; then every cell of the notebook runs."""
    python, commit, code, work = fresh
    probe = (
        "import json, importlib.metadata as m; d = m.distribution('vitbook'); "
        "print(json.dumps({'torch': m.version('torch'), "
        "'url': json.loads(d.read_text('direct_url.json'))}))"
    )
    out = subprocess.run([str(python), "-c", probe], cwd=work, env=pip_env(), check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    info = json.loads(out)
    assert info["torch"] == "2.13.0+cpu"
    assert info["url"]["vcs_info"]["commit_id"] == commit, info
    body = "\n\n".join(code)  # the install cell again (it finds vitbook: nothing to do), the rest
    proc = subprocess.run([str(python), "-c", body], cwd=work, env=pip_env(), capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert proc.stdout.strip(), "the notebook printed nothing"


def test_the_wheel_and_the_sdist_install_and_run_on_a_fresh_machine(fresh, tmp_path):
    """The wheel holds the package and nothing of the book's build (no figures, frozen runs,
    tests or pages); it and the sdist each install into the fresh venv and give a working
    `python -m vitbook --help` and `import vitbook.model`."""
    import zipfile

    python, _, _, work = fresh
    wheel, sdist = editions.build_dist(ROOT, tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert "vitbook/model.py" in names and "vitbook/engine/cli.py" in names
    tops = {n.split("/")[0] for n in names}
    assert tops <= {"vitbook", f"vitbook-{editions.package_version(ROOT)}.dist-info"}, tops
    heavy = [n for n in names if n.endswith((".png", ".svg", ".safetensors", ".ipynb"))]
    assert heavy == [] and not any("/frozen/" in n or "/tests/" in n for n in names)
    for dist in (wheel, sdist):
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                        "--force-reinstall", str(dist)], check=True, env=pip_env())  # fmt: skip
        for cmd in (["-m", "vitbook", "--help"], ["-c", "import vitbook.model as m; print(m)"]):
            proc = subprocess.run([str(python), *cmd], cwd=work, env=pip_env(),
                                  capture_output=True, text=True)  # fmt: skip
            assert proc.returncode == 0, (dist.name, cmd, proc.stderr[-2000:])
            assert str(work.parent / "venv") in proc.stdout or "usage" in proc.stdout.lower()
