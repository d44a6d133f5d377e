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
