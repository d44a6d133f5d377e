"""Every printed number auditable (issue 26): each number a page prints from the facts links to
its entry in the Numbers appendix, with the data of a card saying where it comes from.

Quick tests: the marked text a fact prints, how a page's HTML turns it into links (and where it
stays plain: formulas, listings, attributes, summaries, other links), the provenance of every
fact of ``figures/facts.json`` (its function's lines really are that function), the spread
over seeds, and what a page carries. Slow tests read the built site: every number of every
chapter is a link to an entry that exists, nothing is left marked, the appendix lists every
fact once and search finds it, and the cards add at most 20 KB (gzip) to a chapter page.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from html import unescape
from pathlib import Path

import pytest

from vitbook.site import provenance
from vitbook.site.macros import Chapter, Fact

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FACTS = json.loads((ROOT / "figures" / "facts.json").read_text())
#: a chapter page may add at most this much (gzip) for its numbers' links, cards and script
CARD_BUDGET = 20 * 1024


def marked(name: str, text: str) -> str:
    return provenance.mark(name, text)


def test_a_fact_prints_its_text_marked_with_its_name():
    ch = Chapter("ch02", {"tokens_p16": {"value": 196, "text": "196"}}, linked=True)
    printed = str(ch.tokens_p16)
    assert printed != "196" and provenance.unmark(printed) == "196"
    assert f"{ch.tokens_p16:d}" == "196" and ch.tokens_p16.text == "196"
    # a number the pages compute from other data (building.md's frozen runs) is not a fact
    assert str(Chapter("frozen", {"runs": {"value": 3, "text": "3"}}).runs) == "3"
    assert str(Fact("x", 1, "1")) == "1"


def test_numbers_in_prose_become_links_and_stay_plain_where_a_link_cannot_stand():
    m = marked("ch02.tokens_p16", "196")
    page = (
        f"<p>We get {m} tokens, <code>{m}</code>, <a href='#x'>see {m}</a>.</p>"
        f'<img alt="a grid of {m} patches" src="x.png">'
        f'<span class="arithmatex">\\({m}\\)</span><div class="arithmatex">\\[{m}\\]</div>'
        f"<pre><code><span>{m}</span></code></pre>"
        f"<details><summary>Why {m}?</summary><p>Because {m}.</p></details>"
    )
    done = provenance.link_numbers(page, "../numbers/")
    html = done.html
    assert provenance.OPEN not in html and provenance.CLOSE not in html
    links = re.findall(r'<a class="vb-num" href="([^"]+)" data-vb-fact="([^"]+)">196</a>', html)
    assert links == [("../numbers/ch02/#ch02-tokens_p16", "ch02.tokens_p16")] * 2
    assert done.linked == ["ch02.tokens_p16"] * 2 and len(done.plain) == 7
    assert "<code>196</code>" in html and "see 196</a>" in html and 'alt="a grid of 196' in html
    assert "\\(196\\)" in html and "\\[196\\]" in html and "<span>196</span>" in html
    assert (
        '<summary>Why <span class="vb-num-plain" data-vb-fact="ch02.tokens_p16">196</span>' in html
    )


def test_every_fact_has_its_function_with_lines_that_are_that_function():
    entries = provenance.ledger(ROOT)
    names = {f"{ch}.{n}" for ch, facts in FACTS.items() for n in facts}
    assert set(entries) == names
    for e in entries.values():
        assert e.function and e.file and e.lines, e.name
        lines = (ROOT / e.file).read_text(encoding="utf-8").splitlines()
        a, b = e.lines
        body = "\n".join(lines[a - 1 : b])
        assert re.search(rf"^def {e.function}\(", body, re.M), (e.name, e.file, e.lines)
        assert body.lstrip().startswith("@"), e.name  # from its registering decorator
        assert e.kind in ("computed", "trained", "measured", "quoted")
        url = provenance.source_url("https://github.com/o/b", "abc", e)
        assert url == f"https://github.com/o/b/blob/abc/{e.file}#L{a}-L{b}"
    measured = [e for e in entries.values() if e.kind == "measured"]
    assert measured and all(
        FACTS[e.chapter][e.name.split(".", 1)[1]].get("measured") or "time" in e.item
        or e.kind == "measured" for e in measured
    )  # fmt: skip


def test_a_trained_fact_carries_its_seeds_spread_and_cpu(tmp_path):
    """From a manifest like the engine's: the mean's card gives the seeds, the lowest and
    highest seed (its _lo and _hi facts) and the CPU of the item and of its runs."""
    (tmp_path / "vitbook" / "figures").mkdir(parents=True)
    (tmp_path / "vitbook" / "figures" / "ch09_x.py").write_text(
        "from vitbook.engine import facts\n\n\n"
        "@facts(chapter=9, id='acc', trained=True)\n"
        "def accuracy(rec):\n    return 1\n"
    )
    (tmp_path / "figures").mkdir()
    acc = {"tol": 0.02, "seeds": 5}
    (tmp_path / "figures" / "manifest.json").write_text(json.dumps({"ch09/acc": {
        "trained": True, "deterministic": True,
        "computed_on": {"cpu": "X", "capability": "AVX512", "paths": "native"},
        "consumed": [{"run": "m.run", "slug": "seed=0"}],
        "facts": {"acc": {"text": "91.0%", "value": 0.91, **acc},
                  "acc_lo": {"text": "90.0%", "value": 0.9, **acc},
                  "acc_hi": {"text": "92.0%", "value": 0.92, **acc},
                  "secs": {"text": "3.1", "value": 3.1, "measured": True}},
    }}))  # fmt: skip
    (tmp_path / "frozen" / "m.run").mkdir(parents=True)
    (tmp_path / "frozen" / "m.run" / "seed=0.json").write_text(
        json.dumps({"computed_on": {"capability": "DEFAULT", "paths": "portable"}})
    )
    provenance._sources.cache_clear()
    provenance._run_capabilities.cache_clear()
    e = provenance.ledger(tmp_path)
    card = e["ch09.acc"].card()
    assert card["k"] == "trained" and card["s"] == 5 and card["r"] == ["90.0%", "92.0%"]
    assert card["tol"] == "0.02" and card["c"] == "AVX512 (native paths)"
    assert card["tc"] == "DEFAULT (portable paths)"
    assert card["f"] == "accuracy" and card["p"] == "vitbook/figures/ch09_x.py"
    assert card["l"] == [4, 6]
    assert e["ch09.secs"].card()["k"] == "measured"
    data = provenance.page_data(["ch09.acc", "ch09.acc"], e, "https://github.com/o/b", "c0", "n/")
    assert data.startswith('<template id="vb-numbers-data" data-search-exclude>')
    parsed = json.loads(unescape(re.sub(r"^<template[^>]*>|</template>$", "", data)))
    assert parsed["src"] == "https://github.com/o/b/blob/c0/" and list(parsed["facts"]) == [
        "ch09.acc"
    ]
    provenance._sources.cache_clear()
    provenance._run_capabilities.cache_clear()


def test_pages_that_print_a_fact_are_found_but_not_its_value_in_a_condition(tmp_path):
    (tmp_path / "a.md").write_text(
        '{{ ch02.tokens }} and {{ ch02["grid"] }}; {% if ch02.flag.value %}x{% endif %}'
    )
    found = provenance.printed_by(tmp_path, {"a.md": "a/"})
    assert found == {"ch02.tokens": ["a/"], "ch02.grid": ["a/"]}


# --- the built site --------------------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

CHAPTERS = sorted(p.name for p in DOCS.glob("[0-9][0-9]-*.md"))


def built() -> Path:
    try:
        return sitebuild.built_site()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


def numbers_ids(site: Path) -> dict[str, list[str]]:
    """The entries of each chapter's Numbers page: ``chNN -> [anchor, ...]``."""
    return {
        page.parent.name: re.findall(r'<div class="vb-fact" id="([^"]+)"', page.read_text())
        for page in sorted((site / "numbers").glob("ch[0-9][0-9]/index.html"))
    }


def taken_branches(text: str) -> str:
    """The page's text with its ``{% if %}`` / ``{% for %}`` blocks resolved on the facts, as
    the build resolves them: a fact printed only in a branch the facts do not take is not
    printed. Every ``{{ ... }}`` stays as written, for the names in it."""
    import jinja2

    kept: list[str] = []

    def keep(m: re.Match[str]) -> str:
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"

    env = jinja2.Environment(undefined=jinja2.ChainableUndefined, keep_trailing_newline=True)
    from vitbook.site.macros import load_facts

    facts = load_facts(ROOT / "figures" / "facts.json", linked=False)
    out = env.from_string(re.sub(r"\{\{.*?\}\}", keep, text, flags=re.S)).render(**facts)
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], out)


def printed_in_prose(src: str) -> set[str]:
    """Facts the page prints in prose: not in a question's title, a formula, a listing or
    inline code, nor in a branch of a condition that the facts do not take."""
    text = (DOCS / src).read_text(encoding="utf-8")
    text = re.sub(r"\{%\s*filter equation.*?\{%\s*endfilter\s*%\}", "", text, flags=re.S)
    text = taken_branches(text)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"^\s*\?\?\?.*$", "", text, flags=re.M)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]+`", "", text)  # a string fact quoted as code (an error message)
    text = re.sub(r"\$[^$\n]*\$", "", text)
    text = re.sub(r"\{%.*?%\}", "", text, flags=re.S)  # names in conditions print nothing
    return set(provenance.printed_by(DOCS, {src: src}).keys()) & {
        f"ch{m.group(1)}.{m.group(2) or m.group(3)}" for m in provenance.PRINTED_RE.finditer(text)
    }


@pytest.mark.slow
@pytest.mark.parametrize("src", CHAPTERS)
def test_every_number_of_a_chapter_links_to_its_numbers_entry(src):
    site = built()
    html = (site / src.removesuffix(".md") / "index.html").read_text(encoding="utf-8")
    ids = numbers_ids(site)
    links = re.findall(
        r'<a class="vb-num" href="\.\./numbers/(ch\d\d)/#([^"]+)" data-vb-fact="([^"]+)">', html
    )
    assert links, f"{src}: no number is linked"
    dangling = sorted({(ch, a) for ch, a, _ in links if a not in ids.get(ch, [])})
    assert dangling == [], f"{src}: links to no entry: {dangling}"
    assert all(provenance.anchor(name) == a and name.startswith(ch) for ch, a, name in links)
    linked = {name for _, _, name in links}
    missing = sorted(n for n in printed_in_prose(src) - linked if n.split(".")[0] in FACTS
                     and n.split(".", 1)[1] in FACTS[n.split(".")[0]])  # fmt: skip
    assert missing == [], f"{src}: printed without a link: {missing}"
    m = re.search(r'<template id="vb-numbers-data"[^>]*>(.*?)</template>', html, re.S)
    data = json.loads(unescape(m.group(1)))
    assert set(data["facts"]) == linked
    for name, card in data["facts"].items():
        assert card["f"] and card["p"].startswith("vitbook/figures/") and len(card["l"]) == 2, name
        assert card["k"] in ("computed", "trained", "measured", "quoted")
    assert re.fullmatch(r"https://github\.com/vitbook/vitbook/blob/[0-9a-f]{40}/", data["src"])


@pytest.mark.slow
def test_no_page_is_left_with_a_marked_number():
    site = built()
    left = [
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if re.search("[\ue000\ue001\ue002]", p.read_text(encoding="utf-8"))
    ]
    assert left == []


@pytest.mark.slow
def test_the_numbers_appendix_lists_every_fact_once_and_search_finds_it():
    site = built()
    pages = numbers_ids(site)
    assert sorted(pages) == sorted(FACTS)  # one page per chapter
    for ch, ids in pages.items():
        expected = sorted(provenance.anchor(f"{ch}.{n}") for n in FACTS[ch])
        assert sorted(ids) == expected and len(ids) == len(set(ids)), ch
    page = (site / "numbers" / "ch02" / "index.html").read_text(encoding="utf-8")
    entry = page[page.index('id="ch02-tokens_p16"') :][:2000]
    assert "token_counts" in entry and "vitbook/figures/ch02_patches.py" in entry
    assert 'href="../../02-patches/"' in entry  # the page that prints it
    index = (site / "numbers" / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{ch}/"' in index for ch in FACTS)
    search = json.loads((site / "search" / "search_index.json").read_text())["docs"]
    hits = [d for d in search if d["location"].startswith("numbers/ch02/")]
    assert hits and any("tokens_p16" in d["text"] for d in hits)
    # the cards' data is not indexed as text
    assert not any('"facts":' in d["text"] for d in search)


@pytest.mark.slow
def test_the_cards_add_at_most_20_kb_to_a_chapter_page():
    """Measured on the built pages: a chapter page with its links and card data, against the
    same page with the numbers as plain text and no data, gzip both, plus the script and the
    stylesheet (gzip), which every page loads once."""
    site = built()
    shared = sum(
        len(gzip.compress((site / f).read_bytes(), 9))
        for f in ("javascripts/numbers.js", "stylesheets/numbers.css")
    )
    costs = {}
    for src in CHAPTERS:
        html = (site / src.removesuffix(".md") / "index.html").read_text(encoding="utf-8")
        bare = re.sub(r'<a class="vb-num" [^>]*>([^<]*)</a>', r"\1", html)
        bare = re.sub(r'<template id="vb-numbers-data"[^>]*>.*?</template>', "", bare, flags=re.S)
        costs[src] = len(gzip.compress(html.encode(), 9)) - len(gzip.compress(bare.encode(), 9))
    print("\ncards' cost per chapter (gzip bytes, plus", shared, "shared):", costs)
    worst = max(costs.values()) + shared
    assert worst <= CARD_BUDGET, f"the cards add {worst} bytes (gzip) to a chapter page"


def test_a_rounding_level_fact_says_the_chapters_print_a_bound():
    """A computed fact with ``tol=`` is a rounding error whose last digits change with the CPU:
    its card and its appendix entry give the bound the chapters print (macros.noise_bound),
    not a seed spread; a trained fact's card keeps its tolerance instead."""
    entries = provenance.ledger(ROOT)
    e = entries["ch06.fh_row_sum_max_dev"]
    card = e.card()
    assert e.kind == "computed" and e.tol is not None
    assert card["b"] == provenance.bound_text(e.tol) == "1e-13" and "tol" not in card
    page = provenance.appendix_html(entries, {}, {}, "", "", "../", chapter="ch06")
    entry = page[page.index('id="ch06-fh_row_sum_max_dev"') :]
    entry = entry[: entry.index("</div>")]
    assert provenance.ROUNDING_TEXT.format("1e-13") in entry
    trained = next(x for x in entries.values() if x.kind == "trained" and x.tol is not None)
    assert "b" not in trained.card() and "tol" in trained.card()
