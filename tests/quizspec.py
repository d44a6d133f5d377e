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
    return FACTS[m.group(1)][m.group(2)]["text"]


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
                    "spec": FACT.sub(fact_text, m.group(1).strip()),
                    **fields,
                }
            )
    return out


def traps(q: dict) -> list[str]:
    """The wrong answers as a student would type them (the number before its reason)."""
    return [t.split(" (", 1)[0].strip() for t in q.get("traps", "").split("|") if t.strip()]
