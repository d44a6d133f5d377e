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
