"""Every page of the built book, opened in headless Chromium as a reader would open it.

Each page is visited once (a fresh browser context, light theme, 1280x900), scrolled to the
bottom so lazy images load, then switched to the dark theme and scrolled again. The visit is
recorded and the tests below each assert one promise about it: no console error, every image
decodes, math is typeset, the theme toggle swaps the figure variants, no request leaves the local
server, the page weighs at most 3 MB, and its reading part (explorers apart) at most 400 KB for
a chapter and 600 KB for any other page (gzip, as GitHub Pages serves it). Search is tested by
typing, key by key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sitebuild

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = sitebuild.nav_pages()
IDS = [url.rstrip("/") or "home" for _, url in PAGES]
#: Pages saved as full-page screenshots in test-artifacts/ (light and dark), when they exist.
NOTEBOOKS = {"lab-tinyvit8/", "practice/"}
CHAPTER_BYTES = 400 * 1024
#: requests that belong to an explorer (its data file, its modules), not to the reading page
EXPLORER_PART = re.compile(r"\.explorer\.bin$|/figures/data/|/javascripts/explorers/")
PAGE_BYTES = 600 * 1024
SCREENSHOTS = {"", "02-patches/", "10-inside-a-trained-vit/", "lab-tinyvit8/"}
#: One wheel step: two screens, within the reach of lazy images (Chromium starts loading an
#: image at least 1,250 px before it comes into view) and of the explorers (they mount one
#: screen ahead, docs/javascripts/explorers/index.js), so nothing is passed over unloaded.
STEP_PX = 1800

# An explorer that mounted hides its static figure (the fallback for print, search and readers
# without JavaScript): such images are left out of the "shown" checks, not of the load check.
IMAGES_JS = """() => [...document.images].map(img => ({
    src: img.currentSrc || img.src, cls: img.className, complete: img.complete,
    width: img.naturalWidth, display: getComputedStyle(img).display,
    replaced: !!img.closest('.vb-explorer--live')}))"""

MATH_JS = """() => {
    const article = document.querySelector('article') || document.body;
    const pending = [...article.querySelectorAll('.arithmatex')]
        .filter(e => !e.querySelector('mjx-container'));
    const copy = article.cloneNode(true);
    copy.querySelectorAll('pre, code, script, style, mjx-container, textarea')
        .forEach(e => e.remove());
    const text = copy.textContent;
    const raw = ['\\\\[', '\\\\(', '$$'].filter(s => text.includes(s));
    return {arithmatex: article.querySelectorAll('.arithmatex').length,
            typeset: article.querySelectorAll('mjx-container').length,
            pending: pending.map(e => e.textContent.slice(0, 80)), raw: raw,
            excerpt: raw.length ? text.slice(Math.max(0, text.indexOf(raw[0]) - 60),
                                             text.indexOf(raw[0]) + 60) : ''};
}"""

# Every code listing of the article: its file, its longest line, and how far it runs past its
# box (scrollWidth - clientWidth) with every collapsed box opened.
LISTINGS_JS = """() => {
    document.querySelectorAll('article details').forEach(d => d.open = true);
    return [...document.querySelectorAll('article .highlight pre > code')].map(c => ({
        title: c.closest('.highlight').querySelector('.filename')?.textContent || '',
        longest: Math.max(...c.textContent.split('\\n').map(l => l.length)),
        over: c.scrollWidth - c.clientWidth}));
}"""

MATH_DONE_JS = """() => [...document.querySelectorAll('article .arithmatex')]
    .every(e => e.querySelector('mjx-container'))"""


@dataclass
class Visit:
    url: str
    status: int | None = None
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    light_images: list[dict] = field(default_factory=list)
    dark_images: list[dict] = field(default_factory=list)
    eager_images: list[dict] = field(default_factory=list)
    math: dict = field(default_factory=dict)
    scheme_before: str | None = None
    scheme_after: str | None = None
    bytes: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    listings: list[dict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def scroll_through(page) -> None:
    """Scroll to the bottom in wheel steps, pausing so lazy images start loading."""
    page.evaluate("window.scrollTo(0, 0)")
    for _ in range(200):
        page.mouse.wheel(0, STEP_PX)
        page.wait_for_timeout(60)
        at_end = page.evaluate(
            "window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2"
        )
        if at_end:
            break
    try:
        page.wait_for_load_state("networkidle", timeout=5000)
    except Exception:  # noqa: BLE001 - a page still loading shows up in the image checks
        pass


def wait_images(page, *, everything: bool = False) -> None:
    """Wait until the images a reader can see (or, with ``everything``, all) have loaded."""
    cond = "true" if everything else "i.getClientRects().length > 0"
    try:
        page.wait_for_function(
            f"() => [...document.images].filter(i => {cond}).every(i => i.complete)", timeout=5000
        )
    except Exception:  # noqa: BLE001 - reported by the image checks
        pass


_VISITS: dict[str, Visit] = {}


def visit(browser, base_url: str, url: str, artifacts: Path) -> Visit:
    if url in _VISITS:
        return _VISITS[url]
    v = Visit(url)
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme="light", service_workers="block"
    )
    page = context.new_page()
    responses = []
    context.on("request", lambda r: v.requests.append(r.url))
    page.on("response", lambda r: responses.append(r))
    page.on("console", lambda m: v.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: v.console_errors.append(f"uncaught: {e}"))
    name = url.rstrip("/").replace("/", "_") or "home"
    try:
        resp = page.goto(base_url + url, wait_until="load", timeout=30000)
        v.status = resp.status if resp else None
        try:
            page.wait_for_function(MATH_DONE_JS, timeout=15000)
        except Exception:  # noqa: BLE001 - reported by test_math_is_typeset
            pass
        scroll_through(page)
        wait_images(page)
        v.light_images = page.evaluate(IMAGES_JS)
        v.math = page.evaluate(MATH_JS)
        v.listings = page.evaluate(LISTINGS_JS)
        v.scheme_before = page.evaluate("document.body.dataset.mdColorScheme")
        for r in list(responses):
            try:
                v.sizes[r.url] = r.request.sizes()["responseBodySize"]  # as transferred
            except Exception:  # noqa: BLE001 - redirects and aborted requests have no body
                pass
        v.bytes = sum(v.sizes.values())
        if url in SCREENSHOTS:
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(artifacts / f"{name}.light.png"), full_page=True)
        page.locator('label[for^="__palette_"]:not([hidden])').first.click()
        page.wait_for_function("document.body.dataset.mdColorScheme === 'slate'", timeout=5000)
        v.scheme_after = page.evaluate("document.body.dataset.mdColorScheme")
        scroll_through(page)
        wait_images(page)
        v.dark_images = page.evaluate(IMAGES_JS)
        if url in SCREENSHOTS:
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(artifacts / f"{name}.dark.png"), full_page=True)
        # images a reader reaches only by opening a box or a tab: load them too
        page.evaluate("document.querySelectorAll('img').forEach(i => i.loading = 'eager')")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        wait_images(page, everything=True)
        v.eager_images = page.evaluate(IMAGES_JS)
    except Exception as exc:  # noqa: BLE001 - every test of this page reports it
        v.failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        context.close()
    print(f"\n/{url}: {v.bytes:,} bytes transferred, {len(v.requests)} requests")
    _VISITS[url] = v
    return v


@pytest.fixture(params=[url for _, url in PAGES], ids=IDS)
def page_visit(request, browser, base_url, artifacts) -> Visit:
    v = visit(browser, base_url, request.param, artifacts)
    request.node.user_properties.append(("page_bytes", (v.url, v.bytes)))  # for the summary
    assert not v.failures, f"/{v.url}: the visit failed: {v.failures}"
    return v


def test_page_loads_without_console_errors(page_visit: Visit) -> None:
    assert page_visit.status == 200, f"/{page_visit.url}: HTTP {page_visit.status}"
    assert not page_visit.console_errors, f"/{page_visit.url}: console errors:\n  " + "\n  ".join(
        page_visit.console_errors
    )


def test_every_image_loads(page_visit: Visit) -> None:
    broken = {i["src"] for i in page_visit.eager_images if not i["complete"] or i["width"] == 0}
    shown_light = [
        i for i in page_visit.light_images if i["display"] != "none" and not i["replaced"]
    ]
    lazy_missed = [i["src"] for i in shown_light if i["width"] == 0]
    assert not broken, f"/{page_visit.url}: images that do not load:\n  " + "\n  ".join(broken)
    assert not lazy_missed, (
        f"/{page_visit.url}: visible images still empty after scrolling:\n  "
        + "\n  ".join(lazy_missed)
    )


def test_math_is_typeset(page_visit: Visit) -> None:
    m = page_visit.math
    assert not m["pending"], f"/{page_visit.url}: math left untypeset: {m['pending'][:5]}"
    assert not m["raw"], (
        f"/{page_visit.url}: raw TeX delimiters {m['raw']} in the text: ...{m['excerpt']}..."
    )
    if m["arithmatex"]:
        assert m["typeset"] >= 1, f"/{page_visit.url}: has math but no mjx-container"


def test_code_listings_fit_the_column(page_visit: Visit) -> None:
    """At 1280 px a listing's long lines wrap (docs/stylesheets/book.css): nothing runs out of
    its box, where a reader would not see it."""
    cut = [
        f"{x['title']} ({x['longest']} chars, {x['over']} px)"
        for x in page_visit.listings
        if x["over"] > 1
    ]
    assert not cut, f"/{page_visit.url}: listings cut off at 1280 px:\n  " + "\n  ".join(cut)


def test_theme_toggle_swaps_figure_variants(page_visit: Visit) -> None:
    v = page_visit
    assert (v.scheme_before, v.scheme_after) == ("default", "slate"), (
        f"/{v.url}: the toggle went {v.scheme_before!r} -> {v.scheme_after!r}"
    )

    def shown(images: list[dict], cls: str) -> list[bool]:
        return [
            i["display"] != "none" for i in images if cls in i["cls"].split() and not i["replaced"]
        ]

    assert all(shown(v.light_images, "vb-light")), f"/{v.url}: a light figure is hidden in light"
    assert not any(shown(v.light_images, "vb-dark")), f"/{v.url}: a dark figure shows in light"
    assert all(shown(v.dark_images, "vb-dark")), f"/{v.url}: a dark figure is hidden in dark"
    assert not any(shown(v.dark_images, "vb-light")), f"/{v.url}: a light figure shows in dark"
    dark_empty = [
        i["src"]
        for i in v.dark_images
        if "vb-dark" in i["cls"].split() and i["width"] == 0 and not i["replaced"]
    ]
    assert not dark_empty, f"/{v.url}: dark figures empty after scrolling: {dark_empty}"


def test_no_request_leaves_the_local_server(page_visit: Visit, base_url: str) -> None:
    foreign = sorted(
        {
            r
            for r in page_visit.requests
            if not r.startswith(base_url) and not r.startswith(("data:", "blob:"))
        }
    )
    assert not foreign, f"/{page_visit.url}: requests to other hosts:\n  " + "\n  ".join(foreign)


def test_page_weight_at_most_3_mb(page_visit: Visit) -> None:
    v = page_visit
    largest = sorted(v.sizes.items(), key=lambda kv: -kv[1])[:6]
    assert 0 < v.bytes <= sitebuild.MAX_PAGE_BYTES, (
        f"/{v.url}: {v.bytes:,} bytes transferred (limit 3 MB); largest:\n  "
        + "\n  ".join(f"{n:>10,}  {u}" for u, n in largest)
    )


def test_page_weight_budget(page_visit: Visit) -> None:
    v = page_visit
    limit = CHAPTER_BYTES if re.match(r"\d\d-", v.url) else PAGE_BYTES
    # The explorers' data and code are counted apart: each explorer's data has its own budget
    # (300 KB, tests/test_explorer_files_ch00_04.py and the chapter 5-10 explorer tests), and
    # the page budget is the reading page itself. Both numbers are printed.
    explorer = {u: n for u, n in v.sizes.items() if EXPLORER_PART.search(u)}
    page_bytes = v.bytes - sum(explorer.values())
    print(f"/{v.url}: page {page_bytes:,} B, explorers {sum(explorer.values()):,} B")
    largest = sorted(v.sizes.items(), key=lambda kv: -kv[1])[:6]
    assert 0 < page_bytes <= limit, (
        f"/{v.url}: {page_bytes / 1024:,.0f} KB transferred on a first visit (budget "
        f"{limit // 1024} KB); largest:\n  " + "\n  ".join(f"{n:>10,}  {u}" for u, n in largest)
    )
    runtime = [u for u in v.requests if "tex-mml-chtml" in u]
    if v.url not in NOTEBOOKS:
        assert not runtime, f"/{v.url}: loads the MathJax runtime although its math is typeset"


def test_sitemap_lists_exactly_the_nav_pages(site: Path) -> None:
    nav = sorted(url for _, url in PAGES)
    assert sorted(sitebuild.sitemap_pages(site)) == nav


def test_checks_are_not_vacuous(browser, base_url, artifacts) -> None:
    """At least one page has figures in both variants and at least one has typeset math."""
    visits = [visit(browser, base_url, url, artifacts) for _, url in PAGES]
    with_figures = [v.url for v in visits if any("vb-light" in i["cls"] for i in v.light_images)]
    with_math = [v.url for v in visits if v.math.get("typeset")]
    assert with_figures, "no page shows a figure: the image and theme checks tested nothing"
    assert with_math, "no page has typeset math: the math check tested nothing"
    long_lines = [x for v in visits for x in v.listings if x["longest"] > 90]
    assert long_lines, "no listing has a line longer than the column: the wrap check tested nothing"


@pytest.mark.parametrize(
    ("query", "chapter_url", "title"),
    [
        ("CLS", "04-cls-and-position/", "The CLS token and position embeddings"),
        ("rollout", "10-inside-a-trained-vit/", "Inside a trained ViT"),
    ],
    ids=["CLS-finds-chapter-4", "rollout-finds-chapter-10"],
)
def test_search_finds_the_chapter(browser, base_url, artifacts, query, chapter_url, title) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(base_url, wait_until="load")
        box = page.locator("input.md-search__input")
        box.click()
        box.press_sequentially(query, delay=80)
        try:
            page.wait_for_selector(".md-search-result__item", timeout=10000)
        except Exception:  # noqa: BLE001 - the assertion below says what was found
            pass
        page.wait_for_timeout(500)
        results = page.evaluate("""() => [...document.querySelectorAll(
            '.md-search-result__item > a.md-search-result__link')].map(a => ({
                href: a.getAttribute('href'),
                title: (a.querySelector('h1, h2') || a).textContent.trim()}))""")
        page.screenshot(path=str(artifacts / f"search-{query}.png"))
    finally:
        context.close()
    hits = [r for r in results if chapter_url in (r["href"] or "")]
    assert hits, f"searching {query!r} did not list /{chapter_url}; results: {results[:8]}"
    assert any(title.lower() in r["title"].lower() for r in hits), (
        f"searching {query!r} lists /{chapter_url} without its title {title!r}: {hits[:3]}"
    )
