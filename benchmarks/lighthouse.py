"""Lighthouse scores of every chapter page (performance, accessibility, best practices, SEO).

Run:  python benchmarks/lighthouse.py [SITE_DIR]   (default: $VITBOOK_SITE, else site/)

Serves the built site on 127.0.0.1 as GitHub Pages would (gzip), runs Lighthouse 12.2.3 (pinned
in package.json, from node_modules) with Debian's Chromium ($CHROME_PATH, default
/usr/bin/chromium) on each chapter, mobile emulation (Lighthouse's default: a mid-range phone on
a throttled 4G connection), and prints the four scores per page and their minimum. A report,
not a test: scores move with the machine's load. The JSON reports go to test-artifacts/lighthouse/.
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


def run(url: str, out: Path) -> dict[str, int]:
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
    subprocess.run(cmd, env=env, check=True, timeout=300, capture_output=True)
    report = json.loads(out.read_text())
    return {c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES}


def main() -> int:
    site = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VITBOOK_SITE", "site"))
    if not (site / "index.html").is_file():
        print(f"{site} holds no built site: run `nox -s book` first", file=sys.stderr)
        return 2
    if not LIGHTHOUSE.exists():
        print("Lighthouse is missing: run `npm ci` (pinned in package.json)", file=sys.stderr)
        return 2
    outdir = ROOT / "test-artifacts" / "lighthouse"
    outdir.mkdir(parents=True, exist_ok=True)
    chapters = [u for _, u in sitebuild.nav_pages() if re.match(r"\d\d-", u)]
    lows = dict.fromkeys(CATEGORIES, 100)
    print(f"{'page':34} " + " ".join(f"{c[:13]:>13}" for c in CATEGORIES))
    with sitebuild.serve(site) as base:
        for url in chapters:
            scores = run(base + url, outdir / (url.strip("/") + ".json"))
            for c in CATEGORIES:
                lows[c] = min(lows[c], scores[c])
            print(f"/{url:33} " + " ".join(f"{scores[c]:>13}" for c in CATEGORIES), flush=True)
    print(f"{'minimum':34} " + " ".join(f"{lows[c]:>13}" for c in CATEGORIES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
