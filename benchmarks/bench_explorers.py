"""Size and repaint speed of the book's explorers (docs/javascripts/explorers/).

Run:  python benchmarks/bench_explorers.py [--moves N]

For each explorer: the bytes of its data file (figures/chNN/<id>.explorer.bin), raw and
gzip-compressed (what a server sends; the budget is 300 KB compressed), and the median time of a
repaint after a pointer move, measured in headless Chromium with performance.now() around the
repaint (docs/javascripts/explorers/canvas.js: repaintTimer times each pointer move from the event
to the end of its repaint and new words, in window.vbRepaintTimes). The site is
$VITBOOK_SITE if set, otherwise built once with mkdocs (tests/browser/sitebuild.py).
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

import sitebuild  # noqa: E402

#: explorer id -> the page that places it (every explorer placed in the book)
PAGES = {
    "ch00/forward-pass": "00-see-it-in-action/",
    "ch00/your-image": "00-see-it-in-action/",
    "ch02/patch-size": "02-patches/",
    "ch03/pca-embedding": "03-patch-embedding/",
    "ch04/position-similarity": "04-cls-and-position/",
}
BUDGET = 300 * 1024


def placed(site: Path) -> dict[str, str]:
    """The explorers of PAGES that the built site really places."""
    out = {}
    for key, url in PAGES.items():
        html = site / url / "index.html"
        if html.exists() and f'data-explorer="{key}"' in html.read_text(encoding="utf-8"):
            out[key] = url
    return out


def repaint_times(page, key: str, moves: int) -> list[float]:
    root = f'.vb-explorer[data-explorer="{key}"]'
    page.locator(root).scroll_into_view_if_needed()  # it mounts when it comes near the screen
    page.wait_for_selector(f"{root}.vb-explorer--live canvas", state="attached", timeout=30000)
    page.locator(root).scroll_into_view_if_needed()
    box = page.locator(f"{root} canvas").bounding_box()
    page.evaluate("id => { (window.vbRepaintTimes ||= {})[id] = []; }", key)
    for i in range(moves):
        # a zig-zag over the left part of the canvas, where every explorer has its picture
        fx = 0.03 + 0.22 * ((i * 7) % moves) / moves
        fy = 0.05 + 0.4 * ((i * 3) % moves) / moves
        page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
    page.wait_for_timeout(100)
    return page.evaluate("id => window.vbRepaintTimes[id]", key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=200, help="pointer moves per explorer")
    args = parser.parse_args()
    from vitbook.site.local import chromium

    site = sitebuild.built_site()
    explorers = placed(site)
    rows = []
    with sitebuild.serve(site) as base, chromium() as browser:
        for key, url in explorers.items():
            blob = (ROOT / "figures" / f"{key}.explorer.bin").read_bytes()
            packed = len(gzip.compress(blob, 9))
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + url, wait_until="load")
            times = repaint_times(page, key, args.moves)
            page.close()
            rows.append((key, len(blob), packed, len(times), statistics.median(times), max(times)))
    head = ("explorer", "data KB", "gzip KB", "paints", "median ms", "max ms")
    print(f"{head[0]:26} {head[1]:>8} {head[2]:>8} {head[3]:>7} {head[4]:>10} {head[5]:>7}")
    for key, raw, packed, n, med, top in rows:
        flag = "  OVER BUDGET" if packed > BUDGET else ""
        kb = f"{raw / 1024:8.1f} {packed / 1024:8.1f}"
        print(f"{key:26} {kb} {n:7d} {med:10.2f} {top:7.2f}{flag}")
    print("targets: gzip <= 300 KB per explorer; median repaint < 16 ms (one frame at 60 Hz)")


if __name__ == "__main__":
    main()
