"""Fixtures for the browser tests: the built site, a local server, headless Chromium.

The site is built once per session with ``mkdocs build --strict`` into a temporary folder, or
taken from ``$VITBOOK_SITE``; it is served on 127.0.0.1 by a thread. Chromium is Debian's
(``/usr/bin/chromium``), driven by Playwright; nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import sitebuild

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("VITBOOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(
            f"Chromium not found at {path}: `apt-get install chromium` (Debian's package; "
            f"Playwright must not download a browser)",
            pytrace=False,
        )
    return path


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
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()


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
