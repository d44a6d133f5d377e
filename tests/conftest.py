"""Fixtures shared by the whole suite.

``browser``: one headless Chromium for the session (Debian's, driven by Playwright), used by the
browser tests and by the printed edition's tests. Playwright's sync API allows one such driver per
thread at a time, so every test that needs a browser takes this one instead of starting its own.
"""

from __future__ import annotations

import pytest

from vitbook.site import local


@pytest.fixture(scope="session")
def browser():
    try:
        with local.chromium() as b:
            yield b
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
