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


#: Run before each page's own scripts in the tests' browser: every block of the text laid out
#: from the start. A reader's browser skips the layout of blocks far below the screen on load
#: (content-visibility, docs/stylesheets/book.css) and docs/javascripts/reader.js renders them
#: while the page is idle; a test that reads the text or measures a figure right after loading
#: would otherwise meet blocks not laid out yet (no innerText, placeholder sizes). The tests of
#: what a phone downloads on a first visit take ``browser.raw``, which lays out as a reader's.
LAID_OUT = """(() => {
  const add = () => {
    const s = document.createElement("style");
    s.textContent = ".md-content__inner > * { content-visibility: visible !important; }";
    document.documentElement.appendChild(s);
  };
  if (document.documentElement) add();
  else new MutationObserver((_, seen) => {
    if (document.documentElement) { seen.disconnect(); add(); }
  }).observe(document, { childList: true });
})();"""


class LaidOutBrowser:
    """The session's Chromium, whose new pages lay out every block of the text at once."""

    def __init__(self, browser) -> None:
        self._browser = browser

    def new_context(self, *args, **kwargs):
        ctx = self._browser.new_context(*args, **kwargs)
        ctx.add_init_script(LAID_OUT)
        return ctx

    def new_page(self, *args, **kwargs):
        ctx = self.new_context(*args, **kwargs)
        page = ctx.new_page()
        page.on("close", lambda _: ctx.close())
        return page

    @property
    def raw(self):
        """The browser as a reader's: blocks far down skipped on load (the page-weight tests)."""
        return self._browser

    def __getattr__(self, name):
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def browser():
    try:
        with local.chromium() as b:
            yield LaidOutBrowser(b)
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
