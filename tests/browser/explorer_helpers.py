"""Shared pieces of the explorer tests (tests/browser/test_explorers_*.py).

``open_explorer(browser, base_url, page_url, explorer_id, ...)`` opens a page in a fresh
browser context, records console errors and every request, waits until the explorer has mounted
and returns a ``Visit``; the functions below read what an explorer drew and said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np

MOUNT_TIMEOUT_MS = 20000


@dataclass
class Visit:
    page: object
    context: object
    explorer: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def root(self) -> str:
        return f'.vb-explorer[data-explorer="{self.explorer}"]'

    def foreign_requests(self, base_url: str) -> list[str]:
        host = urlsplit(base_url).netloc
        return [
            u for u in self.requests if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).netloc != host
        ]  # fmt: skip

    def close(self) -> None:
        self.context.close()


def open_explorer(
    browser,
    base_url: str,
    page_url: str,
    explorer: str,
    *,
    width: int = 1280,
    touch: bool = False,
    dark: bool = False,
) -> Visit:
    """Load ``page_url`` directly, scroll to ``explorer`` and wait for it to mount."""
    context = browser.new_context(
        viewport={"width": width, "height": 900},
        has_touch=touch,
        is_mobile=touch,
        color_scheme="dark" if dark else "light",
    )
    page = context.new_page()
    visit = Visit(page, context, explorer)
    page.on("console", lambda m: visit.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: visit.errors.append(str(e)))
    page.on("request", lambda r: visit.requests.append(r.url))
    page.goto(base_url + page_url, wait_until="load")
    # an explorer mounts when it comes near the screen (docs/javascripts/explorers/index.js)
    wait_mounted(visit)
    page.locator(visit.root).scroll_into_view_if_needed()
    return visit


def wait_mounted(visit: Visit) -> None:
    """Scroll the explorer into view (it mounts only near the screen) and wait for it."""
    visit.page.wait_for_selector(visit.root, state="attached", timeout=MOUNT_TIMEOUT_MS)
    visit.page.locator(visit.root).scroll_into_view_if_needed()
    visit.page.wait_for_selector(
        f"{visit.root}.vb-explorer--live canvas", state="attached", timeout=MOUNT_TIMEOUT_MS
    )
    visit.page.wait_for_function(
        "sel => document.querySelector(sel + ' .vb-live').textContent.length > 0",
        arg=visit.root,
        timeout=MOUNT_TIMEOUT_MS,
    )


def canvas_box(visit: Visit) -> dict:
    return visit.page.locator(f"{visit.root} canvas").first.bounding_box()


def canvas_png(visit: Visit) -> str:
    """The canvas's pixels as a data URL (compare two of them to see whether anything changed)."""
    return visit.page.eval_on_selector(f"{visit.root} canvas", "c => c.toDataURL()")


def live_text(visit: Visit) -> str:
    return visit.page.eval_on_selector(f"{visit.root} .vb-live", "e => e.textContent")


def shown_values(visit: Visit, selector: str = ".vb-values") -> np.ndarray:
    """The exact numbers an explorer prints in ``selector`` (each span's data-value)."""
    vals = visit.page.eval_on_selector_all(
        f"{visit.root} {selector} .vb-num", "es => es.map(e => Number(e.dataset.value))"
    )
    return np.asarray(vals, dtype=float)


def pixels_of_colour(visit: Visit, hex_colour: str) -> int:
    """How many canvas pixels have exactly ``hex_colour``."""
    return visit.page.eval_on_selector(
        f"{visit.root} canvas",
        """(c, hex) => {
            const [r, g, b] = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16));
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
                if (d[i] === r && d[i + 1] === g && d[i + 2] === b) n++;
            }
            return n;
        }""",
        hex_colour,
    )


def point(visit: Visit, fx: float, fy: float) -> tuple[float, float]:
    """Page coordinates of the point at fractions (fx, fy) of the canvas."""
    box = canvas_box(visit)
    return box["x"] + fx * box["width"], box["y"] + fy * box["height"]


def focus_canvas_by_tab(visit: Visit) -> None:
    """Focus the control just before the canvas, then press Tab: the canvas must take focus."""
    page = visit.page
    page.eval_on_selector(
        visit.root,
        """root => {
            const all = [...root.querySelectorAll('button, input, canvas')]
                .filter(e => !e.disabled && e.offsetParent !== null && !e.hidden);
            const i = all.indexOf(root.querySelector('canvas'));
            (i > 0 ? all[i - 1] : document.body).focus();
        }""",
    )
    page.keyboard.press("Tab")


class Transfers:
    """What a page transfers from now on: ``sizes``, ``{url: bytes}`` of the bodies as sent
    (gzip where the server compresses), and the requests still on their way."""

    def __init__(self, page) -> None:
        self.page = page
        self.sizes: dict[str, int] = {}
        self.pending: set = set()
        page.on("request", lambda r: self.pending.add(r))
        page.on("requestfailed", lambda r: self.pending.discard(r))
        page.on("requestfinished", lambda r: self._done(r))

    def _done(self, request) -> None:
        self.pending.discard(request)
        try:
            self.sizes[request.url] = request.sizes()["responseBodySize"]
        except Exception:  # noqa: BLE001 - an aborted request transferred nothing to count
            pass

    @property
    def total(self) -> int:
        return sum(self.sizes.values())

    def largest(self, n: int = 6) -> list[tuple[str, int]]:
        return sorted(self.sizes.items(), key=lambda kv: -kv[1])[:n]

    def wait_idle(self, quiet_ms: int = 500, timeout_ms: int = 15000) -> None:
        """Until no request has been on its way for ``quiet_ms`` (or ``timeout_ms`` passed:
        then it is weighed as it stands)."""
        quiet = 0
        for _ in range(timeout_ms // 50):
            quiet = 0 if self.pending else quiet + 50
            if quiet >= quiet_ms:
                return
            self.page.wait_for_timeout(50)


#: Whether every explorer of the page has mounted and none is still downloading what its view
#: needs (a view says so with data-loading).
EXPLORERS_SETTLED_JS = """() => [...document.querySelectorAll('.vb-explorer')]
    .every(e => e.classList.contains('vb-explorer--live') && !e.querySelector('[data-loading]'))"""


def scroll_to_the_end(page, transfers: Transfers) -> None:
    """Scroll to the end of the page in wheel steps, as a reader does, once
    docs/javascripts/reader.js has laid out the blocks the browser skipped on load (explorers are
    watched from then on); then wait until every explorer passed on the way has mounted and
    downloaded what its first view needs, and nothing more is on its way."""
    page.wait_for_function("document.documentElement.dataset.vbRendered === 'true'", timeout=20000)
    for _ in range(400):
        page.mouse.wheel(0, 600)
        page.wait_for_timeout(60)
        if page.evaluate("scrollY + innerHeight >= document.documentElement.scrollHeight - 2"):
            break
    page.wait_for_function(EXPLORERS_SETTLED_JS, timeout=MOUNT_TIMEOUT_MS)
    transfers.wait_idle()
