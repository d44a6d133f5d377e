"""What every page must carry (issue 7): each chapter its quiz, exercises and cite box; the
back matter its tables, links and licences; the landing page its map.

The chapter checks read the Markdown of ``docs/0*.md`` and ``docs/1*.md``. A chapter that is
still a stub fails them, on purpose: the test states what a finished chapter carries.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from vitbook.engine.registry import Recorder
from vitbook.site.macros import notebook_sources

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CHAPTERS = sorted(p for p in DOCS.glob("[01][0-9]-*.md"))


def mkdocs_config() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)  # noqa: S506


def questions(text: str) -> list[tuple[str, str]]:
    """(title, answer) of every ``??? question "..."`` block; the answer is its indented body."""
    found = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\?\?\?\+? question "(.+)"\s*$', line)
        if not m:
            continue
        body = []
        for nxt in lines[i + 1 :]:
            if nxt.strip() and not nxt.startswith("    "):
                break
            body.append(nxt.strip())
        found.append((m.group(1), " ".join(b for b in body if b)))
    return found


def section(text: str, heading: str) -> str:
    m = re.search(rf"^## {heading}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def test_parsers_on_a_known_page():
    """The helpers themselves, on a page written for them."""
    page = (
        '# 9. X\n\n## Check yourself\n\n??? question "1. Why?"\n    Because.\n\n'
        '??? question "2. Empty"\n\n## Exercises\n\n1. **A.** Do.\n2. **B.** Do.\n\n'
        "## Summary\n"
    )
    assert questions(page) == [("1. Why?", "Because."), ("2. Empty", "")]
    assert len(re.findall(r"^\d+\. ", section(page, "Exercises"), re.M)) == 2


def test_there_are_eleven_chapters():
    assert [p.name[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(11)]


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_quiz_exercises_and_cite_box(page):
    text = page.read_text(encoding="utf-8")
    assert re.match(r"^# \d+\. \S", text), "first line: '# N. Title'"
    assert '!!! abstract "After this chapter you can"' in text, "learning goals missing"
    qs = questions(section(text, "Check yourself"))
    assert len(qs) >= 4, f"{len(qs)} questions under '## Check yourself'; at least 4"
    for title, answer in qs:
        assert len(answer.split()) >= 5, f"question {title!r} has no explained answer"
    exercises = re.findall(r"^\d+\. ", section(text, "Exercises"), re.M)
    assert len(exercises) >= 2, f"{len(exercises)} exercises under '## Exercises'; at least 2"
    assert section(text, "Summary").strip(), "no '## Summary'"
    assert text.rstrip().endswith("{{ cite_box() }}"), "{{ cite_box() }} must come last"


def test_book_map_matches_the_nav():
    from vitbook.figures.ch00_book_map import PLAN, book_map

    pages = []

    def walk(items):
        for item in items:
            for value in item.values():
                if isinstance(value, list):
                    walk(value)
                else:
                    pages.append(value)

    walk(mkdocs_config()["nav"])
    chapters_and_labs = [p for p in pages if re.match(r"(\d\d-|lab-|practice)", p)]
    assert [row[0] for row in PLAN] == chapters_and_labs
    rec = Recorder(0)
    data = book_map(rec)
    assert rec.facts["map_chapters"]["value"] == 11
    assert rec.facts["map_notebooks"]["value"] == 2
    assert len(data["arrows"]) == len(PLAN) - 1  # one reading path through every box


def test_notation_example_is_vit_b16():
    from vitbook.figures.ch00_book_map import notation_example

    rec = Recorder(0)
    sizes = notation_example(rec)
    assert (sizes["n"], sizes["t"], sizes["d"], sizes["dh"], sizes["m"]) == (
        196,
        197,
        768,
        64,
        3072,
    )
    assert rec.facts["nt_k"]["text"] == "1000"  # no thousands separator in a table of sizes


def test_notation_tables_are_well_formed():
    text = (DOCS / "notation.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("|") and "---" not in line]
    assert len(rows) >= 40
    for row in rows:
        cells = row.strip().strip("|").split(" | ")
        assert len(cells) in (3, 4, 5), row
    # every row of a table has the table's number of cells (a | inside $...$ would split one)
    for table in re.split(r"\n(?!\|)", text):
        lines = [line for line in table.splitlines() if line.startswith("|")]
        assert len({line.count("|") for line in lines}) <= 1, lines[:2]
    for symbol in (
        "$B$",
        "$N$",
        "$D$",
        "$D_h$",
        "$k$",
        r"$\mathbf{E}_\text{pos}$",
        "$A$",
        "$S$",
        r"$\mathbf{z}$",
        r"$\mathbf{Q}$, $\mathbf{K}$, $\mathbf{V}$",
        r"$\mathbf{q}$, $\mathbf{k}$, $\mathbf{v}$",
    ):
        assert f"| {symbol} |" in text, symbol


def test_glossary_entries_have_unique_ids_and_live_links():
    text = (DOCS / "glossary.md").read_text(encoding="utf-8")
    ids = re.findall(r"\{ #([a-z0-9-]+) \}", text)
    assert len(ids) >= 30 and len(ids) == len(set(ids))
    terms = re.findall(r"^(\S.*?) \{ #", text, re.M)
    assert terms == sorted(terms, key=str.lower), "keep the glossary alphabetical"
    for link in re.findall(r"\]\(([^)#]+\.md)", text):
        assert (DOCS / link).exists(), link


def test_landing_page_has_the_map_and_the_commands():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert '{{ figure("ch00/book-map"' in text
    for needle in (
        "nox -s book",
        "nox -s tests",
        "Who it is for",
        "How to read it",
        "How to run it",
        "thesis",
    ):
        assert needle in text, needle
    for link in re.findall(r"\]\(([^)#:]+\.md)\)", text):
        assert (DOCS / link).exists(), link


def test_building_page_names_the_real_commands():
    text = (DOCS / "building.md").read_text(encoding="utf-8")
    assert "python -m vitbook figures --only ch02/patch-grids --force" in text
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    for session in ("book", "figures", "serve", "tests", "lint", "bench"):
        assert f"`nox -s {session}`" in text, session
        assert f"def {session}(session" in noxfile, f"noxfile has no session {session}"


def test_licences():
    mit = (ROOT / "LICENSE").read_text()
    assert mit.startswith("MIT License") and "The vitbook authors" in mit
    text = (ROOT / "LICENSE-TEXT.md").read_text()
    assert "CC BY 4.0" in text and "https://creativecommons.org/licenses/by/4.0/" in text
    page = (DOCS / "license.md").read_text()
    for needle in ("CC BY 4.0", "MIT", "NASA", "public domain", 'cite("uci_digits1998")'):
        assert needle in page, needle


def test_notebook_download_button_is_wired():
    site = mkdocs_config()
    assert site["theme"]["custom_dir"] == "overrides"
    template = (ROOT / "overrides" / "main.html").read_text()
    assert "page.nb_url" in template and ".ipynb" in template
    assert "details.question > summary + *::before" in template  # the quiz answer label
    found = notebook_sources(site["nav"])
    assert found[:2] == ["lab-tinyvit8.py", "practice.py"]
    assert found[2:] == sorted(
        p.relative_to(DOCS).as_posix() for p in DOCS.glob("notebooks/ch*.py")
    )
    for name in notebook_sources(site["nav"]):
        assert (DOCS / name).exists()


def test_post_build_writes_a_valid_ipynb_for_each_notebook(tmp_path):
    import nbformat

    from vitbook.site.macros import on_post_build

    conf = {"nav": mkdocs_config()["nav"], "site_dir": str(tmp_path), "docs_dir": str(DOCS)}
    on_post_build(type("Env", (), {"conf": conf})())
    for stem in ("lab-tinyvit8", "practice"):
        nb = nbformat.read(tmp_path / stem / f"{stem}.ipynb", as_version=4)
        nbformat.validate(nb)
        assert nb.cells[0].source.startswith("# ")  # the title cell comes first
        assert sum(c.cell_type == "code" for c in nb.cells) >= 8


def test_listing_lines_carry_their_indentation():
    """vitbook.site.hooks marks each listing line with its indentation, which the wrapping
    rule of docs/stylesheets/book.css hangs the line's continuation from."""
    from vitbook.site.hooks import code_line_indents

    html = (
        '<code><span id="__span-0-1"><a id="x" href="#x"></a><span class="k">def</span> f():\n'
        '</span><span id="__span-0-2"><a id="y" href="#y"></a>        <span class="k">return</span>'
        '</span><span id="__span-0-3"><span class="w">    </span>x\n'
        '</span><span id="__span-0-4"><span class="sd">    more of a docstring</span></code>'
    )
    out = code_line_indents(html)
    assert '<span id="__span-0-1" style="--vb-indent:0">' in out
    assert (
        '<span id="__span-0-2" style="--vb-indent:8"><a id="y" href="#y"></a>        <span' in out
    )
    assert '<span id="__span-0-3" style="--vb-indent:4"><span class="w">    </span>x' in out
    assert '<span id="__span-0-4" style="--vb-indent:4"><span class="sd">    more' in out
    css = (DOCS / "stylesheets" / "book.css").read_text(encoding="utf-8")
    assert "var(--vb-indent, 0)" in css and "white-space: pre-wrap" in css
