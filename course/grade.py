"""Build the graded assignments and grade submissions, with otter-grader (no Docker needed).

Each assignment is one master notebook, ``course/assignments/<name>/<name>.py`` (a jupytext
script in otter's format): the questions, the reference solution and the tests, visible and
hidden. ``otter assign`` splits it into what a student gets and what only the grader sees.

    python course/grade.py build                 # course/dist/<name>/student/ and autograder/
    python course/grade.py grade <folder>        # every <name>*.ipynb in <folder>: scores.csv
    python course/grade.py grade <folder> --out marks.csv

``build`` writes, per assignment, ``student/<name>.ipynb`` with its visible tests (hand that
folder out) and ``autograder/autograder.zip`` with every test (keep it). ``grade`` runs each
submission through ``otter run`` against its assignment's zip (which assignment: the
notebook's file name starts with the assignment's name, ``a3-...``), and writes one row per
submission: the file, the assignment, each question's points, the total and the maximum.
``nox -s grade -- <folder>`` does both.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ROOT / "course" / "assignments"
DIST = ROOT / "course" / "dist"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def names() -> list[str]:
    """The assignments, in order (a1-..., a2-..., ...)."""
    return sorted(p.name for p in ASSIGNMENTS.iterdir() if (p / f"{p.name}.py").is_file())


def master(name: str) -> nbformat.NotebookNode:
    """The master notebook of ``name`` (questions, solutions and every test)."""
    nb = jupytext.read(ASSIGNMENTS / name / f"{name}.py")
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata.pop("jupytext", None)
    return nb


def _env() -> dict[str, str]:
    """The book's package importable from a clone that did not install it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def otter(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("otter")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "otter"]
    return subprocess.run([*cmd, *args], cwd=cwd, env=_env(), capture_output=True, text=True)


def build(name: str, dist: Path = DIST) -> Path:
    """``otter assign`` one assignment into ``dist/<name>``; returns that folder."""
    out = dist / name
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{name}.ipynb"
        nbformat.write(master(name), src)
        r = otter("assign", str(src), str(out.resolve()), cwd=Path(tmp))
    zips = sorted((out / "autograder").glob(f"{name}-autograder_*.zip"))
    if r.returncode != 0 or len(zips) != 1:
        raise RuntimeError(f"otter assign failed for {name}:\n{r.stdout}\n{r.stderr}")
    zips[0].rename(out / "autograder" / "autograder.zip")  # otter's name carries the time
    return out


def grade_one(notebook: Path, autograder: Path) -> dict:
    """Run ``otter run`` on one submission; returns {question: points}, total, possible."""
    with tempfile.TemporaryDirectory() as tmp:
        r = otter("run", "-a", str(autograder.resolve()), "-o", tmp, "--no-logo",
                  str(notebook.resolve()))  # fmt: skip
        results = Path(tmp) / "results.json"
        if not results.is_file():
            raise RuntimeError(f"otter run gave no results for {notebook}:\n{r.stdout}\n{r.stderr}")
        data = json.loads(results.read_text())
    tests = [t for t in data["tests"] if t.get("max_score") is not None]  # not the summary
    scores = {t["name"]: float(t.get("score") or 0.0) for t in tests}
    possible = sum(float(t["max_score"]) for t in tests)
    return {"scores": scores, "total": sum(scores.values()), "possible": possible}


def assignment_of(notebook: Path) -> str | None:
    for name in names():
        if notebook.name.startswith(name):
            return name
    return None


def grade_folder(folder: Path, out: Path, dist: Path = DIST, jobs: int = 0) -> list[dict]:
    """Grade every ``<assignment>*.ipynb`` under ``folder``, ``jobs`` at a time (0: one per
    core, at most 4); write the marks to ``out``."""
    todo = []
    for nb in sorted(folder.rglob("*.ipynb")):
        name = assignment_of(nb)
        if name is None or ".ipynb_checkpoints" in nb.parts:
            continue
        zip_ = dist / name / "autograder" / "autograder.zip"
        if not zip_.is_file():
            build(name, dist)
        todo.append((nb, name, zip_))
    # each submission runs in its own otter process (its own kernel): a few at once
    jobs = jobs or max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda t: grade_one(t[0], t[2]), todo))
    rows = []
    for (nb, name, _), res in zip(todo, results, strict=True):
        rows.append({"file": str(nb.relative_to(folder)), "assignment": name, **res["scores"],
                     "total": res["total"], "possible": res["possible"]})  # fmt: skip
        print(f"{nb.relative_to(folder)}: {res['total']:g} / {res['possible']:g}")
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} submission(s) graded: {out}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python course/grade.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="otter assign every assignment into course/dist/")
    b.add_argument("names", nargs="*", help="only these assignments")
    g = sub.add_parser("grade", help="grade every submission in a folder")
    g.add_argument("folder", type=Path)
    g.add_argument("--out", type=Path, default=None, help="CSV of marks (<folder>/scores.csv)")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        for name in args.names or names():
            print(f"{name}: {build(name)}")
        return 0
    grade_folder(args.folder, args.out or args.folder / "scores.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
