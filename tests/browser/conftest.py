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


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not sitebuild.PAGE_BYTES:
        return
    tr = terminalreporter
    tr.section("page weight (bytes transferred on first visit, light theme, scrolled)")
    limit = sitebuild.MAX_PAGE_BYTES
    for url, size in sorted(sitebuild.PAGE_BYTES.items(), key=lambda kv: -kv[1]):
        flag = "  OVER 3 MB" if size > limit else ""
        tr.write_line(f"{size / 1024:10,.0f} KiB  /{url}{flag}")
    tr.write_line(
        f"{sum(sitebuild.PAGE_BYTES.values()) / 1024:10,.0f} KiB  total over "
        f"{len(sitebuild.PAGE_BYTES)} pages"
    )
