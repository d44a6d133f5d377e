"""The typed quiz questions, graded by the book's own grader (``typedRight`` in
docs/javascripts/quiz.js, run in Node): for every ``[=]`` question of every chapter, the right
answer passes as printed, without separators, with its unit and in scientific notation; every
trap the chapter names (listed next to the question) fails; and an empty box is not graded.

Each typed question carries a Jinja comment (``{# ... #}``, removed when the page is built)
after its ``[=]`` item::

    - [=] {{ ch02.seq_384 }}
    {# grading: exact. Why this tolerance suits what the question asks.
       units: tokens
       traps: {{ ch02.tokens_384 }} (the class token forgotten) | {{ ch02.grid_384 }} (the
       patches along one side) #}

``grading:`` says how the answer is graded and why (``exact``, or the ``±`` tolerance written in
the ``[=]`` item), ``units:`` a unit a reader may type after the number, ``traps:`` the wrong
answers a student makes, each with what it forgets. A trap is a quantity, so it is a fact
(computed next to the right answer by the chapter's figure module, the slip included), resolved
to the fact's text as the ``[=]`` item is; only a one- or two-digit integer, the question's own
small parameter, may be typed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import torch
from quizspec import CHAPTERS, FACTS, ROOT, SPEC, TYPED, traps, typed_questions, written_traps

from vitbook.engine import Recorder
from vitbook.figures import (
    ch02_solutions,
    ch03_solutions,
    ch04_solutions,
    ch06_solutions,
    ch10_solutions,
)
from vitbook.model import Attention, VisionTransformer, preset
from vitbook.patches import patchify

QUIZ_JS = ROOT / "docs" / "javascripts" / "quiz.js"
QUESTIONS = typed_questions()
#: how a trap may be written: one fact, or a one- or two-digit integer (a small parameter)
TRAP_VALUE = re.compile(r"\{\{\s*ch\d\d\.\w+\s*\}\}|\d{1,2}")


def grade(cases: list[tuple[str, str]]) -> list:
    """typedRight(answer, spec) for each case, computed by quiz.js in Node."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (`npm ci` installs the book's front-end tools)")
    script = (
        f"import {{ typedRight }} from {json.dumps(QUIZ_JS.as_uri())};\n"
        "const cases = JSON.parse(process.argv[1]);\n"
        "console.log(JSON.stringify(cases.map(([a, s]) => typedRight(a, s))));\n"
    )
    run = subprocess.run(
        [node, "--no-warnings", "--input-type=module", "-e", script, json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


def test_every_chapter_with_a_typed_question_is_found() -> None:
    # Chapters 1, 2, 3, 4, 6, 8 and 10 ask for a number; each such question must be read here
    chapters = {q["chapter"][:2] for q in QUESTIONS}
    assert {"01", "02", "03", "04", "06", "08", "10"} <= chapters, chapters
    in_pages = sum(len(TYPED.findall(p.read_text(encoding="utf-8"))) for p in CHAPTERS)
    assert len(QUESTIONS) == in_pages


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: f"{q['chapter'][:2]}-{q['title'][:2]}")
def test_typed_question_is_declared(q: dict) -> None:
    """The answer is a fact (never typed by hand), one thing is asked, and the tolerance is
    chosen and justified next to the question, with the traps it must reject."""
    assert SPEC.match(q["item"]), f"{q['title']}: the [=] item must be a fact: {q['item']!r}"
    grading = q.get("grading", "")
    assert grading, f"{q['title']}: add a {{# grading: ... #}} comment after the [=] item"
    rule = grading.split(".", 1)[0].strip()
    assert rule == ("exact" if "±" not in q["item"] else "tolerance"), (
        f"{q['title']}: 'grading:' must start with 'exact.' (no ±) or 'tolerance.' (with ±)"
    )
    assert len(grading) > 40, f"{q['title']}: say why this tolerance suits the question"
    assert traps(q), f"{q['title']}: list the traps a student falls into"
    for value, _ in written_traps(q):
        assert TRAP_VALUE.fullmatch(value), (
            f"{q['title']}: the trap {value!r} is a typed quantity; record it as a fact in the "
            "chapter's figure module and write {{ chNN.name }}"
        )
    answer = q["spec"].split("±")[0].strip()
    assert answer not in traps(q), f"{q['title']}: a trap is the right answer, {answer}"
    assert q.get("units"), f"{q['title']}: give the unit a reader may type"


def test_traps_are_read_from_the_facts() -> None:
    """A trap written as a fact is the fact's text, as the page would print it; a plain small
    number stays as written; a fact that does not exist, in a trap or its reason, is an error."""
    q = {"traps": "{{ ch02.tokens_384 }} (the class token forgotten) | 16 (P, not N)"}
    assert traps(q) == [FACTS["ch02"]["tokens_384"]["text"], "16"]
    assert written_traps(q)[0] == ("{{ ch02.tokens_384 }}", "the class token forgotten")
    with pytest.raises(KeyError, match="ch02.no_such_fact"):
        traps({"traps": "{{ ch02.no_such_fact }} (a misspelt name)"})
    with pytest.raises(KeyError, match="ch02.no_such_image"):
        traps({"traps": "{{ ch02.seq_224 }} (the sequence at {{ ch02.no_such_image }} pixels)"})


def test_a_trap_that_is_the_answer_is_caught() -> None:
    """The checks above would catch a trap that names the answer's own fact: it resolves to the
    answer's text, which the grader passes (the trap test fails on it) and the declaration
    test refuses."""
    q = next(q for q in QUESTIONS if q["item"] == "{{ ch02.seq_384 }}")
    [same] = traps({"traps": f"{q['item']} (the right answer, listed by mistake)"})
    assert same == q["spec"]
    assert grade([(same, q["spec"])]) == [True]


def test_one_answer_box_asks_one_thing() -> None:
    """A typed question asks for one number: no "and"-joined second request, no "why" box."""
    for q in QUESTIONS:
        ask = q["title"]
        assert ask.count("?") == 1, f"{ask}: one question per answer box"
        assert not re.search(r"\b(and|also) (what|how many|its)\b|\bwhy\b", ask, re.I), ask


@pytest.fixture(scope="module")
def graded() -> dict:
    """Every question's cases, graded in one Node run: {(spec, answer): verdict}."""
    cases = []
    for q in QUESTIONS:
        value = q["spec"].split("±")[0].strip()
        bare = value.replace(",", "")
        unit = q["units"]
        cases += [(a, q["spec"]) for a in right_answers(value, bare, unit)]
        cases += [(a, q["spec"]) for t in traps(q) for a in (t, f"{t} {unit}")]
        cases += [(a, q["spec"]) for a in ("", "   ", unit)]
    verdicts = grade(cases)
    return {(s, a): v for (a, s), v in zip(cases, verdicts, strict=True)}


def right_answers(value: str, bare: str, unit: str) -> list[str]:
    number = float(bare)
    sci = f"{number:e}"  # 5.770000e+02
    return [value, bare, f"{bare} {unit}", f"{value} {unit}", f"about {bare}", sci]


@pytest.mark.parametrize("q", QUESTIONS, ids=lambda q: f"{q['chapter'][:2]}-{q['title'][:2]}")
def test_right_answer_passes_and_every_trap_fails(q: dict, graded: dict) -> None:
    value = q["spec"].split("±")[0].strip()
    bare = value.replace(",", "")
    for answer in right_answers(value, bare, q["units"]):
        assert graded[(q["spec"], answer)] is True, f"{q['title']}: {answer!r} graded wrong"
    for trap in traps(q):
        for answer in (trap, f"{trap} {q['units']}"):
            verdict = graded[(q["spec"], answer)]
            assert verdict is False, f"{q['title']}: the trap {answer!r} graded {verdict}"
    for empty in ("", "   ", q["units"]):
        verdict = graded[(q["spec"], empty)]
        assert verdict is None, f"{q['title']}: {empty!r} is not an answer, graded {verdict}"


def test_the_grader_reads_numbers_as_readers_write_them() -> None:
    """The parser behind every typed question: separators, units, exponents, and what is
    not one number (graded None: nothing revealed, nothing marked wrong)."""
    cases = [
        ("577", "577", True),
        ("577 tokens", "577", True),
        ("1536 tokens", "1,536", True),
        ("64 times", "64", True),
        ("151,296", "151,296", True),
        ("151 296", "151,296", True),
        ("1.5e3", "1,500", True),
        ("1.5 × 10^3", "1,500", True),
        ("1.5E+3 tokens", "1,500", True),
        ("150,528", "151,296", False),  # within 1%: the old grader passed it
        ("150000", "151,296", False),
        ("4,194,304", "4,198,400", False),
        ("786,432", "787,456", False),
        ("576", "577", False),
        ("780,000", "787,456", False),
        ("0.51", "0.52 ± 0.01", True),  # tolerance written in the [=] item
        ("0.505", "0.52 ± 0.01", False),
        ("3.3", "3.2 ± 5%", True),
        ("3.4", "3.2 ± 5%", False),
        ("", "577", None),
        ("tokens", "577", None),
        ("8 and 1", "8", None),  # two numbers: ask for one
    ]
    got = grade([(a, s) for a, s, _ in cases])
    wrong = [(a, s, want, v) for (a, s, want), v in zip(cases, got, strict=True) if v is not want]
    assert not wrong, wrong


def _trap_facts(item, chapter: int) -> dict:
    rec = Recorder(chapter)
    item(rec)
    return {k: v["value"] for k, v in rec.facts.items()}


def test_each_trap_fact_is_the_slip_it_names() -> None:
    """The facts the traps name, recomputed the slow way: each is the right answer's
    computation with the one slip its reason gives, counted on the real modules."""

    def right(chapter: str, name: str):
        return FACTS[chapter][name]["value"]

    def rounded_well(rounded: int, exact: int) -> bool:  # two significant figures, not exact
        digits = str(rounded)
        return (
            digits[2:] == "0" * (len(digits) - 2)
            and abs(rounded - exact) <= 10 ** (len(digits) - 2) / 2
            and rounded != exact
        )

    f = _trap_facts(ch02_solutions.quiz_traps, 2)
    assert f["grid_384"] ** 2 == right("ch02", "tokens_384")  # one side of the square grid
    assert f["seq_224"] == patchify(torch.zeros(1, 3, 224, 224), 16).shape[1] + 1
    assert f["px_pos_from_one"] == right("ch02", "px_pos") + 1

    f = _trap_facts(ch03_solutions.quiz_traps, 3)
    conv = torch.nn.Conv2d(3, preset("vit-l/16").dim, 16, stride=16)
    assert f["params_l_16_no_bias"] == conv.weight.numel()
    assert f["params_l_16_no_bias"] + conv.bias.numel() == right("ch03", "params_l_16")
    assert rounded_well(f["params_l_16_rounded"], right("ch03", "params_l_16"))

    f = _trap_facts(ch04_solutions.quiz_traps, 4)
    model = VisionTransformer(cfg=preset("vit-b/16", depth=0, num_classes=0))
    rows, cols = model.pos_embed.shape[-2:]
    assert f["pos_params_b16_no_cls"] == (rows - 1) * cols == right("ch04", "pos_params_b16") - cols
    assert rounded_well(f["pos_params_b16_rounded"], right("ch04", "pos_params_b16"))

    f = _trap_facts(ch06_solutions.quiz_traps, 6)
    large = preset("vit-l/16")
    attn = Attention(dim=large.dim, heads=large.heads)
    weights = sum(p.numel() for n, p in attn.named_parameters() if n.endswith("weight"))
    assert f["params_attn_l16_no_bias"] == weights
    assert f["params_attn_l16_no_proj"] == sum(p.numel() for p in attn.qkv.parameters())
    assert f["params_attn_l16_per_head"] == large.heads * right("ch06", "params_attn_l16")
    assert f["l16_mlp_per_head"] * large.heads == large.mlp_dim

    f = _trap_facts(ch10_solutions.quiz_traps, 10)
    window = 7
    assert f["win_ratio_224_side"] * window == right("ch10", "win_tokens_224")
    assert f["win_ratio_224_side"] == right("ch10", "win_ratio_224") * window
