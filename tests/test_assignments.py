"""The graded assignments (course/) and the syllabus's compute.

Slow tier: every assignment is built with ``otter assign``; its reference solution, run through
its autograder, gets full marks, and its empty student notebook gets zero; the student notebook
carries neither the solution nor a hidden test. Quick tier: the master notebooks' structure
(every question has a hidden test), the course numbers recomputed from records, and the
assignment table matching the folders.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "course"))
import grade  # noqa: E402

from vitbook.site import course  # noqa: E402

NAMES = grade.names()


def cells(name: str) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in grade.master(name).cells]


def questions(name: str) -> dict[str, list[str]]:
    """{question: [test cell sources]} from the master notebook's otter blocks."""
    out: dict[str, list[str]] = {}
    q, in_tests = None, False
    for kind, src in cells(name):
        if kind == "raw" and "BEGIN QUESTION" in src:
            q = re.search(r"name:\s*(\w+)", src).group(1)
            out[q] = []
        elif kind == "raw" and "BEGIN TESTS" in src:
            in_tests = True
        elif kind == "raw" and "END TESTS" in src:
            in_tests = False
        elif in_tests and kind == "code":
            out[q].append(src)
    return out


def test_five_assignments_each_listed_on_the_pages():
    assert len(NAMES) >= 5
    assert sorted(folder for folder, _, _ in course.ASSIGNMENTS.values()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_question_has_a_visible_and_a_hidden_test(name):
    qs = questions(name)
    assert len(qs) >= 3, name
    for q, tests in qs.items():
        hidden = [t for t in tests if re.search(r"hidden:\s*true", t)]
        assert hidden, f"{name} {q} has no hidden test"
        assert len(hidden) < len(tests), f"{name} {q} has no visible test"


@pytest.mark.parametrize("name", NAMES)
def test_solutions_are_marked_and_kept_out_of_the_site(name):
    src = "\n".join(s for k, s in cells(name) if k == "code")
    assert src.count("# BEGIN SOLUTION") == src.count("# END SOLUTION") >= 3
    assert not (ROOT / "docs" / "course").exists()
    assert not list((ROOT / "docs").rglob(f"{name}*"))


def test_course_seconds_are_the_records(tmp_path):
    """lo, hi and total come from the records' seconds; the lab's range only from its recipe."""
    for run in course.RUNS.values():
        folder = tmp_path / run
        folder.mkdir()
        for i, (init, s) in enumerate([("book", 10.0), ("pytorch", 30.0), ("pytorch", 200.0)]):
            rec = {"args": {"init": init, "seed": i}, "seconds": s, "computed_on": {"cpu": "X"}}
            (folder / f"seed={i}.json").write_text(json.dumps(rec))
    facts = course.compute(tmp_path)
    assert facts["digits_lo"]["value"] == 10.0 and facts["digits_hi"]["value"] == 200.0
    assert facts["digits_total"] == {"value": 240.0, "text": "4 min"}
    assert facts["digits_lo"]["text"] == "10 s"
    assert facts["lab_lo"]["value"] == 30.0 and facts["digits_runs"]["value"] == 3
    assert facts["cpus"]["text"] == "X"
    for p in (tmp_path / course.RUNS["pretrain"]).glob("*.json"):
        p.unlink()
    with pytest.raises(ValueError, match="no frozen records"):
        course.compute(tmp_path)


def test_course_seconds_of_the_book():
    facts = course.compute(ROOT / "frozen")
    digits = course.run_seconds(ROOT / "frozen", course.RUNS["digits"])
    assert facts["digits_runs"]["value"] == len(digits) >= 10
    assert facts["digits_lo"]["value"] == min(digits) > 0
    assert facts["lab_hi"]["value"] <= facts["digits_hi"]["value"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every assignment built, and its solution and empty notebook graded by its autograder."""
    dist = tmp_path_factory.mktemp("dist")
    subs = tmp_path_factory.mktemp("submissions")
    for name in NAMES:
        out = grade.build(name, dist)
        (subs / f"{name}-solution.ipynb").write_bytes(
            (out / "autograder" / f"{name}.ipynb").read_bytes()
        )
        (subs / f"{name}-empty.ipynb").write_bytes((out / "student" / f"{name}.ipynb").read_bytes())
    # a student who answered only Q1 of Assignment 1: that answer from the solution
    name = NAMES[0]
    student = json.loads((dist / name / "student" / f"{name}.ipynb").read_text())
    solved = json.loads((dist / name / "autograder" / f"{name}.ipynb").read_text())
    first = next(c for c in solved["cells"] if "def my_patchify" in "".join(c["source"]))
    for cell in student["cells"]:
        if "def my_patchify" in "".join(cell["source"]):
            cell["source"] = first["source"]
    (subs / f"{name}-partial.ipynb").write_text(json.dumps(student))
    rows = grade.grade_folder(subs, subs / "scores.csv", dist)
    return dist, {r["file"]: r for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_reference_solution_gets_full_marks(graded, name):
    row = graded[1][f"{name}-solution.ipynb"]
    assert row["possible"] > 0 and row["total"] == row["possible"], row


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_empty_student_notebook_scores_zero(graded, name):
    row = graded[1][f"{name}-empty.ipynb"]
    assert row["possible"] > 0 and row["total"] == 0, row


@pytest.mark.slow
def test_one_answer_earns_its_question_only(graded):
    row = graded[1][f"{NAMES[0]}-partial.ipynb"]
    assert row["q1"] > 0 and row["total"] == row["q1"] < row["possible"], row


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_hides_solutions_and_hidden_tests(graded, name):
    student = (graded[0] / name / "student" / f"{name}.ipynb").read_text()
    for q, tests in questions(name).items():
        for t in tests:
            body = t.split("# END TEST CONFIG")[-1].strip().splitlines()[-1]
            if re.search(r"hidden:\s*true", t):
                assert json.dumps(body)[1:-1] not in student, (name, q, body)
    solution = [s for k, s in cells(name) if k == "code" and "# BEGIN SOLUTION" in s]
    for s in solution:
        inner = s.split("# BEGIN SOLUTION")[1].split("# END SOLUTION")[0].strip().splitlines()
        assert json.dumps(inner[-1].strip())[1:-1] not in student, (name, inner[-1])
