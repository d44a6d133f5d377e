"""Sessions to build, serve, test and lint the book. Each installs what it needs, pinned.

nox -s book       figures (only what is stale), then the site into site/
nox -s pdf        the book, then the printed edition into site/pdf/ (Chromium, offline)
nox -s figures    figures only; extra arguments go to `python -m vitbook figures`
nox -s serve      a live preview on http://127.0.0.1:8000
nox -s tests      the whole test suite, browser tests included (needs Debian's chromium)
nox -s tests -- -m "not slow"   the quick tier: no site build, browser, notebook or training tests
nox -s lint       ruff
nox -s bench      the model's speed benchmarks, Lighthouse scores per chapter and the explorers'
                  data sizes and repaint times (not a test); `nox -s bench -- --cold-build`
                  also times a cold build of the book and compares it with figures/
                  (`python -m vitbook verify`)
"""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["book"]

PYTHON = "3.11"
ENV = {"NO_MKDOCS_2_WARNING": "1", "PYTHONHASHSEED": "0"}


def install(session: nox.Session, *, npm: bool = True) -> None:
    """The pinned requirements (torch 2.13.0, the CPU build), the package, and MathJax."""
    session.install("-r", "requirements.txt")
    session.install("--no-deps", "-e", ".")
    if npm:
        session.run("npm", "ci", "--no-audit", "--no-fund", external=True)


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
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env=ENV)
    session.run("python", "-m", "vitbook.site.pdf", "site", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def serve(session: nox.Session) -> None:
    install(session)
    session.run("python", "-m", "vitbook", "figures", env=ENV)
    session.run("mkdocs", "serve", "--dev-addr", "127.0.0.1:8000", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    install(session)
    env = dict(ENV, PLAYWRIGHT_BROWSERS_PATH="0")
    if os.environ.get("CI"):
        env["CI"] = os.environ["CI"]
    session.run("pytest", *(session.posargs or ["-m", ""]), env=env)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install(
        *[line.strip() for line in open("requirements.txt") if line.lower().startswith("ruff==")]
    )
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


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
