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

#: Fixtures that need the built site (tests/browser/sitebuild.py) or the session's browser.
SITE_FIXTURES = {"site", "base_url", "browser"}


#: Slow files that need no site, run by the other worker while the first site file builds it.
#: (two of them: with four, ending at about the same time as the build, the build had less of
#: the machine and every file waiting for the site started later: 1,358 s against 1,191 s,
#: though other work shared the machine in the last minutes of that run)
BESIDE_THE_SITE_BUILD = ("tests/test_engine.py", "tests/test_robustness.py")
#: The rebuild of every item and the retrained shard (minutes on both cores), run last.
LAST = "tests/test_book_build.py"


def pytest_collection_modifyitems(config, items):
    """Files in the order that keeps two workers busy without crowding the two cores
    (``nox -s tests`` runs the suite with pytest-xdist, ``--dist loadfile
    --no-loadscope-reorder``: each test file on one worker, the files handed out in this
    order): the first file that needs the built site (its worker builds the site, on about one
    and a half cores) while the other worker runs slow single-process files; then the other
    site files, the other slow files and the quick ones; last the rebuild of every item and
    the retrained shard, which trains on both cores and so runs alone at the end (beside the
    site build it slowed both by half). The order within a file is kept."""
    files: dict[str, set[str]] = {}
    for item in items:
        marks = files.setdefault(item.nodeid.split("::")[0], set())
        marks.update(SITE_FIXTURES & set(item.fixturenames))
        marks.update(m.name for m in item.iter_markers() if m.name == "slow")
    site_files = [f for f, marks in files.items() if marks & SITE_FIXTURES]

    def rank(item) -> int:
        path = item.nodeid.split("::")[0]
        marks = files[path]
        if site_files and path == site_files[0]:
            return 0
        if path in BESIDE_THE_SITE_BUILD:
            return 1 + BESIDE_THE_SITE_BUILD.index(path)
        if path == LAST:
            return 99
        return 10 if marks & SITE_FIXTURES else 11 if "slow" in marks else 12

    items.sort(key=rank)


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
#: Bytes each page transferred on a first visit, scrolled (tests/browser/test_pages.py records
#: them as a user property, which pytest-xdist carries from its workers to this process).
PAGE_BYTES: dict[str, int] = {}


def pytest_runtest_logreport(report) -> None:
    name = report.nodeid.split("::")[0]
    SECONDS[name] = SECONDS.get(name, 0.0) + report.duration
    for key, value in report.user_properties:
        if key == "page_bytes":
            PAGE_BYTES[value[0]] = value[1]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Where the time went: seconds per test file, the largest first (timings are reported,
    never asserted; with workers the seconds add up to more than the run took); and what each
    page weighs."""
    tr = terminalreporter
    if PAGE_BYTES:
        tr.section("page weight (bytes transferred on first visit, light theme, scrolled)")
        for url, size in sorted(PAGE_BYTES.items(), key=lambda kv: -kv[1]):
            tr.write_line(f"{size / 1024:10,.0f} KiB  /{url}")
        tr.write_line(
            f"{sum(PAGE_BYTES.values()) / 1024:10,.0f} KiB  total over {len(PAGE_BYTES)} pages"
        )
    if not SECONDS:
        return
    tr.section("where the time went (seconds per test file)")
    total = sum(SECONDS.values())
    for name, secs in sorted(SECONDS.items(), key=lambda kv: -kv[1]):
        if secs >= 1.0:
            tr.write_line(f"{secs:9.1f}  {100 * secs / total:5.1f}%  {name}")
    tr.write_line(f"{total:9.1f}  100.0%  in all ({len(SECONDS)} files)")
