"""The book as readers on any device meet it: accessible, math without a runtime, searchable.

* axe-core (pinned in ``package.json``, injected from ``node_modules``) finds no serious or
  critical WCAG 2.1 A/AA violation on any page, in light and dark, at 390 and 1280 px: each
  run audits every page once, in a width and theme that rotate with the commit
  (``axe_run.rotation``), and every combination with ``VITBOOK_ROTATION=all`` (the weekly run);
* math is typeset at build time: with JavaScript off every formula is already SVG and no TeX
  shows; chapter pages never load the MathJax runtime (checked on the page visits of
  tests/browser/test_pages.py, with the page weights);
* a link to a section lands with its heading under the header, and a link to an equation at
  390 px with its number visible (that every numbered equation fits a phone's column with its
  number in view is checked in tests/browser/test_phone.py, on its one visit per chapter);
* search entries carry words, not TeX, notebook prompts or listings; an author cited in a
  chapter, and a glossary term used there, find that chapter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import axe_run
import pytest
import sitebuild
from test_pages import NOTEBOOKS, PAGES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHAPTERS = [(t, u) for t, u in PAGES if re.match(r"\d\d-", u)]
AUDITS = [
    pytest.param(url, theme, width, id=f"{url.rstrip('/') or 'home'}-{theme}-{width}")
    for _, url, theme, width in axe_run.rotation(PAGES)
]


@pytest.mark.parametrize(("url", "theme", "width"), AUDITS)
def test_axe_finds_no_serious_violation(browser, base_url, url, theme, width) -> None:
    found = axe_run.serious(axe_run.audit(browser, base_url, url, theme, width))
    report = "\n  ".join(
        f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']}; e.g. {v['nodes'][:3]}"
        for v in found
    )
    assert not found, f"/{url} {theme} {width}px: axe-core (WCAG 2.1 A/AA) found:\n  {report}"


NO_JS_MATH = """() => {
    const article = document.querySelector('article');
    const math = [...article.querySelectorAll('.arithmatex')];
    const copy = article.cloneNode(true);
    copy.querySelectorAll('pre, code, script, style, mjx-container, textarea')
        .forEach(e => e.remove());
    const text = copy.textContent;
    return {math: math.length, svg: math.filter(e => e.querySelector('mjx-container svg')).length,
            raw: ['\\\\(', '\\\\[', '$$', '\\\\frac', '\\\\mathbf'].filter(s => text.includes(s))};
}"""


@pytest.mark.parametrize("url", [u for _, u in PAGES if u not in NOTEBOOKS])
def test_math_is_svg_without_javascript(browser, base_url, url) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 900}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(base_url + url, wait_until="load")
        m = page.evaluate(NO_JS_MATH)
    finally:
        context.close()
    assert m["svg"] == m["math"], f"/{url}: {m['math'] - m['svg']} formulas are not typeset"
    assert not m["raw"], f"/{url}: raw TeX {m['raw']} shows without JavaScript"


def test_some_page_has_build_time_math(site: Path) -> None:
    html = (site / "05-self-attention" / "index.html").read_text(encoding="utf-8")
    assert html.count("<mjx-container") >= 20
    assert "<mjx-assistive-mml" in html, "formulas carry no MathML for screen readers"


def equation_links(site: Path) -> list[tuple[str, str]]:
    out = []
    for _, url in CHAPTERS:
        ids = re.findall(
            r'class="vb-equation" id="([^"]+)"', (site / url / "index.html").read_text()
        )
        if ids:
            out.append((url, ids[-1]))
    return out


def landings(browser, base_url: str, links: list[tuple[str, str]], selector: str) -> list:
    """Follow each ``url#anchor`` link at 390 px as a reader's browser lays the page out (the
    blocks above a far anchor skipped on load), and measure where ``selector`` (``{a}`` is the
    anchor) lands: (url, anchor, {top, bottom, right, header})."""
    context = browser.raw.new_context(viewport={"width": 390, "height": 700})
    out = []
    try:
        page = context.new_page()
        for url, a in links:
            page.goto(f"{base_url}{url}#{a}", wait_until="load")
            page.wait_for_timeout(500)
            r = page.evaluate(
                """s => { const n = document.querySelector(s).getBoundingClientRect();
                    const h = document.querySelector('.md-header').getBoundingClientRect();
                    return {top: n.top, bottom: n.bottom, right: n.right, header: h.bottom}; }""",
                selector.format(a=a),
            )
            out.append((url, a, r))
    finally:
        context.close()
    return out


def test_section_links_land_at_the_top_of_the_screen(browser, base_url, site) -> None:
    """A link to a section far down a chapter lands with the heading just under the header
    (reader.js lays the text out at once for such a visit and jumps again)."""
    links = []
    for _, url in CHAPTERS:
        ids = re.findall(r'<h2 id="([^"]+)"', (site / url / "index.html").read_text())
        if len(ids) > 3:
            links.append((url, ids[len(ids) // 2]))  # far down, with text after it
    assert len(links) >= 5, "too few sections found: the check tests nothing"
    bad = [x for x in landings(browser, base_url, links, "[id='{a}']")
           if not (x[2]["header"] - 2 <= x[2]["top"] <= x[2]["header"] + 80)]  # fmt: skip
    assert not bad, f"section links that land elsewhere: {bad}"


def test_equation_links_land_with_the_number_visible(browser, base_url, site) -> None:
    links = equation_links(site)
    assert len(links) >= 5, "too few numbered equations found: the check tests nothing"
    bad = [x for x in landings(browser, base_url, links, "[id='{a}'] .vb-eq-number")
           if not (x[2]["top"] >= x[2]["header"] and x[2]["bottom"] <= 700
                   and x[2]["right"] <= 390)]  # fmt: skip
    assert not bad, f"equation links that land with the number hidden: {bad}"


def search_docs(site: Path) -> list[dict]:
    return json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]


def test_search_entries_are_readable_text(site: Path) -> None:
    docs = search_docs(site)
    assert len(docs) > 50
    bad = {
        "TeX": re.compile(r"\\[A-Za-z(\[]|\$[^$\s<]+\$"),
        "notebook prompt": re.compile(r"\b(In|Out)\s*\[\s*\d*\s*\]:"),
        "copy button": re.compile(r"Copied!"),
        "listing": re.compile(r"<pre\b|\bimport torch\b|\bdef \w+\("),
    }
    for doc in docs:
        for what, pattern in bad.items():
            m = pattern.search(doc["text"])
            assert not m, (
                f"search entry {doc['location']} shows a {what}: "
                f"...{doc['text'][max(0, m.start() - 60) : m.end() + 60]}..."
            )


def test_cited_authors_are_in_their_chapters_search_entries(site: Path) -> None:
    from vitbook.site import macros

    bib = macros.bibliography(str(sitebuild.ROOT / "docs" / "references.bib"))
    docs = search_docs(site)
    checked = 0
    for path in sorted((sitebuild.ROOT / "docs").glob("[0-9][0-9]-*.md")):
        url = sitebuild.page_url(path.name)
        text = " ".join(d["text"] for d in docs if d["location"].startswith(url))
        for key in sorted(set(re.findall(r'cite[t]?\(\s*"([^"]+)"', path.read_text()))):
            surname = bib[key].get("author", "").split(" and ")[0].split(",")[0].strip()
            assert surname in text, f"{surname} ({key}) is cited in /{url} but not in its index"
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize(
    ("query", "chapter_url"),
    [
        ("Hendrycks", "07-encoder-block/"),
        ("Abnar", "10-inside-a-trained-vit/"),
        ("GELU", "07-encoder-block/"),
        ("softmax", "05-self-attention/"),
    ],
)
def test_search_finds_authors_and_terms(browser, base_url, query, chapter_url) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(base_url, wait_until="load")
        box = page.locator("input.md-search__input")
        box.click()
        box.press_sequentially(query, delay=60)
        try:
            page.wait_for_selector(".md-search-result__item", timeout=10000)
        except Exception:  # noqa: BLE001 - the assertion says what was found
            pass
        page.wait_for_timeout(500)
        hrefs = page.evaluate(
            """() => [...document.querySelectorAll('.md-search-result__item a')]
                .map(a => a.getAttribute('href'))"""
        )
        snippets = page.evaluate(
            "() => [...document.querySelectorAll('.md-search-result__teaser')]"
            ".map(e => e.textContent)"
        )
    finally:
        context.close()
    assert any(chapter_url in (h or "") for h in hrefs), f"{query!r} found {hrefs[:10]}"
    assert not [s for s in snippets if re.search(r"\\[a-z(]|In \[\d+\]", s)], snippets
