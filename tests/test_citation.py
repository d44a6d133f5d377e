"""The book can be cited, and a citation that does not resolve fails the build (issue 7).

CITATION.cff is checked against the rules of the Citation File Format 1.2.0 that matter for this
repository (required keys, their types, SPDX licences, a version equal to the package's); the
page macros are called through a small stand-in for mkdocs-macros' environment; and one slow
test builds a throw-away MkDocs project to show that an unknown key really stops a build.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml

from vitbook.site import macros as book
from vitbook.site.macros import BookError

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# The parts of CFF 1.2.0 (https://github.com/citation-file-format/citation-file-format,
# schema.json) that this repository uses, written out: required keys, types and formats.
PERSON = {
    "type": "object",
    "anyOf": [{"required": ["name"]}, {"required": ["family-names"]}],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "family-names": {"type": "string", "minLength": 1},
        "given-names": {"type": "string", "minLength": 1},
        "orcid": {"type": "string", "pattern": r"^https://orcid\.org/"},
    },
}
SPDX = {"enum": ["MIT", "CC-BY-4.0", "Apache-2.0", "CC0-1.0"]}
URL = {"type": "string", "pattern": r"^https://\S+$"}
CFF_KEYS = {
    "abstract",
    "authors",
    "cff-version",
    "commit",
    "contact",
    "date-released",
    "doi",
    "identifiers",
    "keywords",
    "license",
    "license-url",
    "message",
    "preferred-citation",
    "references",
    "repository",
    "repository-artifact",
    "repository-code",
    "title",
    "type",
    "url",
    "version",
}
SCHEMA = {
    "type": "object",
    "required": ["cff-version", "message", "title", "authors"],
    "propertyNames": {"enum": sorted(CFF_KEYS)},
    "properties": {
        "cff-version": {"const": "1.2.0"},
        "message": {"type": "string", "minLength": 1},
        "title": {"type": "string", "minLength": 1},
        "type": {"enum": ["software", "dataset"]},
        "authors": {"type": "array", "minItems": 1, "items": PERSON},
        "version": {"type": "string", "minLength": 1},
        "license": {
            "oneOf": [SPDX, {"type": "array", "minItems": 1, "uniqueItems": True, "items": SPDX}]
        },
        "url": URL,
        "repository-code": URL,
        "keywords": {"type": "array", "items": {"type": "string"}},
        "preferred-citation": {
            "type": "object",
            "required": ["type", "title", "authors"],
            "properties": {
                "type": {"enum": ["book", "software", "generic", "article"]},
                "title": {"type": "string"},
                "authors": {"type": "array", "minItems": 1, "items": PERSON},
                "year": {"type": "integer"},
                "url": URL,
                "license": SPDX,
                "edition": {"type": "string"},
            },
        },
    },
}


def mkdocs_config() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)  # noqa: S506


@pytest.fixture(scope="module")
def cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_citation_cff_follows_the_format(cff):
    jsonschema.validate(cff, SCHEMA)


def test_citation_cff_schema_rejects_broken_files(cff):
    """The schema above is not a rubber stamp: each of these damaged copies fails it."""
    broken = [
        {k: v for k, v in cff.items() if k != "authors"},
        dict(cff, **{"cff-version": "1.1.0"}),
        dict(cff, license="MIT License"),
        dict(cff, version=1.0),
        dict(cff, url="vitbook.github.io"),
        dict(cff, author=cff["authors"]),
    ]
    for doc in broken:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, SCHEMA)


def test_citation_cff_agrees_with_package_and_site(cff):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    site = mkdocs_config()
    assert cff["version"] == project["version"]
    assert "version" not in site["extra"]  # Material's version selector: the hooks set it
    assert cff["title"] == site["site_name"] == cff["preferred-citation"]["title"]
    assert cff["url"] == site["site_url"]
    assert cff["preferred-citation"]["year"] == int(site["extra"]["year"])
    assert cff["preferred-citation"]["edition"] == cff["version"]
    assert set(cff["license"]) == {"MIT", "CC-BY-4.0"}
    assert [a["name"] for a in cff["authors"]] == [site["extra"]["authors"]]


# --- the page macros, through a stand-in for mkdocs-macros' env ---------------------------


class FakeEnv:
    """What ``define_env`` uses of mkdocs-macros' environment, and nothing more."""

    def __init__(self, src: str = "02-patches.md", title: str = "2. From image to sequence"):
        site = mkdocs_config()
        self.conf = dict(site, docs_dir=str(DOCS))
        self.project_dir = str(ROOT)
        self.variables: dict = {}
        self.macros: dict = {}
        self.filters: dict = {}
        self.page = None
        self.go(src, title)
        book.numbering.cache_clear()
        book.bibliography.cache_clear()
        book.define_env(self)

    def go(self, src: str, title: str = "") -> None:
        url = "" if src == "index.md" else src.removesuffix(".md") + "/"
        self.page = SimpleNamespace(file=SimpleNamespace(src_path=src), url=url, title=title)

    def macro(self, fn):
        self.macros[fn.__name__] = fn
        return fn

    def filter(self, fn):
        self.filters[fn.__name__] = fn
        return fn


@pytest.fixture()
def env() -> FakeEnv:
    return FakeEnv()


def test_unknown_citation_key_raises(env):
    with pytest.raises(BookError, match="unknown citation 'nobody1999'"):
        env.macros["cite"]("nobody1999")
    with pytest.raises(BookError):
        env.macros["cite"]("dosovitskiy2021", "nobody1999")  # one bad key among good ones


def test_known_citation_links_to_references(env):
    html = env.macros["cite"]("dosovitskiy2021", "vaswani2017")
    assert html.count('class="vb-cite"') == 2
    assert 'href="../references/#dosovitskiy2021"' in html
    assert "Dosovitskiy et al., 2021" in html


def test_narrative_citation_names_the_authors_once(env):
    html = env.macros["citet"]("xiong2020")
    assert html.count('class="vb-cite"') == 1 and 'href="../references/#xiong2020"' in html
    assert ">Xiong et al. (2020)</a>" in html
    with pytest.raises(BookError, match="unknown citation 'nobody1999'"):
        env.macros["citet"]("nobody1999")


def test_max_diff_says_exactly_zero_or_at_most(env):
    """The page macro for a largest difference (it lives with the citation macros)."""
    assert env.macros["max_diff"](book.Fact("d", 0.0, "0e+00")) == "exactly 0"
    assert env.macros["max_diff"](book.Fact("d", 7.6e-8, "7.6e-08")) == "at most 7.6e-08"
    # a fact of figures/facts.json keeps its mark (its link to the Numbers appendix)
    from vitbook.site.provenance import unmark

    marked = env.macros["max_diff"](book.Fact("d", 0.0, "0e+00", chapter="ch06"))
    assert marked != "exactly 0" and unmark(marked) == "exactly 0"
    small = book.Fact("d", 1e-7, "1e-07", chapter="ch06")
    assert unmark(env.macros["max_diff"](small)) == "at most 1e-07"
    with pytest.raises(BookError, match="takes a fact"):
        env.macros["max_diff"](0.0)


def test_max_diff_prints_rounding_noise_as_its_bound(env):
    """A difference recorded with a tolerance is rounding noise: the page prints the bound,
    which is the same on every CPU, whatever this machine's value (zero included), and the
    build fails when the value is not below it."""
    for value, text in ((1.7e-6, "1.7e-06"), (0.0, "0e+00"), (9.9e-6, "9.9e-06")):
        got = env.macros["max_diff"](book.Fact("d", value, text, tol=1e-5))
        assert got == "less than 1e-5", got
    float64 = book.Fact("d", 5e-15, "5e-15", tol=1e-13)
    assert env.macros["max_diff"](float64) == "less than 1e-13"
    with pytest.raises(BookError, match="not below its bound"):
        env.macros["max_diff"](book.Fact("d", 2e-5, "2e-05", tol=1e-5))
    assert env.macros["max_diff"](book.Fact("d", 5e-15, "5e-15", tol=3e-13)) == "less than 3e-13"


def test_facts_keep_their_tolerance(tmp_path):
    """load_facts passes each fact's tolerance to the pages (max_diff prints it)."""
    path = tmp_path / "facts.json"
    path.write_text(
        '{"ch03": {"a": {"text": "1.7e-06", "value": 1.7e-06, "tol": 1e-05},'
        ' "b": {"text": "3", "value": 3}}}'
    )
    ch = book.load_facts(path)["ch03"]
    assert ch.a.tol == 1e-5 and ch.b.tol is None


def test_rounding_level_facts_print_their_bound_not_their_value(env):
    """Noise is a bound: a fact recorded with ``tol=`` prints as "less than" / "below" its
    tol, the same text whatever the CPU computed (5.6e-16 here, 6.7e-16 there); a value at or
    above its bound, or a bound asked of a fact without one, fails the build."""
    here = book.Fact("d", 5.6e-16, "5.6e-16", 1e-13)
    there = book.Fact("d", 6.7e-16, "6.7e-16", 1e-13)
    for fact in (here, there):
        assert env.macros["max_diff"](fact) == "less than 1e-13"
        assert env.macros["below"](fact) == "below 1e-13"
    assert env.macros["max_diff"](book.Fact("d", 0.0, "0", 1e-6)) == "less than 1e-6"
    with pytest.raises(BookError, match="not below its bound"):
        env.macros["below"](book.Fact("d", 2e-13, "2e-13", 1e-13))
    with pytest.raises(BookError, match="without tol="):
        env.macros["below"](book.Fact("d", 1e-16, "1e-16"))


def test_no_page_names_the_authors_right_before_citing_them():
    """Writing "Xiong et al. {{ cite("xiong2020") }}" prints "Xiong et al. (Xiong et al.,
    2020)": such a sentence uses ``citet``, which prints "Xiong et al. (2020)"."""
    from vitbook.site.macros import short_authors

    bib = book.bibliography(str(DOCS / "references.bib"))
    doubled = []
    pages = [*DOCS.glob("*.md"), *DOCS.glob("*.py"), *DOCS.glob("notebooks/*.py")]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"\{\{\s*cite\(([^)]*)\)", text):
            before = " ".join(text[max(0, m.start() - 80) : m.start()].split())[-40:]
            for key in re.findall(r"[\"']([^\"']+)[\"']", m.group(1)):
                first = short_authors(bib[key]).split(" ")[0]
                if first in before:
                    doubled.append(f"{page.name}: ...{before}{{{{ cite({key!r}) }}}}")
    assert not doubled, doubled


def test_every_citation_in_the_book_resolves():
    bib = book.bibliography(str(DOCS / "references.bib"))
    used = set()
    for page in DOCS.glob("*.md"):
        for args in re.findall(r"cite[t]?\(([^)]*)\)", page.read_text(encoding="utf-8")):
            used |= set(re.findall(r"[\"']([^\"']+)[\"']", args))
    assert used, "no citations found: the pattern is wrong"
    assert sorted(used - set(bib)) == []
    for key, entry in bib.items():
        assert entry.get("url", "").startswith("http"), f"{key} has no url"


def test_cite_box_names_the_latest_text_as_not_an_edition(env, monkeypatch):
    monkeypatch.setenv("VITBOOK_PDF", "1")  # a build that `nox -s pdf` prints
    box = env.macros["cite_box"]()
    ed = env.variables["edition"]
    assert 'Cite this chapter"' in box and box.index("Changes") < box.index("Cite this chapter")
    assert "@incollection{vitbook-ch02," in box
    assert "title     = {Chapter 2: From image to sequence}" in box
    assert f"note      = {{Latest text, not an edition: commit {ed['short']}, built " in box
    assert "version   =" not in box  # the latest text has no version to cite
    assert "edition" in box.split("```bibtex")[0]  # says to cite an edition
    assert re.search(r"urldate   = \{\d{4}-\d\d-\d\d\}", box)
    assert "https://vitbook.github.io/vitbook/02-patches/" in box
    # the chapter's PDF (vitbook/site/pdf.py prints it under this name) and the book's
    assert 'href="../pdf/ch02-patches.pdf"' in box and 'href="../pdf/vitbook.pdf"' in box


def test_cite_box_of_a_build_without_pdfs_links_the_published_ones(env, monkeypatch):
    """`nox -s book` and `nox -s serve` print no PDF: their pages must not link pdf/ files
    that are not there, and link the published copy's instead (the latest text's, for a
    build that is no edition), saying so."""
    monkeypatch.delenv("VITBOOK_PDF", raising=False)
    box = env.macros["cite_box"]()
    assert 'href="../pdf/' not in box
    assert 'href="https://vitbook.github.io/vitbook/latest/pdf/ch02-patches.pdf"' in box
    assert 'href="https://vitbook.github.io/vitbook/latest/pdf/vitbook.pdf"' in box
    assert "published copy; this build prints none" in box


def test_cite_box_outside_a_chapter_fails(env):
    env.go("citing.md", "How to cite")
    with pytest.raises(BookError):
        env.macros["cite_box"]()


def test_cite_figure_and_equation_give_number_and_anchor(env):
    env.go("citing.md", "How to cite")
    fig = env.macros["cite_figure"]("ch02/patch-grids")
    assert "Figure 2.1, in Chapter 2: From image to sequence: patches" in fig
    assert "https://vitbook.github.io/vitbook/02-patches/#fig-patch-grids" in fig
    assert "note      = {Figure 2.1; Latest text, not an edition: commit" in fig
    eq = env.macros["cite_figure"]("ch02/patch-count")
    assert "Eq. 2.1" in eq and "#eq-patch-count" in eq
    with pytest.raises(BookError):
        env.macros["cite_figure"]("ch02/no-such-figure")


def test_cite_book_and_chapter_from_any_page(env):
    env.go("citing.md", "How to cite")
    whole = env.macros["cite_book"]()
    assert "@book{vitbook," in whole and "Vision Transformers, Computed" in whole
    assert "latest text, not an edition" in whole
    ch = env.macros["cite_chapter"](2)
    assert "@incollection{vitbook-ch02," in ch and "/02-patches/" in ch
    with pytest.raises(BookError):
        env.macros["cite_chapter"](99)


def test_glossary_term_links_or_fails(env):
    link = env.macros["term"]("class token")
    assert link == '<a class="vb-term" href="../glossary/#class-token">class token</a>'
    assert 'href="../glossary/#patch"' in env.macros["term"]("patches", "patch")
    with pytest.raises(BookError, match="no glossary entry"):
        env.macros["term"]("flux capacitor")


def test_unnumbered_figure_on_the_landing_page(env):
    env.go("index.md", "Home")
    html = env.macros["figure"]("ch00/book-map", "The map.")
    assert 'id="fig-book-map"' in html and 'src="figures/ch00/book-map.png"' in html
    assert ">Figure.</a>" in html
    with pytest.raises(BookError):
        env.macros["figure"]("book-map", "no chapter prefix off a chapter page")


# --- a real build -----------------------------------------------------------------------


def tiny_project(tmp_path: Path, key: str) -> Path:
    """A one-page MkDocs project that uses the book's macros and cites ``key``."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "facts.json").write_text("{}")
    (tmp_path / "docs" / "references.bib").write_text(
        "@misc{known2020,\n  author = {Known, Ada},\n  title = {A title},\n  year = {2020},\n"
        "  url = {https://example.org}\n}\n"
    )
    (tmp_path / "docs" / "index.md").write_text(f'# Page\n\nAs shown {{{{ cite("{key}") }}}}.\n')
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: tiny\nsite_url: https://example.org/\nstrict: true\n"
        "nav:\n  - Home: index.md\n"
        "plugins:\n  - macros:\n      modules: [vitbook.site.macros]\n"
        "      on_undefined: strict\n      on_error_fail: true\n"
    )
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(("key", "fails"), [("known2020", False), ("unknown2020", True)])
def test_mkdocs_build_fails_on_unknown_citation(tmp_path, key, fails):
    project = tiny_project(tmp_path, key)
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )
    assert (run.returncode != 0) == fails, run.stderr[-2000:]
    if fails:
        assert "unknown citation 'unknown2020'" in run.stderr + run.stdout
    else:
        assert "Known, 2020" in (tmp_path / "site" / "index.html").read_text()


# --- the BibTeX reader (pybtex) ---------------------------------------------------------------

ONE_LINE = (
    "@inproceedings{bare2021, author = {Doe, Jane and van der Berg, Piet}, title = {One Line},"
    " booktitle = iclr, year = 2021, url = {https://example.org/a_b}}"
)
AWKWARD_BIB = r"""
@string{iclr = "International Conference on Learning Representations"}


@article{wrapped2019,
  author  = {J{\'e}gou, Herv{\'e} and Sch{\"o}nberger, Johannes L. and others},
  title   = {A Title Wrapped
             over Two Lines with {GELUs}},
  journal = "Journal",
  year    = {2019},
  note    = {as load\_digits}
}

@misc{plain2020,
  title = {No author}, year = {2020}, howpublished = {GitHub repository},
  url = {https://example.org}, urldate = {2026-11-29}
}
"""


def test_bibtex_reader_handles_bare_years_wrapped_fields_and_one_line_entries(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text(AWKWARD_BIB.replace("\n\n", "\n\n" + ONE_LINE + "\n\n", 1), encoding="utf-8")
    book.bibliography.cache_clear()
    bib = book.bibliography(str(path))
    assert sorted(bib) == ["bare2021", "plain2020", "wrapped2019"]
    one = bib["bare2021"]
    assert one["year"] == "2021" and one["title"] == "One Line"
    assert one["booktitle"] == "International Conference on Learning Representations"
    assert one["url"] == "https://example.org/a_b"
    assert one["author"] == "Doe, Jane and van der Berg, Piet"
    wrapped = bib["wrapped2019"]
    assert wrapped["title"] == "A Title Wrapped over Two Lines with GELUs"
    assert wrapped["author"].startswith("Jégou, Hervé and Schönberger, Johannes L.")
    assert wrapped["note"] == "as load_digits"
    assert wrapped["type"] == "article" and bib["plain2020"]["urldate"] == "2026-11-29"


def test_bibtex_reader_names_the_broken_line(tmp_path):
    path = tmp_path / "broken.bib"
    path.write_text("@article{x,\n  title = {unclosed,\n  year = 2020\n", encoding="utf-8")
    book.bibliography.cache_clear()
    with pytest.raises(BookError, match="broken.bib"):
        book.bibliography(str(path))


def test_references_page_reads_cleanly(env):
    html = env.macros["references"]()
    text = re.sub(r"<[^>]+>", "", html)
    assert ". ." not in text and "\\_" not in text and "{" not in text
    assert "load_digits" in text and "Jégou" in text and "van der Walt" in text
    assert "UCI Machine Learning Repository." in text
    assert "(accessed 2026-11-29)" in text
    assert html.count("<li id=") == len(book.bibliography(str(DOCS / "references.bib")))


def test_zenodo_metadata_agrees_with_citation_cff(cff):
    """``.zenodo.json`` (read by Zenodo when a GitHub release is archived) says what
    CITATION.cff says: title, version, authors, licence of the text, keywords."""
    import json

    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    assert zenodo["title"] == cff["title"]
    assert zenodo["version"] == cff["version"]
    assert [c["name"] for c in zenodo["creators"]] == [a["name"] for a in cff["authors"]]
    assert zenodo["license"] == cff["preferred-citation"]["license"].lower()
    assert zenodo["upload_type"] == "publication" and zenodo["publication_type"] == "book"
    assert set(zenodo["keywords"]) == set(cff["keywords"])
    ids = {r["identifier"] for r in zenodo["related_identifiers"]}
    assert cff["url"] in ids and cff["repository-code"] in ids


def test_in_text_citations_name_one_two_or_first_author_et_al() -> None:
    from vitbook.site.macros import short_authors

    one = {"persons": [("Vaswani", "Ashish")]}
    two = {"persons": [("Abnar", "Samira"), ("Zuidema", "Willem")]}
    many = {"persons": [("Dosovitskiy", "Alexey"), ("Beyer", "Lucas"), ("Kolesnikov", "A.")]}
    assert short_authors(one) == "Vaswani"
    assert short_authors(two) == "Abnar &amp; Zuidema"
    assert short_authors(many) == "Dosovitskiy et al."
    bib = book.bibliography(str(Path("docs/references.bib")))
    assert short_authors(bib["abnar2020"]) == "Abnar &amp; Zuidema"
