"""Fixtures shared by the whole suite.

``browser``: one headless Chromium for the session (Debian's, driven by Playwright), used by the
browser tests and by the printed edition's tests. Playwright's sync API allows one such driver per
thread at a time, so every test that needs a browser takes this one instead of starting its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import scratch

from vitbook.site import local


def pytest_collection_modifyitems(config, items):
    """The cold build runs first: it trains every run of the book once, in a scratch cache, and
    shares them with this session's cache (``verify --share-runs``), so that the tests after it
    that need a trained model do not train it a second time."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_book_build.py"))


@pytest.fixture(scope="session")
def browser():
    try:
        with local.chromium() as b:
            yield b
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A scratch project for the engine's tests (tests/scratch.py)."""
    return scratch.make_book(tmp_path)


#: Seconds per test file in this run (setup, call and teardown), for the split printed at the end.
SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report) -> None:
    name = report.nodeid.split("::")[0]
    SECONDS[name] = SECONDS.get(name, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Where the time went: seconds per test file, the largest first (timings are reported,
    never asserted)."""
    if not SECONDS:
        return
    tr = terminalreporter
    tr.section("where the time went (seconds per test file)")
    total = sum(SECONDS.values())
    for name, secs in sorted(SECONDS.items(), key=lambda kv: -kv[1]):
        if secs >= 1.0:
            tr.write_line(f"{secs:9.1f}  {100 * secs / total:5.1f}%  {name}")
    tr.write_line(f"{total:9.1f}  100.0%  in all ({len(SECONDS)} files)")
