"""Lighthouse scores and page weight of every chapter page, as a reader on a phone meets them.

Run:  python benchmarks/lighthouse.py [SITE_DIR]   (default: $VITBOOK_SITE, else site/)

Serves the built site on 127.0.0.1 as GitHub Pages would (gzip), and for each chapter:

* runs Lighthouse 12.2.3 (pinned in package.json, from node_modules) with Debian's Chromium
  ($CHROME_PATH, default /usr/bin/chromium), mobile emulation (Lighthouse's default: a mid-range
  phone on a throttled 4G connection), and prints the four scores, the total blocking time and
  the largest contentful paint;
* weighs the page in headless Chromium at 390 px: the bytes transferred on a first visit (before
  any scrolling) and after scrolling to the end (explorers mounted, lazy images loaded).

Targets (issue 25): performance at least 90 and the other three categories 100 on every chapter;
at most 400 KB on a first visit and 600 KB after scrolling. A report, not a test: scores move with
the machine's load (run it on a quiet machine), and nothing here fails a build. The JSON reports
go to test-artifacts/lighthouse/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
import sitebuild  # noqa: E402

CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
TARGETS = {"performance": 90, "accessibility": 100, "best-practices": 100, "seo": 100}
FIRST_KB, SCROLLED_KB = 400, 600


def run(url: str, out: Path) -> dict[str, float]:
    env = {**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")}
    cmd = [
        str(LIGHTHOUSE),
        url,
        "--quiet",
        "--output=json",
        f"--output-path={out}",
        "--only-categories=" + ",".join(CATEGORIES),
        "--chrome-flags=--headless=new --no-sandbox --disable-gpu",
    ]
    subprocess.run(cmd, env=env, check=True, timeout=600, capture_output=True)
    report = json.loads(out.read_text())
    scores: dict[str, float] = {
        c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES
    }
    audits = report["audits"]
    scores["tbt_ms"] = audits["total-blocking-time"]["numericValue"]
    scores["lcp_s"] = audits["largest-contentful-paint"]["numericValue"] / 1000
    return scores


def weigh(browser, url: str) -> tuple[int, int]:
    """Bytes transferred at 390 px: on a first visit, and after scrolling to the end."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
        device_scale_factor=1.75, service_workers="block",
    )  # fmt: skip
    page = context.new_page()
    sizes: dict[str, int] = {}

    def done(request) -> None:
        try:
            sizes[request.url] = request.sizes()["responseBodySize"]
        except Exception:  # noqa: BLE001 - an aborted request transferred nothing
            pass

    page.on("requestfinished", done)
    try:
        page.goto(url, wait_until="load", timeout=120000)
        page.wait_for_timeout(2000)
        first = sum(sizes.values())
        for _ in range(400):
            page.mouse.wheel(0, 700)
            page.wait_for_timeout(40)
            if page.evaluate("scrollY + innerHeight >= document.documentElement.scrollHeight - 2"):
                break
        try:
            page.wait_for_load_state("networkidle", timeout=15000)
        except Exception:  # noqa: BLE001 - weighed as it stands
            pass
        page.wait_for_timeout(1000)
        return first, sum(sizes.values())
    finally:
        context.close()


def main() -> int:
    site = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VITBOOK_SITE", "site"))
    if not (site / "index.html").is_file():
        print(f"{site} holds no built site: run `nox -s book` first", file=sys.stderr)
        return 2
    if not LIGHTHOUSE.exists():
        print("Lighthouse is missing: run `npm ci` (pinned in package.json)", file=sys.stderr)
        return 2
    from vitbook.site.local import chromium

    outdir = ROOT / "test-artifacts" / "lighthouse"
    outdir.mkdir(parents=True, exist_ok=True)
    chapters = [u for _, u in sitebuild.nav_pages() if re.match(r"\d\d-", u)]
    lows = dict.fromkeys(CATEGORIES, 100)
    heavy = [0, 0]
    cols = ("perf", "a11y", "b-p", "seo", "TBT ms", "LCP s", "first KB", "scrolled KB")
    print(f"{'page':30} " + " ".join(f"{c:>11}" for c in cols))
    with sitebuild.serve(site) as base, chromium() as browser:
        for url in chapters:
            scores = run(base + url, outdir / (url.strip("/") + ".json"))
            first, scrolled = weigh(browser, base + url)
            for c in CATEGORIES:
                lows[c] = min(lows[c], scores[c])
            heavy = [max(heavy[0], first), max(heavy[1], scrolled)]
            row = [*(scores[c] for c in CATEGORIES), round(scores["tbt_ms"])]
            row += [f"{scores['lcp_s']:.1f}", round(first / 1024), round(scrolled / 1024)]
            print(f"/{url:29} " + " ".join(f"{v:>11}" for v in row), flush=True)
    worst = [*(lows[c] for c in CATEGORIES), "", "", round(heavy[0] / 1024), round(heavy[1] / 1024)]
    print(f"{'worst':30} " + " ".join(f"{v:>11}" for v in worst))
    goals = [*(TARGETS[c] for c in CATEGORIES), "", "", f"<={FIRST_KB}", f"<={SCROLLED_KB}"]
    print(f"{'target':30} " + " ".join(f"{v:>11}" for v in goals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
