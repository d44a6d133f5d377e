"""A reader on a phone (issue 25): every chapter at 390 px, and the explorers with bad input.

* every display formula fits the screen at its full size (a formula too wide has a second
  layout, broken into lines, that phones show: vitbook/site/math.py), none scaled down, and
  every numbered equation fits the column with its number in view;
* every table wider than the screen scrolls inside its box, which shows a shade at the edge
  that has more; nothing is cut off; inline code in a box keeps nearly the box's text size, and
  a listing's copy button covers neither its first line nor its title (one visit per chapter
  serves these four checks);
* an explorer's data is downloaded when the explorer comes near the screen, not on load;
* a chapter transfers at most 400 KB on a first visit and 600 KB in all once scrolled to its
  end, explorers and their data included;
* the lightbox opens the variant of the figure the reader sees (phone or desktop, light or dark);
* every page links "Edit this page" and "Report a problem" to the repository, and listing titles
  link to their source at the commit that built the page; Material's floating "Back to top"
  button (which covered the text) is gone, a plain link at the end replaces it;
* the explorers say what is wrong with bad input in their live region, and never show a result
  computed from a value a field does not show (Chapter 0's own image, Chapter 5's calculator);
  Chapter 7 reads the panel under the pointer; Chapter 9's map titles do not overlap; Chapter
  6 does not paint a uniform row as if every patch were the most attended.

Sizes, not times: nothing here measures speed (that is benchmarks/lighthouse.py).
"""

from __future__ import annotations

import gzip
import json
import re
import struct
import zlib
from pathlib import Path

import pytest
import sitebuild
from explorer_helpers import (
    Transfers,
    Visit,
    canvas_png,
    live_text,
    open_explorer,
    scroll_to_the_end,
    shown_values,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHAPTERS = [u for _, u in sitebuild.nav_pages() if re.match(r"\d\d-", u)]
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
ROOT = sitebuild.ROOT


def phone_page(browser, base_url: str, url: str, *, dark: bool = False, width: int = 390):
    context = browser.new_context(
        **(PHONE | {"viewport": {"width": width, "height": 844}}),
        color_scheme="dark" if dark else "light",
        service_workers="block",
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base_url + url, wait_until="load", timeout=30000)
    return context, page, errors


def wait_rendered(page) -> None:
    """Until docs/javascripts/reader.js has rendered every block the browser skipped on load."""
    page.wait_for_function("document.documentElement.dataset.vbRendered === 'true'", timeout=20000)


# --------------------------------------------------------------------------- formulas, tables

#: Every display formula a reader sees: its right edge, and its size against its natural size
#: (MathJax gives the width in ex of the text around it; 100ex measured in a paragraph).
FORMULAS_JS = """() => {
    const probe = document.createElement('span');
    probe.style.cssText = 'display:inline-block;width:100ex;height:0';
    document.querySelector('article p').append(probe);
    const ex = probe.getBoundingClientRect().width / 100;
    probe.remove();
    return [...document.querySelectorAll('article mjx-container[display="true"]')]
        .filter(c => c.getClientRects().length)
        .map(c => {
            const svg = c.querySelector(':scope > svg');
            const r = svg.getBoundingClientRect();
            const natural = parseFloat(svg.getAttribute('width')) * ex;
            const eq = c.closest('.vb-equation');
            return {where: eq ? eq.id : (c.textContent || '').slice(0, 40), left: r.left,
                    right: r.right, scale: r.width / natural};
        });
}"""


@pytest.mark.parametrize("url", CHAPTERS)
def test_display_formulas_fit_a_phone_at_full_size(browser, base_url, url) -> None:
    seen = measured(browser, base_url, url)
    found = seen["formulas"]
    wide = [f for f in found if f["right"] > 390 + 0.5 or f["left"] < -0.5]
    small = [f for f in found if f["scale"] < 0.99]
    assert not wide, f"/{url}: formulas wider than a 390 px screen: {wide}"
    assert not small, f"/{url}: formulas drawn smaller than the text around them: {small}"
    assert seen["overflow"] <= 1, f"/{url}: the page scrolls sideways at 390 px"


# the formula a reader sees: a wide one has a phone layout beside it, and one of them is hidden
EQUATIONS_JS = """() => [...document.querySelectorAll('.vb-equation')].map(e => {
    const body = e.querySelector('.vb-eq-body');
    const svg = [...body.querySelectorAll('mjx-container > svg')]
        .find(s => s.getClientRects().length);
    const num = e.querySelector('.vb-eq-number').getBoundingClientRect();
    const b = body.getBoundingClientRect(), s = svg.getBoundingClientRect();
    return {id: e.id, numLeft: num.left, numRight: num.right, numWidth: num.width,
            bodyRight: b.right, svgLeft: s.left, svgRight: s.right, svgWidth: s.width,
            overflow: body.scrollWidth - body.clientWidth};
})"""


@pytest.mark.parametrize("url", CHAPTERS)
def test_numbered_equations_fit_the_column_with_their_number(browser, base_url, url) -> None:
    for e in measured(browser, base_url, url)["equations"]:
        assert e["numWidth"] > 0 and 0 <= e["numLeft"] and e["numRight"] <= 390, (
            f"/{url}#{e['id']}: the equation number is off-screen at 390 px: {e}"
        )
        assert e["svgWidth"] > 40 and e["svgLeft"] >= 0 and e["svgRight"] <= e["bodyRight"] + 1, (
            f"/{url}#{e['id']}: the formula does not fit the column at 390 px: {e}"
        )
        assert e["overflow"] <= 1, f"/{url}#{e['id']}: the formula is cut off: {e}"


def test_a_formula_too_wide_for_a_phone_has_a_phone_layout(site: Path) -> None:
    """Chapter 4's Eq. 4.3 (three statements in a row) is broken into lines for phones: the
    page holds both layouts, and the phone one is narrower."""
    html = (site / "04-cls-and-position" / "index.html").read_text(encoding="utf-8")
    m = re.search(r'<div class="vb-equation" id="eq-sincos">(.*?)</div>\s*<span', html, re.S)
    assert m, "no Eq. sincos in Chapter 4"
    widths = re.findall(
        r'class="vb-math-(wide|narrow)"><mjx-container[^>]*><svg[^>]*? width="([0-9.]+)ex"',
        m.group(1),
    )
    kinds = dict(widths)
    assert set(kinds) == {"wide", "narrow"}, widths
    assert float(kinds["narrow"]) < float(kinds["wide"]) / 1.5


TABLES_JS = """() => [...document.querySelectorAll('article table')]
    .filter(t => t.getClientRects().length && !t.closest('.vb-explorer'))
    .map(t => {
        let box = t.closest('.md-typeset__scrollwrap') || t;
        const style = getComputedStyle(box);
        const wide = box.scrollWidth > box.clientWidth + 1;
        const before = box.getBoundingClientRect();
        box.scrollLeft = box.scrollWidth;
        const after = t.getBoundingClientRect();
        box.scrollLeft = 0;
        return {head: (t.querySelector('th') || t).textContent.trim().slice(0, 30), wide,
                overflowX: style.overflowX, shade: style.backgroundImage,
                boxRight: before.right, tableRight: after.right};
    })"""


#: Each formula in a table: its drawn width over the width MathJax gave it (in ex of its text).
MATH_SCALE_JS = """() => [...document.querySelectorAll(
    'td mjx-container > svg, th mjx-container > svg')].map(svg => {
  const probe = document.createElement('span');
  probe.style.cssText = 'display:inline-block;width:10ex';
  svg.parentElement.appendChild(probe);
  const ex = probe.getBoundingClientRect().width / 10;
  probe.remove();
  return svg.getBoundingClientRect().width / (parseFloat(svg.getAttribute('width')) * ex);
})"""


_MEASURED: dict[str, dict] = {}


def measured(browser, base_url: str, url: str) -> dict:
    """One visit per chapter at 390 px, every block laid out, serving the tests of formulas,
    numbered equations and tables: what FORMULAS_JS, EQUATIONS_JS, TABLES_JS and MATH_SCALE_JS
    find, and how far the page scrolls sideways."""
    if url not in _MEASURED:
        context, page, _ = phone_page(browser, base_url, url)
        try:
            wait_rendered(page)
            _MEASURED[url] = {
                "formulas": page.evaluate(FORMULAS_JS),
                "equations": page.evaluate(EQUATIONS_JS),
                "overflow": page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                ),
                "tables": page.evaluate(TABLES_JS),  # scrolls each table and back
                "math": page.evaluate(MATH_SCALE_JS),
                "code": code_of(page),
            }
        finally:
            context.close()
    return _MEASURED[url]


#: Inline code in boxes (admonitions, questions) against the text around it; and each listing's
#: copy button (Material's .md-code__nav) against its first line and its title bar.
CODE_JS = """() => {
    const px = (el) => parseFloat(getComputedStyle(el).fontSize);
    const inline = [...document.querySelectorAll(
            'article .admonition :not(pre) > code, article details :not(pre) > code')]
        .filter(c => c.getClientRects().length)
        .map(c => ({text: c.textContent.slice(0, 30), code: px(c), around: px(c.parentElement)}));
    const listings = [...document.querySelectorAll('article .highlight > pre')]
        .filter(p => p.getClientRects().length && p.querySelector(':scope > .md-code__nav'))
        .map(p => {
            const nav = p.querySelector(':scope > .md-code__nav').getBoundingClientRect();
            const code = p.querySelector(':scope > code');
            const first = code.getBoundingClientRect().top
                + parseFloat(getComputedStyle(code).paddingTop);
            const head = p.previousElementSibling;
            const title = head && head.matches('.filename') ? head : null;
            let bar = null;
            if (title) {
                const range = document.createRange();
                range.selectNodeContents(title);
                const r = title.getBoundingClientRect();
                const text = range.getBoundingClientRect();
                bar = {top: r.top, bottom: r.bottom, textRight: text.right};
            }
            return {where: (title || code).textContent.slice(0, 40), top: nav.top,
                    bottom: nav.bottom, left: nav.left, firstLine: first, bar};
        });
    const shown = [...document.querySelectorAll('article .highlight > pre')]
        .filter(p => p.getClientRects().length).length;
    return {inline, listings, shown};
}"""

#: Scroll each listing into view: Material mounts a listing (its copy button) when it is first
#: seen (content.lazy in mkdocs.yml).
SHOW_LISTINGS_JS = """async () => {
    for (const pre of document.querySelectorAll('article .highlight > pre')) {
        pre.scrollIntoView({block: 'center'});
        await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
    }
    window.scrollTo(0, 0);
}"""
MOUNTED_JS = """() => [...document.querySelectorAll('article .highlight > pre')]
    .filter(p => p.getClientRects().length).every(p => p.querySelector(':scope > .md-code__nav'))"""


def code_of(page) -> dict:
    """CODE_JS once every listing has been seen, so that each has its copy button."""
    page.evaluate(SHOW_LISTINGS_JS)
    try:
        page.wait_for_function(MOUNTED_JS, timeout=10000)
    except Exception:  # noqa: BLE001 - the test counts the listings left without a button
        pass
    return page.evaluate(CODE_JS)


@pytest.mark.parametrize("url", CHAPTERS + [u for _, u in sitebuild.nav_pages() if "building" in u])
def test_code_in_boxes_is_readable_and_copy_buttons_clear_the_code(browser, base_url, url) -> None:
    code = measured(browser, base_url, url)["code"]
    assert len(code["listings"]) == code["shown"], (
        f"/{url}: {code['shown']} listings shown, {len(code['listings'])} with a copy button"
        " once seen"
    )
    for c in code["inline"]:  # Material's 0.85 of a box's text was 10.9 px on a phone
        assert c["code"] >= 0.9 * c["around"], f"/{url}: {c} (inline code px, text px)"
    for n in code["listings"]:
        # the button ends above the first line: in the title bar, or above the first line
        assert n["bottom"] <= n["firstLine"] + 0.5, f"/{url}: copy button over the first line {n}"
        if n["bar"]:
            bar = n["bar"]
            assert bar["top"] - 0.5 <= n["top"] and n["bottom"] <= bar["bottom"] + 0.5, (
                f"/{url}: copy button outside its title bar {n}"
            )
            assert bar["textRight"] <= n["left"], f"/{url}: copy button over the title {n}"


@pytest.mark.parametrize("url", CHAPTERS)
def test_wide_tables_scroll_in_their_box_with_a_cue(browser, base_url, url) -> None:
    seen = measured(browser, base_url, url)
    tables, math = seen["tables"], seen["math"]
    # math in a narrow column keeps its size (it once shrank to 8 px); the table scrolls instead
    assert all(k > 0.97 for k in math), f"/{url}: math in a table drawn at {min(math):.0%}"
    for t in tables:
        assert t["boxRight"] <= 390 + 0.5, f"/{url}: table {t['head']!r} reaches past the screen"
        if t["wide"]:
            assert t["overflowX"] in ("auto", "scroll"), f"/{url}: {t['head']!r} is cut off: {t}"
            assert "radial-gradient" in t["shade"], f"/{url}: {t['head']!r} scrolls with no cue"
            assert t["tableRight"] <= 390 + 0.5, (
                f"/{url}: {t['head']!r} cannot be scrolled to its end"
            )


# --------------------------------------------------------------------------- weight


def test_explorer_data_waits_until_the_explorer_comes_near(browser, base_url) -> None:
    url, key = "10-inside-a-trained-vit/", "ch10/attention-explorer"
    context, page, errors = phone_page(browser, base_url, url)
    requests: list[str] = []
    try:
        page.on("request", lambda r: requests.append(r.url))
        page.wait_for_timeout(1500)
        assert not [u for u in requests if u.endswith(".explorer.bin")], (
            "the explorer's data was downloaded before the reader came near it"
        )
        root = page.locator(f'.vb-explorer[data-explorer="{key}"]')
        root.scroll_into_view_if_needed()
        page.wait_for_selector(f'.vb-explorer--live[data-explorer="{key}"]', timeout=20000)
        assert [u for u in requests if u.endswith("attention-explorer.explorer.bin")]
        assert not errors, errors
    finally:
        context.close()


def test_explorer_data_is_served_compressed_and_shared(site: Path) -> None:
    """A .bin file is sent as it is (GitHub Pages compresses text types only): the site holds
    every explorer's data gzip-compressed, its large arrays in shared files (the face of four
    explorers is one file), and it reads back to exactly the engine's arrays."""
    import numpy as np

    from vitbook.engine.explorer import decode, part_files
    from vitbook.site.hooks import read_site_explorer

    files = sorted((site / "figures").glob("ch*/*.explorer.bin"))
    assert files
    shared: dict[str, int] = {}
    for path in files:
        blob = path.read_bytes()
        assert blob[:2] == b"\x1f\x8b", f"{path.name} is not compressed"
        for name in re.findall(rb'"file":"\.\./(data/[0-9a-f]+\.bin)"', gzip.decompress(blob)):
            shared[name.decode()] = shared.get(name.decode(), 0) + 1
        got = read_site_explorer(path)
        engine = (ROOT / "figures" / path.relative_to(site / "figures")).read_bytes()
        want = decode(engine).arrays
        assert sorted(got) == sorted(want), path.name
        # the parts the engine's file lists sit beside it in the site, under the same names
        head = gzip.decompress(blob)
        n = struct.unpack_from("<I", head)[0]
        assert json.loads(head[4 : 4 + n]).get("parts", {}) == part_files(engine), path.name
        for name, arr in want.items():
            np.testing.assert_array_equal(got[name], arr, err_msg=f"{path.name}: {name}")
    assert max(shared.values()) >= 2, "no array is shared between explorers"


#: Bytes a phone may transfer on a chapter (gzip, as GitHub Pages serves it, explorer data and
#: code included; issue 25): on a first visit, and after scrolling to the end.
FIRST_VISIT_BYTES = 400 * 1024
SCROLLED_BYTES = 600 * 1024
_WEIGHED: dict[str, tuple[dict[str, int], dict[str, int]]] = {}


def weighed(browser, base_url: str, url: str) -> tuple[dict[str, int], dict[str, int]]:
    """``{url: bytes}`` a phone transfers on chapter ``url`` as a reader's browser lays the page
    out (``browser.raw``: blocks far down skipped on load): on a first visit, before the reader
    scrolls, and in all once the reader has scrolled to the end (every explorer passed on the
    way mounted with what its first view needs). One visit per chapter serves both tests."""
    if url not in _WEIGHED:
        context = browser.raw.new_context(**PHONE, service_workers="block")
        page = context.new_page()
        transfers = Transfers(page)
        try:
            page.goto(base_url + url, wait_until="load", timeout=30000)
            transfers.wait_idle(timeout_ms=10000)
            first = dict(transfers.sizes)
            scroll_to_the_end(page, transfers)
        finally:
            context.close()
        _WEIGHED[url] = (first, dict(transfers.sizes))
    return _WEIGHED[url]


def largest(sizes: dict[str, int]) -> str:
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:8]
    return "\n  ".join(f"{n:>10,}  {u}" for u, n in top)


@pytest.mark.parametrize("url", CHAPTERS)
def test_first_visit_on_a_phone_stays_within_400_kb(browser, base_url, url) -> None:
    """What a phone downloads on opening a chapter, before the reader scrolls: at most 400 KB."""
    first, _ = weighed(browser, base_url, url)
    total = sum(first.values())
    assert total <= FIRST_VISIT_BYTES, (
        f"/{url}: {total:,} bytes on a first visit; largest:\n  {largest(first)}"
    )


@pytest.mark.parametrize("url", CHAPTERS)
def test_a_chapter_read_to_the_end_on_a_phone_stays_within_600_kb(browser, base_url, url) -> None:
    """What a phone downloads for a whole chapter, scrolled to its end with every explorer on
    the way mounted, explorer data and code included: at most 600 KB."""
    _, scrolled = weighed(browser, base_url, url)
    total = sum(scrolled.values())
    print(f"/{url}: {total:,} bytes after scrolling to the end")
    assert total <= SCROLLED_BYTES, (
        f"/{url}: {total:,} bytes after scrolling to the end; largest:\n  {largest(scrolled)}"
    )


# --------------------------------------------------------------------------- lightbox, links


@pytest.mark.parametrize(("width", "dark"), [(390, False), (390, True), (1280, False)])
def test_lightbox_opens_the_variant_the_reader_sees(browser, base_url, width, dark) -> None:
    context, page, errors = phone_page(browser, base_url, "02-patches/", dark=dark, width=width)
    try:
        theme = "vb-dark" if dark else "vb-light"
        link = page.locator(f"figure.vb-figure a.glightbox.{theme}").first
        link.scroll_into_view_if_needed()
        link.click()
        img = page.locator(".gslide-image img").first
        img.wait_for(state="visible", timeout=10000)
        src = img.get_attribute("src")
        assert not errors, errors
    finally:
        context.close()
    assert (".phone" in src) == (width < 720), f"{width} px opened {src}"
    assert src.endswith(".dark.webp") == dark, (
        f"the {'dark' if dark else 'light'} theme opened {src}"
    )


def test_every_page_links_edit_and_report_and_has_no_floating_button(site: Path) -> None:
    repo = "https://github.com/vitbook/vitbook"
    for _, url in sitebuild.nav_pages():
        html = (site / url / "index.html").read_text(encoding="utf-8")
        edit = re.search(r'<a href="([^"]+)">Edit this page</a>', html)
        report = re.search(r'<a href="([^"]+)">Report a problem</a>', html)
        assert edit and report, f"/{url}: no edit or report link"
        assert edit.group(1).startswith(f"{repo}/edit/main/docs/"), edit.group(1)
        src = edit.group(1).removeprefix(f"{repo}/edit/main/")
        assert (ROOT / src).is_file(), f"/{url}: the edit link names {src}, which does not exist"
        assert report.group(1).startswith(f"{repo}/issues/new?title="), report.group(1)
        assert f"vitbook.github.io/vitbook/{url}%0A" in report.group(1), report.group(1)
        assert 'class="md-top' not in html, f"/{url}: Material's floating back-to-top button"


def test_listing_titles_link_to_their_lines_at_the_commit(site: Path) -> None:
    html = (site / "08-whole-model" / "index.html").read_text(encoding="utf-8")
    links = re.findall(
        r'<a class="vb-source" href="https://github\.com/vitbook/vitbook/blob/([0-9a-f]{40})/'
        r'([^"#]+)#L(\d+)-L(\d+)"',
        html,
    )
    assert len(links) >= 3, "listing titles are not linked"
    listings = re.findall(r'<span class="filename">.*?</span>.*?<code>(.*?)</code>', html, re.S)
    for (_commit, path, first, last), code in zip(links, listings, strict=False):
        lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
        shown = re.sub(r"<[^>]+>", "", code).replace("&quot;", '"').replace("&#39;", "'")
        shown = shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        first_line = next(line for line in shown.splitlines() if line.strip())
        assert lines[int(first) - 1].strip() == first_line.strip(), (path, first, first_line)
        assert int(last) >= int(first)


# --------------------------------------------------------------------------- explorers


def _png(width: int, height: int) -> bytes:
    """A valid RGB PNG of the given size (a gradient), written by hand: no encoder needed."""
    rows = b"".join(
        b"\x00"
        + b"".join(
            bytes((x * 255 // max(1, width - 1), y * 255 // max(1, height - 1), 128))
            for x in range(width)
        )
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


BAD_FILES = {
    "empty.png": (b"", "image/png", "empty"),
    "cut.png": (_png(64, 64)[:120], "image/png", "cannot be decoded"),
    "noise.jpg": (bytes(range(256)) * 8, "image/jpeg", "cannot be decoded"),
    "notes.txt": (b"not an image", "text/plain", "is not an image"),
    "broken.svg": (b'<svg xmlns="http://www.w3.org/2000/svg"><rect', "image/svg+xml", "SVG"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_your_image_refuses_a_bad_file_and_says_why(browser, base_url, name) -> None:
    blob, mime, why = BAD_FILES[name]
    ex = "ch00/your-image"
    visit = open_explorer(browser, base_url, "00-see-it-in-action/", ex, width=390, touch=True)
    try:
        page = visit.page
        before = canvas_png(visit), list(shown_values(visit, ".vb-logits"))
        page.set_input_files(
            f"{visit.root} input[type=file]",
            files=[{"name": name, "mimeType": mime, "buffer": blob}],
        )
        page.wait_for_function(
            "([sel, name]) => document.querySelector(sel + ' .vb-live').textContent.includes(name)",
            arg=[visit.root, name],
            timeout=10000,
        )
        said = live_text(visit)
        note = page.locator(f"{visit.root} .vb-note")
        assert why in said, f"{name}: the live region says {said!r}"
        assert note.is_visible() and why in note.inner_text(), "the reason is not on the screen"
        assert canvas_png(visit) == before[0], "the picture changed although the file was refused"
        assert list(shown_values(visit, ".vb-logits")) == before[1]
        assert visit.errors == [], visit.errors
    finally:
        visit.close()


def test_your_image_says_it_cropped_a_wide_image(browser, base_url) -> None:
    ex = "ch00/your-image"
    visit = open_explorer(browser, base_url, "00-see-it-in-action/", ex)
    try:
        page = visit.page
        page.set_input_files(
            f"{visit.root} input[type=file]",
            files=[{"name": "wide.png", "mimeType": "image/png", "buffer": _png(90, 30)}],
        )
        page.wait_for_function(
            "sel => document.querySelector(sel + ' .vb-live').textContent.startsWith('wide.png')",
            arg=visit.root,
        )
        said = live_text(visit)
        assert "90×30" in said and "centre 30×30" in said and "cut off" in said, said
        assert page.locator(f"{visit.root} .vb-note").is_visible()
        assert visit.errors == [], visit.errors
    finally:
        visit.close()


def open_live(browser, base_url: str, url: str, key: str, *, width: int = 1280) -> Visit:
    """Open ``url`` (a phone below 720 px), scroll to explorer ``key`` and wait until it is
    live (the explorers of Chapters 5-10 say nothing until the reader acts)."""
    phone = width < 720
    context = browser.new_context(
        viewport={"width": width, "height": 900}, has_touch=phone, is_mobile=phone
    )
    page = context.new_page()
    visit = Visit(page, context, key)
    page.on("pageerror", lambda e: visit.errors.append(str(e)))
    page.on("console", lambda m: visit.errors.append(m.text) if m.type == "error" else None)
    page.goto(base_url + url, wait_until="load", timeout=60000)
    page.locator(visit.root).scroll_into_view_if_needed()
    page.wait_for_selector(f"{visit.root}.vb-explorer--live", timeout=30000)
    page.locator(visit.root).scroll_into_view_if_needed()
    return visit


def _calculator(browser, base_url, **kw):
    return open_live(browser, base_url, "05-self-attention/", "ch05/attention-calculator", **kw)


def _x(visit, i: int, j: int):
    return visit.page.locator(f'{visit.root} table[data-m="X"] input[data-i="{i}"][data-j="{j}"]')


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        ("", "is empty"),
        ("1e400", "beyond the largest number"),
        ("1e200", "overflows"),
        ("1e-", "no number"),
    ],
)
def test_calculator_never_shows_results_from_a_value_the_field_does_not_show(
    browser, base_url, typed, why
) -> None:
    visit = _calculator(browser, base_url)
    try:
        out = visit.page.locator(f'{visit.root} table[data-m="O"] td')
        _x(visit, 1, 2).fill("2")
        assert out.first.get_attribute("data-value") is not None
        # typed key by key, as a reader does: the browser then judges the text; a score
        # overflows when a whole row of X is that large
        for j in range(4) if typed == "1e200" else [2]:
            field = _x(visit, 1, j)
            field.fill("")
            field.press_sequentially(typed)
        said = live_text(visit)
        assert why in said, f"typing {typed!r}: the live region says {said!r}"
        assert visit.page.locator(f"{visit.root} .vb2-refusal").is_visible()
        shown = out.evaluate_all("tds => tds.map(td => [td.textContent, td.dataset.value])")
        assert all(text == "—" and value is None for text, value in shown), shown
        if typed != "1e200":
            assert _x(visit, 1, 2).get_attribute("aria-invalid") == "true"
        # a number again: the results come back, computed from it
        for j in range(4):
            _x(visit, 1, j).fill("2")
        assert visit.page.locator(f"{visit.root} .vb2-refusal").is_hidden()
        assert out.first.get_attribute("data-value") is not None
        assert visit.errors == [], visit.errors
    finally:
        visit.close()


def test_calculator_with_large_numbers_fits_a_phone(browser, base_url) -> None:
    visit = _calculator(browser, base_url, width=390)
    try:
        for i in range(4):
            _x(visit, i, 0).fill("1000000000")
        page = visit.page
        width = page.evaluate("document.documentElement.clientWidth")
        right = page.locator(visit.root).evaluate(
            "r => Math.max(...[...r.querySelectorAll('table')]"
            ".map(e => e.getBoundingClientRect().right))"
        )
        assert right <= width + 1, f"a matrix reaches {right} px on a {width} px screen"
        assert "1e9" in page.locator(f'{visit.root} table[data-m="Q"]').inner_text()
    finally:
        visit.close()


def test_gelu_reads_the_panel_under_the_pointer_side_by_side(browser, base_url) -> None:
    """From 560 px the two panels stand side by side: the slopes panel (right) reads the x under
    the pointer, as the values panel (left) does at the same place in it."""
    visit = open_live(browser, base_url, "07-encoder-block/", "ch07/gelu-relu", width=1000)
    try:
        page = visit.page
        cv = page.locator(f"{visit.root} canvas").first
        box = cv.bounding_box()
        panel = (box["width"] - 20) / 2  # two panels 20 px apart (ch07-gelu-relu.js)
        readings = []
        for left in (0.0, panel + 20):
            page.mouse.move(box["x"] + left + 0.35 * panel, box["y"] + box["height"] / 2)
            readings.append(re.match(r"x = (-?[0-9.]+)", live_text(visit)).group(1))
        assert readings[0] == readings[1], (
            f"values panel x = {readings[0]}, slopes x = {readings[1]}"
        )
    finally:
        visit.close()


def _module(page, base_url: str, name: str, body: str):
    return page.evaluate(
        f"""async () => {{
            const mod = await import('{base_url}javascripts/explorers/{name}');
            {body}
        }}"""
    )


def test_digit_map_titles_do_not_overlap_at_phone_width(browser, base_url) -> None:
    visit = open_live(browser, base_url, "09-training/", "ch09/draw-a-digit", width=390)
    try:
        page = visit.page
        got = _module(
            page,
            base_url,
            "ch09-draw-a-digit.js",
            """const g = document.createElement('canvas').getContext('2d');
            g.font = '11px sans-serif';
            const titleW = Math.ceil(g.measureText('layer 1 head 1').width);
            const width = document.querySelector('canvas.vb2-maps').clientWidth;
            return {titleW, width, ...mod.mapGrid(width, titleW, 5)};""",
        )
    finally:
        visit.close()
    assert got["per"] + 8 >= got["titleW"], got
    assert got["cols"] * (got["per"] + 8) - 8 <= got["width"], got


def test_heads_do_not_paint_a_uniform_row_as_all_attended(browser, base_url) -> None:
    visit = open_live(browser, base_url, "06-multi-head-attention/", "ch06/heads")
    try:
        got = _module(
            visit.page,
            base_url,
            "ch06-heads.js",
            """const flat = mod.shades(new Float64Array(196).fill(1 / 196));
            const peaked = mod.shades(Float64Array.from([0.1, 0.2, 0.7]));
            return {flat: flat.uniform, flatMax: Math.max(...flat.t), peaked: peaked.uniform,
                    lo: Math.min(...peaked.t), hi: Math.max(...peaked.t)};""",
        )
    finally:
        visit.close()
    assert got["flat"] is True and got["flatMax"] == 0, got
    assert got["peaked"] is False and got["lo"] == 0 and got["hi"] == 1, got
