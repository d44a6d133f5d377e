"""Every fact says what it is: a number quoted from a source is marked "quoted", with its
table or figure and its source, and only what the book computes says "computed".

The one table of quoted numbers is ``vitbook.quoted.QUOTED``. These tests check
``figures/facts.json`` against it in both directions, look for numbers typed into the chapter
modules as plain facts (a typed number is not computed), and check what a card and the Numbers
appendix print for a quoted number.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from vitbook import quoted
from vitbook.engine.registry import Recorder
from vitbook.site import provenance

ROOT = Path(__file__).resolve().parents[1]
FACTS = json.loads((ROOT / "figures" / "facts.json").read_text(encoding="utf-8"))

#: Numbers typed into a chapter module as plain facts on purpose: settings of the book's own
#: (an image size an exercise or a paragraph picks), not numbers read from a source.
BOOK_SETTINGS = {
    ("ch01", "wide_image"),  # the image whose two sides the receptive-field paragraph relates
    ("ch01", "exercise_image"),  # exercise 3's image
    ("ch02", "cifar_image"),  # the side of a CIFAR image, the size of the small-image example
    ("ch04", "image_big"),  # the sizes the position-table paragraph resamples to
    ("ch04", "image_huge"),
    ("ch08", "size_384"),  # the sizes the cost table is computed at
    ("ch08", "size_512"),
    ("ch08", "lat_model"),  # the model the latency figure times
}


def test_every_quoted_fact_is_in_the_table_with_its_value_and_source():
    marked = 0
    for chapter, facts in FACTS.items():
        for name, fact in facts.items():
            if "quoted" not in fact:
                continue
            marked += 1
            q = quoted.lookup(chapter, name)
            assert q is not None, f"{chapter}.{name} says it is quoted but QUOTED lacks it"
            assert fact["value"] == q.value, f"{chapter}.{name}: {fact['value']!r} != {q.value!r}"
            assert fact["quoted"] == q.label
    assert marked == sum(len(v) for v in quoted.QUOTED.values())


def test_no_number_of_the_table_is_recorded_as_computed():
    for chapter, names in quoted.QUOTED.items():
        for name, q in names.items():
            fact = FACTS.get(chapter, {}).get(name)
            assert fact is not None, f"{chapter}.{name} is in QUOTED but no chapter records it"
            assert fact.get("quoted") == q.label, (
                f"{chapter}.{name} = {q.value!r} comes from {q.label} but is recorded with "
                "rec.fact: record it with vitbook.quoted.quote"
            )
            assert q.source in quoted.SOURCES


def test_every_source_is_a_reference_of_the_book():
    bib = (ROOT / "docs" / "references.bib").read_text(encoding="utf-8")
    for key in quoted.SOURCES:
        assert f"{{{key}," in bib, key


def _typed_facts():
    """``(chapter, name)`` of every ``rec.fact`` call whose value is typed as a literal."""
    for path in sorted((ROOT / "vitbook" / "figures").glob("ch[0-9][0-9]_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "fact"
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Constant)
            ):
                continue
            value = node.args[1]
            if isinstance(value, ast.UnaryOp):
                value = value.operand
            if isinstance(value, ast.Constant) and not isinstance(value.value, bool):
                yield path.name[:4], node.args[0].value


def test_a_number_typed_into_a_chapter_module_is_quoted_or_a_setting_of_the_book():
    typed = set(_typed_facts())
    assert not typed - BOOK_SETTINGS, (
        f"typed as plain facts, so the Numbers appendix calls them computed: "
        f"{sorted(typed - BOOK_SETTINGS)}; record a quoted number with vitbook.quoted.quote"
    )
    assert BOOK_SETTINGS <= typed  # the list names no fact that is no longer typed


def test_quote_refuses_a_number_the_table_lacks_or_has_otherwise():
    rec = Recorder(1)
    assert quoted.quote(rec, "t5_in1k_b16", 77.91, "{:.2f}%") == 77.91
    assert rec.facts["t5_in1k_b16"] == {
        "value": 77.91,
        "text": "77.91%",
        "quoted": "Table 5, Dosovitskiy et al. 2021",
    }
    with pytest.raises(ValueError, match="Table 5"):
        quoted.quote(Recorder(1), "t5_in1k_b16", 77.9)
    with pytest.raises(KeyError, match="not in vitbook.quoted.QUOTED"):
        quoted.quote(Recorder(1), "vit_params", 1234)


def test_cards_and_appendix_say_quoted_with_the_source():
    entries = provenance.ledger(ROOT)
    e = entries["ch01.t5_in1k_b16"]
    assert e.kind == "quoted" and e.quoted == "Table 5, Dosovitskiy et al. 2021"
    assert e.card()["k"] == "quoted" and e.card()["q"] == e.quoted
    html = provenance.appendix_html(entries, {}, {}, "", "", "", chapter="ch01")
    row = html.split('id="ch01-t5_in1k_b16"', 1)[1].split("</div>", 1)[0]
    assert "<strong>Quoted</strong> from Table 5, Dosovitskiy et al. 2021" in row
    assert "Computed" not in row and "CPU" not in row
    computed = entries["ch01.layers_for_d16"]
    assert computed.kind == "computed" and "q" not in computed.card()
