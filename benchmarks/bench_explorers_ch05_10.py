"""Repaint time of the explorers of Chapters 5-10 in headless Chromium (not a test).

Usage: python benchmarks/bench_explorers_ch05_10.py /path/to/built/site

Each explorer wraps its repaint in kit.js's ``timed()``, which records every repaint's duration
in ``window.__vbRepaint``; this script moves the pointer over each explorer (or presses keys)
60 times and prints the median and the 90th percentile per explorer, and the compressed size
of its data file (gzip -9). Target: median under 16 ms (one frame at 60 Hz).
"""

from __future__ import annotations

import gzip
import statistics
import sys
from pathlib import Path

from vitbook.site.local import chromium, serve

#: page, explorer key, the element to drive, how: "move" (pointer sweeps) or "keys"
CASES = [
    ("05-self-attention/", "ch05/attention-calculator", 'table[data-m="X"] input', "type"),
    ("06-multi-head-attention/", "ch06/heads", "canvas", "move"),
    ("07-encoder-block/", "ch07/gelu-relu", "canvas", "move"),
    ("08-whole-model/", "ch08/cost-calculator", 'input[data-field="image_size"]', "type"),
    ("09-training/", "ch09/draw-a-digit", "canvas.vb2-board", "move"),
    ("10-inside-a-trained-vit/", "ch10/attention-explorer", "canvas.vb2-attx-canvas", "move"),
]


def main(site: Path) -> None:
    print(f"{'explorer':28} {'repaints':>8} {'median ms':>10} {'p90 ms':>8} {'data gz KB':>11}")
    with serve(site) as base, chromium() as browser:
        for url, key, target, how in CASES:
            data = site / "figures" / f"{key}.explorer.bin"
            if not data.exists():
                continue
            blob = data.read_bytes()  # the site holds it gzip-compressed (vitbook/site/hooks.py)
            kb = len(blob if blob[:2] == b"\x1f\x8b" else gzip.compress(blob, 9)) / 1024
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + url, wait_until="load")
            # an explorer mounts when it comes near the screen
            page.locator(f'.vb-explorer[data-explorer="{key}"]').scroll_into_view_if_needed()
            page.wait_for_selector(f'.vb-explorer--live[data-explorer="{key}"]', timeout=20000)
            # and until what its first view needs has arrived (Ch 10: the first image's maps)
            page.wait_for_function("!document.querySelector('.vb-explorer [data-loading]')")
            el = page.locator(f'.vb-explorer[data-explorer="{key}"] {target}').first
            el.scroll_into_view_if_needed()
            page.evaluate("window.__vbRepaint = {}")
            box = el.bounding_box()
            for i in range(60):
                if how == "move":
                    x = box["x"] + 3 + (box["width"] - 6) * (i % 30) / 29
                    y = box["y"] + 20 + (box["height"] - 30) * ((i * 7) % 30) / 29
                    page.mouse.move(x, y)
                    if key == "ch09/draw-a-digit":
                        page.mouse.down()
                        page.mouse.up()
                else:
                    el.fill(str([224, 384, 512][i % 3]) if "image_size" in target else str(i % 5))
            times = [t for v in page.evaluate("window.__vbRepaint").values() for t in v]
            page.close()
            if not times:
                print(f"{key:28} no repaint recorded")
                continue
            p90 = statistics.quantiles(times, n=10)[-1] if len(times) > 1 else times[0]
            print(
                f"{key:28} {len(times):8d} {statistics.median(times):10.2f} {p90:8.2f} {kb:11.1f}"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:  # $VITBOOK_SITE, or a site built once (as bench_explorers.py does)
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
        import sitebuild

        main(sitebuild.built_site())
