"""The typed quiz questions as the chapters write them (read by tests/test_quiz_typed.py and
tests/browser/test_quizzes.py); the format is described in tests/test_quiz_typed.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
QUIZ_JS = DOCS / "javascripts" / "quiz.js"
FACTS = json.loads((ROOT / "figures" / "facts.json").read_text(encoding="utf-8"))
CHAPTERS = sorted(DOCS.glob("[01][0-9]-*.md"))

TYPED = re.compile(r"^    - \[=\] (.*)$", re.M)
FACT = re.compile(r"\{\{\s*(ch\d\d)\.(\w+)\s*\}\}")
# the [=] item: one fact, optionally "± tolerance" (a number or a fact, absolute or in %)
SPEC = re.compile(r"^\{\{\s*ch\d\d\.\w+\s*\}\}(?:\s*±\s*(?:\{\{\s*ch\d\d\.\w+\s*\}\}|[\d.]+)%?)?$")
COMMENT = re.compile(r"\A\s*\{#(.*?)#\}", re.S)
FIELD = re.compile(r"^\s*(grading|units|traps):", re.M)


def fact_text(m: re.Match) -> str:
    try:
        return FACTS[m.group(1)][m.group(2)]["text"]
    except KeyError:
        raise KeyError(f"{m.group(0)} is not a fact in figures/facts.json") from None


def resolve(text: str) -> str:
    """``text`` with each fact macro replaced by the fact's text, as the page prints it."""
    return FACT.sub(fact_text, text)


def typed_questions() -> list[dict]:
    """Every typed question of the book: chapter, title, spec (as the page prints it), the
    raw [=] item and its grading comment's fields."""
    out = []
    for path in CHAPTERS:
        section = path.read_text(encoding="utf-8").split("## Check yourself", 1)[1]
        section = section.split("\n## ", 1)[0]
        for block in re.split(r"^(?=\?\?\? question)", section, flags=re.M)[1:]:
            m = TYPED.search(block)
            if not m:
                continue
            comment = COMMENT.match(block[m.end() :])
            fields = {}
            if comment:
                body = comment.group(1)
                marks = list(FIELD.finditer(body))
                for a, b in zip(marks, [*marks[1:], None], strict=True):
                    text = body[a.end() : b.start() if b else len(body)]
                    fields[a.group(1)] = " ".join(text.split())
            out.append(
                {
                    "chapter": path.stem,
                    "title": block.split("\n", 1)[0].split('"', 1)[1].rstrip('"'),
                    "item": m.group(1).strip(),
                    "spec": resolve(m.group(1).strip()),
                    **fields,
                }
            )
    return out


def written_traps(q: dict) -> list[tuple[str, str]]:
    """The ``traps:`` field as the chapter writes it: (value, reason) for each trap, the value
    a fact macro (``{{ ch02.tokens_384 }}``) or a plain number, the reason in parentheses."""
    out = []
    for t in q.get("traps", "").split("|"):
        if t.strip():
            value, _, reason = t.strip().partition(" (")
            out.append((value.strip(), reason.removesuffix(")").strip()))
    return out


def traps(q: dict) -> list[str]:
    """The wrong answers as a student would type them: each trap's value, a fact resolved to
    its text from figures/facts.json as the spec is. A fact the trap or its reason names that
    is not in facts.json raises KeyError."""
    out = []
    for value, reason in written_traps(q):
        resolve(reason)  # a fact named in the reason must exist too
        out.append(resolve(value))
    return out
