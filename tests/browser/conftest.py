"""Fixtures for the browser tests: the built site and a local server (the browser is the
session's, from tests/conftest.py).

The site is built once per session with ``mkdocs build --strict`` into a temporary folder, or
taken from ``$VITBOOK_SITE``; it is served on 127.0.0.1 by a thread (``vitbook.site.local``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sitebuild


@pytest.fixture(scope="session")
def site() -> Path:
    try:
        return sitebuild.built_site()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def base_url(site: Path):
    with sitebuild.serve(site) as url:
        yield url


@pytest.fixture(scope="session")
def artifacts() -> Path:
    sitebuild.ARTIFACTS.mkdir(exist_ok=True)
    return sitebuild.ARTIFACTS
