"""How large figure text is displayed. The engine records, per figure file, its width in
inches and its smallest font size; every page is opened at a phone's width (390 px) or a
desktop's (1280 px), in both themes, and for every figure image shown the smallest text is
computed from the file actually chosen (``img.currentSrc``) and the width it is shown at. At
390 px that file must be the phone variant, at 1280 the desktop one; and the page at 390 px
stays under the page-weight budget. Each run opens every page at one of the two widths, which
alternates with the commit (``sitebuild.rotation``: consecutive commits cover both), and at
both with ``VITBOOK_ROTATION=all`` (the weekly run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pytest
import sitebuild

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from vitbook.engine import build  # noqa: E402


def test_text_metrics_give_width_and_smallest_visible_font() -> None:
    fig, ax = plt.subplots(figsize=(7.2, 3.0))
    ax.set_title("title", fontsize=12)
    ax.set_xlabel("x", fontsize=9)
    ax.tick_params(labelsize=6.5)
    ax.text(0.5, 0.5, "hidden", fontsize=3, visible=False)
    ax.text(0.5, 0.5, "  ", fontsize=2)
    try:
        fig.canvas.draw()  # tick labels exist once drawn (render() measures after savefig)
        m = build.text_metrics(fig)
    finally:
        plt.close(fig)
    assert m == {"width_in": 7.2, "min_font_pt": 6.5}


# --- In the browser: how large figure text is displayed, on a phone and on a desktop ---------

#: The smallest figure text a reader should see, in CSS pixels (WCAG has no number; 9 px is
#: about the smallest that reads on a phone held at arm's length).
MIN_TEXT_PX = 9.0
WIDTHS = (390, 1280)
PAGES = [url for _, url in sitebuild.nav_pages()]
#: ``(url, width)`` opened by this run: every page at one width, alternating with the commit
VIEWS = sitebuild.rotation(PAGES, list(WIDTHS))
ROOT = Path(__file__).resolve().parents[2]
#: Every measured figure image: (width, scheme, page, file) -> displayed px of its smallest text.
MEASURED: dict[tuple[int, str, str, str], float] = {}
#: Bytes transferred by each page at 390 px (light theme, every image of it loaded).
PHONE_BYTES: dict[str, int] = {}

SHOWN_JS = """() => [...document.querySelectorAll('figure.vb-figure img')]
    .filter(i => i.getClientRects().length && getComputedStyle(i).display !== 'none'
                 && !i.closest('.vb-explorer--live'))
    .map(i => ({src: i.currentSrc, width: i.getBoundingClientRect().width,
                complete: i.complete && i.naturalWidth > 0}))"""
DONE_JS = """() => [...document.querySelectorAll('figure.vb-figure img')]
    .filter(i => i.getClientRects().length).every(i => i.complete && i.currentSrc)"""


def manifest_name(src: str) -> str:
    """The manifest's name of the PNG a shown file was made from:
    ``.../figures/ch02/x.phone.720w.webp`` -> ``ch02/x.phone.png``."""
    path = src.split("/figures/", 1)[1].split("?")[0]
    return re.sub(r"(\.\d+w)?\.(webp|png)$", ".png", path)


def displayed_px(text: dict[str, float], shown_width_px: float) -> float:
    """The CSS pixel size of the smallest text: points are 4/3 CSS px at the file's own width
    (``width_in * 96`` CSS px), scaled to the width the image is shown at."""
    return text["min_font_pt"] * 4 / 3 * shown_width_px / (text["width_in"] * 96)


def test_displayed_px_arithmetic() -> None:
    # an 8 pt text in a 3.8 in figure shown 352 px wide: 8 * 4/3 * 352 / 364.8
    assert displayed_px({"min_font_pt": 8, "width_in": 3.8}, 352) == pytest.approx(10.29, abs=0.01)
    assert (
        manifest_name("http://h/vitbook/figures/ch02/x.phone.dark.webp") == "ch02/x.phone.dark.png"
    )
    assert manifest_name("http://h/figures/ch02/x.720w.webp") == "ch02/x.png"


def measure(page, manifest: dict, width: int, scheme: str, url: str) -> list[str]:
    """Measure every figure image shown; return the problems found."""
    page.evaluate("document.querySelectorAll('img').forEach(i => i.loading = 'eager')")
    try:
        page.wait_for_function(DONE_JS, timeout=20000)
    except Exception:  # noqa: BLE001 - the checks below report what did not load
        pass
    problems = []
    for img in page.evaluate(SHOWN_JS):
        if not img["complete"]:
            problems.append(f"{img['src']} did not load")
            continue
        name = manifest_name(img["src"])
        key = name.split(".", 1)[0]
        text = manifest.get(key, {}).get("text", {}).get(name)
        if text is None:
            problems.append(f"{name}: no text metrics in figures/manifest.json")
            continue
        phone = ".phone" in name
        if phone != (width < 720):
            problems.append(f"{name} shown at a {width} px viewport")
        if (".dark" in name) != (scheme == "dark"):
            problems.append(f"{name} shown in the {scheme} theme")
        px = displayed_px(text, img["width"])
        MEASURED[(width, scheme, url, name)] = px
        if px < MIN_TEXT_PX:
            problems.append(
                f"{name}: smallest text {text['min_font_pt']} pt in {text['width_in']} in,"
                f" shown {img['width']:.0f} px wide = {px:.1f} px"
            )
    return problems


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize(
    ("url", "width"), VIEWS, ids=[f"{u.rstrip('/') or 'home'}-{w}" for u, w in VIEWS]
)
def test_figure_text_is_at_least_9px(browser, base_url, url: str, width: int) -> None:
    manifest = json.loads((ROOT / "figures/manifest.json").read_text())
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme="light", service_workers="block"
    )
    page = context.new_page()
    sizes: dict[str, int] = {}

    def record(request) -> None:
        try:
            sizes[request.url] = request.sizes()["responseBodySize"]  # as transferred
        except Exception:  # noqa: BLE001 - redirects and aborted requests have no body
            pass

    page.on("requestfinished", record)
    try:
        page.goto(base_url + url, wait_until="load", timeout=30000)
        problems = measure(page, manifest, width, "light", url)
        if width < 720:
            PHONE_BYTES[url] = sum(sizes.values())
        toggle = page.locator('label[for^="__palette_"]:not([hidden])').first
        if width < 720 and not toggle.is_visible():
            page.locator('label[for="__drawer"]').first.click()  # the palette may sit in the drawer
        toggle.click()
        page.wait_for_function("document.body.dataset.mdColorScheme === 'slate'", timeout=5000)
        problems += measure(page, manifest, width, "dark", url)
    finally:
        context.close()
    assert not problems, f"/{url} at {width} px:\n  " + "\n  ".join(problems)
    if width < 720 and url in PHONE_BYTES:
        assert PHONE_BYTES[url] <= sitebuild.MAX_PAGE_BYTES, (
            f"/{url}: {PHONE_BYTES[url]:,} bytes at {width} px (limit 3 MB)"
        )


@pytest.mark.browser
@pytest.mark.slow
def test_figure_text_checks_measured_something(browser, base_url) -> None:
    """Runs after the page tests: every width and theme measured phone or desktop figures,
    and the results are written to test-artifacts/figure-text.json."""
    for width in WIDTHS:
        for scheme in ("light", "dark"):
            got = [k for k in MEASURED if k[0] == width and k[1] == scheme]
            assert len(got) >= 20, f"only {len(got)} figures measured at {width} px, {scheme}"
    sitebuild.ARTIFACTS.mkdir(exist_ok=True)
    summary = {
        f"{w}px {s}": {
            "figures": sum(1 for k in MEASURED if k[:2] == (w, s)),
            "min_px": round(min(v for k, v in MEASURED.items() if k[:2] == (w, s)), 2),
            "smallest": min((v, k[3]) for k, v in MEASURED.items() if k[:2] == (w, s))[1],
        }
        for w in WIDTHS
        for s in ("light", "dark")
    }
    summary["bytes_at_390px"] = dict(sorted(PHONE_BYTES.items(), key=lambda kv: -kv[1]))
    (sitebuild.ARTIFACTS / "figure-text.json").write_text(json.dumps(summary, indent=1) + "\n")
