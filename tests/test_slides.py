"""The chapters' slide decks (vitbook/site/slides.py), each checked against its chapter.

Quick tier: every deck file names only figures, facts, equations, listings and explorers that
exist, gives every slide speaker notes, and plans 15-25 slides with its page's goals, quiz and
summary; a deck's cache key moves when one of its sources does, and no other deck's does.
Slow tier (the session's site build, which writes and prints the decks): each built deck has
15-25 slides with notes, its numbers are the facts' texts in figures/facts.json, its figures
are in the site, its PDF has one 16:9 page per slide, its chapter links it, and it asks no
other host for anything in a browser.
"""

from __future__ import annotations

import copy
import html
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from vitbook.site import slides
from vitbook.site.macros import numbering

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FACTS = json.loads((ROOT / "figures" / "facts.json").read_text(encoding="utf-8"))
DECKS = slides.deck_files(DOCS)
CHAPTERS = sorted(int(p.name[:2]) for p in DOCS.glob("[01][0-9]-*.md"))


def test_every_chapter_has_a_deck() -> None:
    assert sorted(DECKS) == CHAPTERS == list(range(11))


@pytest.mark.parametrize("n", CHAPTERS)
def test_deck_names_only_what_exists(n: int) -> None:
    deck = slides.read_deck(DECKS[n])
    ch = f"ch{n:02d}"
    labels = numbering(str(DOCS))
    source = slides.chapter_source(DOCS, n).read_text(encoding="utf-8")
    for name in slides.named_facts(deck):
        chapter, key = name.split(".")
        assert key in FACTS.get(chapter, {}), f"{DECKS[n].name}: no fact {name} in facts.json"
    for s in slides.spec_slides(deck):
        assert s.get("title") and s.get("notes"), f"{DECKS[n].name}: {s} needs a title and notes"
        for label in [s.get("figure"), s.get("explorer"), (s.get("link") or {}).get("figure")]:
            if label:
                assert labels.get(f"{ch}/{label}", ("",))[0] == "figure", f"{ch}/{label}"
                for variant in ("", ".phone"):
                    assert (ROOT / "figures" / ch / f"{label}{variant}.png").is_file()
        if s.get("explorer"):
            assert (ROOT / "figures" / ch / f"{s['explorer']}.explorer.bin").is_file()
        eqs = s.get("equation") or []
        for label in [eqs] if isinstance(eqs, str) else eqs:
            assert labels.get(f"{ch}/{label}", ("",))[0] == "equation", f"{ch}/{label}"
            assert slides.equation_tex(source, label)
        if s.get("listing"):
            code = slides.pick_lines(slides.snippet(s["listing"]), s.get("lines"))
            assert 0 < len(code.splitlines()) <= 16, s["listing"]
            assert f'--8<-- "{s["listing"]}"' in source, "a listing the chapter includes"
        if s.get("link"):
            assert (DOCS / s["link"]["source"]).is_file()


#: A quantity typed by hand: three or more digits, or a decimal (not part of a name such as
#: JFT-300M), as tests/test_prose_numbers.py counts them on the pages.
HAND_TYPED = re.compile(r"(?<![\w/.-])(?:\d{3,}|\d+\.\d+)(?![\w/])")


@pytest.mark.parametrize("n", CHAPTERS)
def test_deck_types_no_number_by_hand(n: int) -> None:
    """Every number a deck file's text prints is a fact (``{{ ch05.weight_1 }}``)."""
    deck = slides.read_deck(DECKS[n])
    texts = [deck.get("notes", "")]
    for s in slides.spec_slides(deck):
        texts += [s.get("title", ""), s.get("say", ""), s.get("notes", "")]
        texts += s.get("points") or []
        texts.append((s.get("link") or {}).get("text", ""))
    for text in texts:
        bare = re.sub(r"\{\{.*?\}\}|\$[^$]*\$", " ", text)
        assert not HAND_TYPED.findall(bare), f"{DECKS[n].name}: {text!r}"


@pytest.mark.parametrize("n", CHAPTERS)
def test_deck_plans_15_to_25_slides_with_its_pages_parts(n: int) -> None:
    deck = slides.read_deck(DECKS[n])
    assert {"goals", "quiz", "summary"} <= {s for s in deck["slides"] if isinstance(s, str)}
    counts = slides.page_counts(slides.chapter_source(DOCS, n).read_text(encoding="utf-8"))
    assert counts["goals"] and counts["quiz"] >= 4 and counts["summary"]
    fewest = len(slides.planned(deck, counts))
    most = 1 + len(slides.spec_slides(deck)) + counts["quiz"] + counts["goals"] + counts["summary"]
    assert fewest >= slides.MIN_SLIDES, f"ch{n:02d}: at least {fewest} slides"
    assert fewest <= slides.MAX_SLIDES, f"ch{n:02d}: at least {fewest} slides"
    assert most >= slides.MIN_SLIDES


def test_packing_keeps_order_and_budget() -> None:
    items = ["a" * 100, "b" * 100, "c" * 100, "d" * 500, "e" * 10]
    groups = slides.packed(items, per=3, budget=250)
    assert [x for g in groups for x in g] == items
    assert groups == [["a" * 100, "b" * 100], ["c" * 100], ["d" * 500], ["e" * 10]]


PARTS = {
    "goals": ["say what a query is", "compute attention by hand"],
    "quiz": [
        {
            "title": "1. Why?",
            "options": [("x", "because"), (" ", "no")],
            "explanation": "<p>Because.</p>",
        }
    ],  # fmt: skip
    "summary": ["attention mixes tokens"],
}


def _deck(n: int, facts: dict, project: Path = ROOT) -> slides.Deck:
    pages = {p.name: p.stem + "/" for p in DOCS.glob("[01][0-9]-*.md")}
    deck = slides.build_deck(
        n, slides.read_deck(DECKS[n]), PARTS, facts, project=project, docs=DOCS,
        chapter_url=pages[slides.chapter_source(DOCS, n).name], chapter_title=f"Chapter {n}",
        numbers=numbering(str(DOCS)), alt={}, published="https://example.invalid/",
    )  # fmt: skip
    deck.html = slides.deck_page(deck, "test")
    deck.files = [f for s in deck.slides for f in s.files]
    deck.digest = slides.deck_digest(deck, project, slides.builder_digest(DOCS))
    return deck


def test_a_change_to_one_chapter_moves_only_its_decks_key(tmp_path: Path) -> None:
    """The PDF cache key (the deck's digest) follows the deck's facts and figures."""
    project = tmp_path / "project"
    for n in (2, 5):
        shutil.copytree(ROOT / "figures" / f"ch{n:02d}", project / "figures" / f"ch{n:02d}")
    before = {n: _deck(n, FACTS, project) for n in (2, 5)}
    assert before[2].digest != before[5].digest
    assert {n: _deck(n, FACTS, project).digest for n in (2, 5)} == {
        n: d.digest for n, d in before.items()
    }, "the same sources give the same key"
    # a number Chapter 5's deck prints changes
    name = next(f for f in slides.named_facts(slides.read_deck(DECKS[5])) if f.startswith("ch05"))
    facts = copy.deepcopy(FACTS)
    facts["ch05"][name.split(".")[1]]["text"] += "1"
    assert _deck(5, facts, project).digest != before[5].digest
    assert _deck(2, facts, project).digest == before[2].digest
    # a figure Chapter 2's deck shows is redrawn
    figure = project / before[2].files[0]
    figure.write_bytes(figure.read_bytes() + b"\0")
    assert _deck(2, FACTS, project).digest != before[2].digest
    assert _deck(5, FACTS, project).digest == before[5].digest


def test_page_parts_read_goals_quiz_and_summary() -> None:
    page = (
        '<div class="admonition abstract"><p class="admonition-title">After</p><ul>'
        '<li>use <a class="vb-term" href="../glossary/#token">tokens</a></li>'
        "<li>two</li></ul></div>"
        '<h2 id="check-yourself">Check yourself</h2><details class="question"><summary>1. Q?'
        "</summary><ul><li>[x] right</li><li>[ ] wrong</li></ul><p>Why.</p></details>"
        '<h2 id="summary">Summary</h2><ul><li>one <span class="vb-fact" data-fact="ch05.d_k">'
        '4</span></li></ul><div class="admonition note">Changes</div>'
    )
    parts = slides.page_parts(page)
    assert parts["goals"] == ["use tokens", "two"]
    assert parts["quiz"] == [
        {
            "title": "1. Q?",
            "options": [("x", "right"), (" ", "wrong")],
            "explanation": "<p>Why.</p>",
        }
    ]
    assert len(parts["summary"]) == 1 and 'data-fact="ch05.d_k"' in parts["summary"][0]


# --- the built decks (slow: the session's site build writes and prints them) ------------------


@pytest.fixture(scope="module")
def site() -> Path:
    return sitebuild.built_site()


@pytest.fixture(scope="module")
def manifest(site: Path) -> dict:
    return json.loads((site / "slides" / "manifest.json").read_text())["decks"]


SECTION_RE = re.compile(r'<section class="vb-(\w+)"[^>]*>(.*?)</section>', re.S)
FACT_SPAN_RE = re.compile(r'<span class="vb-fact" data-fact="(ch\d\d)\.(\w+)">(.*?)</span>', re.S)


@pytest.mark.slow
@pytest.mark.parametrize("n", CHAPTERS)
def test_built_deck_matches_its_chapter(site: Path, manifest: dict, n: int) -> None:
    ch = f"ch{n:02d}"
    page = (site / "slides" / ch / "index.html").read_text(encoding="utf-8")
    sections = SECTION_RE.findall(page)
    assert slides.MIN_SLIDES <= len(sections) <= slides.MAX_SLIDES
    assert len(sections) == manifest[ch]["slides"]
    for kind, body in sections:
        notes = re.search(r'<aside class="notes">(.*?)</aside>', body, re.S)
        assert notes and re.sub(r"<[^>]+>", "", notes.group(1)).strip(), f"{ch}: a {kind} slide"
    counts = slides.page_counts(slides.chapter_source(DOCS, n).read_text(encoding="utf-8"))
    assert sum(k == "quiz" for k, _ in sections) == counts["quiz"]
    printed = FACT_SPAN_RE.findall(page)
    assert printed, f"{ch}: the deck prints no fact"
    for chapter, key, text in printed:
        assert key in FACTS[chapter], f"{chapter}.{key}"
        shown = re.sub(r"<[^>]+>", "", text).replace("&amp;", "&")
        assert shown in (FACTS[chapter][key]["text"], "0") or re.fullmatch(
            r"\d(?:\.\d+)?e-?\d+", shown
        ), f"{chapter}.{key}: slide says {shown!r}, facts.json {FACTS[chapter][key]['text']!r}"
    for src in re.findall(r'<(?:img|script)[^>]* src="([^"]+)"', page) + re.findall(
        r'<link[^>]* href="([^"]+)"', page
    ):
        assert "://" not in src, f"{ch}: {src} is not in the site"
        assert (site / "slides" / ch / src).resolve().is_file(), f"{ch}: {src} missing"
    assert "\\(" not in page and "\\[" not in page, "math left untypeset"


@pytest.mark.slow
@pytest.mark.parametrize("n", CHAPTERS)
def test_deck_pdf_has_one_16_9_page_per_slide(site: Path, manifest: dict, n: int) -> None:
    from pypdf import PdfReader

    ch = f"ch{n:02d}"
    reader = PdfReader(io.BytesIO((site / "slides" / f"{ch}.pdf").read_bytes()))
    assert len(reader.pages) == manifest[ch]["slides"]
    for p in reader.pages:
        assert float(p.mediabox.width) / float(p.mediabox.height) == pytest.approx(16 / 9, 0.01)
    assert "Vision Transformers, Computed" in reader.pages[0].extract_text()


@pytest.mark.slow
@pytest.mark.parametrize("n", CHAPTERS)
def test_chapter_page_links_its_deck_and_pdf(site: Path, n: int) -> None:
    src = slides.chapter_source(DOCS, n)
    page = (site / src.stem / "index.html").read_text(encoding="utf-8")
    assert f'href="../slides/ch{n:02d}/"' in page
    assert f'href="../slides/ch{n:02d}.pdf"' in page


@pytest.mark.slow
def test_deck_runs_offline_with_speaker_notes(site: Path, browser) -> None:
    """Chapter 5's deck in Chromium: reveal.js starts with every slide, S opens the speaker
    view with the slide's notes, and no request leaves the site."""
    deck = (site / "slides" / "ch05" / "index.html").read_text(encoding="utf-8")
    sections = SECTION_RE.findall(deck)
    notes = re.search(r'<aside class="notes">(.*?)</aside>', sections[3][1], re.S).group(1)
    first_words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", notes)).split()[:6])
    with sitebuild.serve(site) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        foreign: list[str] = []

        def route(r) -> None:
            if r.request.url.startswith((base, "about:")):
                r.continue_()
            else:
                foreign.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}slides/ch05/#/3", wait_until="load")
        page.wait_for_function("window.Reveal && Reveal.isReady()")
        total = page.evaluate("Reveal.getTotalSlides()")
        with context.expect_page() as popup:
            page.keyboard.press("s")
        speaker = popup.value
        speaker.wait_for_load_state("load")
        speaker.wait_for_function(
            "words => (document.querySelector('.speaker-controls-notes') || {}).innerText"
            "?.replace(/\\s+/g, ' ').includes(words)",
            arg=first_words,
            timeout=10_000,
        )  # the speaker view fills in its notes once it has connected to the deck
        shown = speaker.locator(".speaker-controls-notes").inner_text()
        context.close()
    assert not foreign and not errors
    assert total == len(sections)
    assert first_words in " ".join(shown.split())
