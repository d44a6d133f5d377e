"""The graded quizzes' sources: every chapter's "Check yourself" questions carry options with
exactly one correct answer, and an explanation (docs/javascripts/quiz.js reads this format)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
CHAPTERS = sorted(DOCS.glob("[01][0-9]-*.md"))
OPTION = re.compile(r"^    - \[( |x|X|=)\] (\S.*)$")


def questions(path: Path) -> list[tuple[str, list[tuple[str, str]], str]]:
    """(title, [(mark, text)], explanation) for each question of the chapter's quiz."""
    text = path.read_text(encoding="utf-8")
    section = text.split("## Check yourself", 1)[1].split("\n## ", 1)[0]
    section = re.sub(r"\{#.*?#\}", "", section, flags=re.S)  # grading notes (test_quiz_typed)
    out = []
    for block in re.split(r"^(?=\?\?\? question)", section, flags=re.M)[1:]:
        head, *body = block.rstrip().split("\n")
        options = [OPTION.match(line).groups() for line in body if OPTION.match(line)]
        explanation = "\n".join(
            line for line in body if not OPTION.match(line) and line.startswith("    ")
        ).strip()
        out.append((head, options, explanation))
    return out


def test_every_chapter_has_a_quiz() -> None:
    assert len(CHAPTERS) == 11
    for path in CHAPTERS:
        assert questions(path), f"{path.name} has no questions"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_question_has_one_correct_answer_and_an_explanation(path: Path) -> None:
    for head, options, explanation in questions(path):
        marks = [m for m, _ in options]
        assert options, f"{path.name}: {head}: no options"
        right = [m for m in marks if m != " "]
        assert len(right) == 1, f"{path.name}: {head}: {len(right)} correct answers"
        if right[0] == "=":
            assert len(options) == 1, f"{path.name}: {head}: a typed answer stands alone"
        else:
            assert len(options) >= 2, f"{path.name}: {head}: one option is no choice"
            texts = [t for _, t in options]
            assert len(set(texts)) == len(texts), f"{path.name}: {head}: repeated option"
        assert len(explanation) > 40, f"{path.name}: {head}: no explanation"


def test_the_options_come_before_the_explanation() -> None:
    """quiz.js treats everything after the list as the explanation it reveals."""
    for path in CHAPTERS:
        section = path.read_text(encoding="utf-8").split("## Check yourself", 1)[1]
        for block in re.split(r"^(?=\?\?\? question)", section, flags=re.M)[1:]:
            lines = block.split("\n")
            assert OPTION.match(lines[1]), f"{path.name}: {lines[0]}: options must come first"


def test_search_entries_drop_the_answer_markers() -> None:
    """The search plugin indexes the Markdown's text, "[x] the right one" included; the
    post-build cleaning (vitbook.site.math.clean_search_text) removes the markers, so a search
    result does not give the answer away, and leaves other brackets alone."""
    from vitbook.site.math import clean_search_text

    text = "<ul><li>[ ] wrong</li><li>[x] right</li><li>[X] also</li></ul><p>[=] 577</p>"
    clean = clean_search_text(text + " weights[x] and [ ] kept in code")
    assert "[x]" not in clean.split("weights")[0] and "[ ]" not in clean.split("weights")[0]
    assert "[=]" not in clean and "[X]" not in clean
    assert "<li>right</li>" in clean and "<p>577</p>" in clean
    assert "weights[x]" in clean
