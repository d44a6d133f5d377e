"""The printed edition (issue 17): ``python -m vitbook.site.pdf`` on the built site.

The slow tests print the book and two chapters, and one chapter again, from one built site
(``$VITBOOK_SITE`` or a fresh build, see tests/browser/sitebuild.py) and open the PDFs: page
count, every chapter title and figure caption in the text (pdftotext, from poppler-utils), no
raw TeX, every figure's image drawn, internal links that land on a page, a contents page with
page numbers, the same bytes twice. The fast tests check the pieces that need no browser.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vitbook.site import pdf as pdfmod

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TWO_CHAPTERS = [2, 5]


def test_pdf_names_follow_the_chapters():
    chaps = pdfmod.chapters()
    assert [c["n"] for c in chaps] == list(range(11))
    assert chaps[2]["pdf"] == "ch02-patches.pdf"
    assert all(c["pdf"] == pdfmod.pdf_name(c["src"]) for c in chaps)
    with pytest.raises(ValueError):
        pdfmod.pdf_name("references.md")


def test_book_date_is_fixed_by_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert pdfmod.book_date() == dt.date(2023, 11, 14)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert pdfmod.book_date() == pdfmod.book_date()  # the last commit's, not today's


def test_volatile_dates_are_blanked_without_moving_bytes():
    raw = b"1 0 obj <</CreationDate (D:20261201022812+00'00') /ModDate (D:20261201022813)>>"
    out = pdfmod.strip_volatile(raw)
    assert len(out) == len(raw)
    assert b"2026" not in out and b"/CreationDate (D:00000000000000+00'00')" in out


def pdftotext(path: Path) -> str:
    exe = shutil.which("pdftotext")
    if exe is None:
        pytest.fail("pdftotext is missing: apt-get install poppler-utils", pytrace=False)
    return subprocess.run(
        [exe, "-layout", str(path), "-"], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00ad", "")).replace("- ", "-").strip()


@pytest.fixture(scope="module")
def printed(tmp_path_factory, browser):
    """The book and two chapters, then one chapter again, from the same site (printing the
    book takes minutes; its pages go through the same code as the chapters')."""
    try:
        site = sitebuild.built_site()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    outs = []
    for k, only in enumerate((TWO_CHAPTERS, TWO_CHAPTERS[:1])):  # the second: for the bytes
        out = tmp_path_factory.mktemp(f"pdf{k}")
        pdfmod.build(site, out, only=only, book=k == 0, browser=browser)
        outs.append(out)
    return outs


@pytest.mark.slow
def test_the_same_bytes_twice(printed):
    first, second = printed
    assert sorted(p.name for p in first.glob("*.pdf")) == [
        "ch02-patches.pdf",
        "ch05-self-attention.pdf",
        "vitbook.pdf",
    ]
    names = sorted(p.name for p in second.glob("*.pdf"))
    assert names == ["ch02-patches.pdf"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


@pytest.mark.slow
def test_book_pdf_pages_titles_captions_and_no_raw_tex(printed):
    import json

    from pypdf import PdfReader

    path = printed[0] / "vitbook.pdf"
    manifest = json.loads((printed[0] / "manifest.json").read_text())["pdfs"]
    reader = PdfReader(path)
    pages = len(reader.pages)
    size = path.stat().st_size
    print(f"\nvitbook.pdf: {pages} pages, {size / 1e6:.2f} MB")
    for name, entry in manifest.items():
        print(f"{name}: {entry['pages']} pages, {entry['bytes'] / 1e6:.2f} MB")
    assert pages == manifest["vitbook.pdf"]["pages"] > 60
    assert reader.metadata.title == "Vision Transformers, Computed"
    text = squash(pdftotext(path))
    assert "Latest text, not an edition" in text and "Contents" in text
    for c in pdfmod.chapters():
        assert f"{c['n']}. {c['title']}" in text, c["title"]
    assert "Appendix: answers and solutions" in text
    for heading in ("Notation", "Glossary", "References"):
        assert heading in text
    figures = manifest["vitbook.pdf"]["figures"]
    assert len(figures) >= 40
    for fig in figures:
        caption = squash(fig["caption"])
        words = re.sub(r"\(SVG.*$", "", caption)[:60].strip()
        assert words in text, f"caption of {fig['id']} not in the text: {words!r}"
        assert fig["images"] == 1, f"{fig['id']} should print its light image only"
    # math was typeset: no TeX commands or delimiters left in the text
    for raw in (r"\frac", r"\mathbf", r"\(", r"\[", r"\times", "$$", r"\tag"):
        assert raw not in text, f"raw TeX {raw!r} in the PDF"


@pytest.mark.slow
def test_contents_page_numbers_match_where_chapters_start(printed):
    import json

    from pypdf import PdfReader

    path = printed[0] / "vitbook.pdf"
    toc = json.loads((printed[0] / "manifest.json").read_text())["pdfs"]["vitbook.pdf"]["toc"]
    reader = PdfReader(path)
    contents_text = reader.pages[toc["contents"] - 1].extract_text()
    numbers = [toc[f"ch{c['n']:02d}"] for c in pdfmod.chapters()]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    for c, page_no in zip(pdfmod.chapters(), numbers, strict=True):
        first_word = re.escape(c["title"].split()[0])
        assert re.search(rf"{c['n']}\. {first_word}[^\n]*? {page_no}\b", contents_text), c
        start = squash(reader.pages[page_no - 1].extract_text())
        assert f"{c['n']}. {c['title'].split()[0]}" in start, (c["title"], page_no)


@pytest.mark.slow
def test_internal_links_land_on_pages(printed):
    from pypdf import PdfReader

    reader = PdfReader(printed[0] / "vitbook.pdf")
    dests = reader.named_destinations
    internal = external = 0
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            action = a.get("/A")
            if action is not None and action.get("/S") == "/URI":
                external += 1
                uri = str(action["/URI"])
                assert not uri.startswith("http://127.0.0.1"), f"a link to the build server: {uri}"
                continue
            dest = a.get("/Dest")
            if dest is None and action is not None:
                dest = action.get("/D")
            assert dest is not None, a
            name = str(dest)
            if isinstance(dest, str) or not hasattr(dest, "__len__"):
                assert name in dests or name.lstrip("/") in dests, f"dangling link {name}"
            internal += 1
    print(f"\n{internal} internal links, {external} external")
    assert internal > 100  # contents, figure and equation references, citations, answers
    assert external > 0


@pytest.mark.slow
def figure_captions(chapter_html: Path) -> list[str]:
    """The first words of each figure caption on a built chapter page ("Figure 2.3. The ...")."""
    html = chapter_html.read_text(encoding="utf-8")
    out = []
    for raw in re.findall(r"<figcaption[^>]*>(.*?)</figcaption>", html, re.S):
        text = squash(re.sub(r"<[^>]+>", " ", raw)).replace("&amp;", "&")
        if text.startswith("Figure"):
            out.append(" ".join(text.split()[:6]))
    return out


@pytest.mark.slow
def test_every_figure_image_is_drawn(printed):
    """Each figure is an image (or a vector drawing): every page that carries a figure's caption
    (found by the caption's own first words, so that a reference to the figure in the prose,
    wherever lines happen to wrap, is not taken for one) draws an image or form XObject; the
    builder also failed if any <img> had not loaded."""
    from pypdf import PdfReader

    captions = figure_captions(sitebuild.built_site() / "02-patches" / "index.html")
    assert len(captions) >= 3, captions
    reader = PdfReader(printed[0] / "ch02-patches.pdf")
    found = set()
    for page in reader.pages:
        text = squash(page.extract_text())
        here = [c for c in captions if c in text]
        if here:
            found.update(here)
            xobjects = (page.get("/Resources") or {}).get("/XObject") or {}
            assert len(xobjects) > 0, f"a page with the caption {here[0]!r} draws no image"
    assert found == set(captions), f"captions not found in the PDF: {set(captions) - found}"
    text = squash(pdftotext(printed[0] / "ch02-patches.pdf"))
    assert "2. From image to sequence: patches" in text
    assert "Answers and solutions" in text  # quiz answers in the appendix, not inline


@pytest.mark.slow
def test_pdf_of_a_chapter_opens_with_pypdf(printed):
    from pypdf import PdfReader

    data = (printed[0] / "ch05-self-attention.pdf").read_bytes()
    reader = PdfReader(io.BytesIO(data))
    assert reader.metadata.title == "Chapter 5: Self-attention"
    assert len(reader.pages) >= 5
