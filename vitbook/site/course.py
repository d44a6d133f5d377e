"""What the syllabus and the instructors' page print about the course: computed, not typed.

``{{ course.digits_lo }}`` and the other names below are read from the frozen runs' records
(``frozen/<run>/<args>.json``, each with the seconds it took on the machine that made it,
named in its ``computed_on``), so that the compute a week or an assignment needs is the
book's own measurement. ``{{ deck(2) }}`` links Chapter 2's slide deck and its PDF (built by
:mod:`vitbook.site.slides` into ``slides/chNN/`` and ``slides/chNN.pdf``), and
``{{ assignment(1) }}`` names an assignment of ``course/assignments/`` and links its source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The frozen runs a course week or assignment may retrain, by the short name the pages use.
RUNS = {
    "digits": "vitbook.experiments.digits.digits_run",  # the lab and Assignment 4
    "pretrain": "vitbook.experiments.pretrain.pretrain",  # the model Assignment 5 reads
    "transfer": "vitbook.experiments.transfer.transfer_run",  # Chapter 9's fine-tuning runs
}


def run_seconds(frozen: Path, run: str, **args: Any) -> list[float]:
    """The measured seconds of every frozen record of ``run`` whose arguments include ``args``."""
    out = []
    for p in sorted((frozen / run).glob("*.json")):
        rec = json.loads(p.read_text())
        if all(rec.get("args", {}).get(k) == v for k, v in args.items()) and "seconds" in rec:
            out.append(float(rec["seconds"]))
    return out


def _s(x: float) -> str:
    """Seconds as the pages print them: whole seconds, or minutes past 120 s."""
    return f"{x:.0f} s" if x < 120 else f"{x / 60:.0f} min"


def compute(frozen: Path) -> dict[str, dict[str, Any]]:
    """The course's numbers: ``{name: {"value": ..., "text": ...}}``.

    For each run kind: how many records (``<kind>_runs``), the fastest and slowest
    (``<kind>_lo``, ``<kind>_hi``) and all of them together (``<kind>_total``). Assignment 4's
    optional retraining is one digits run; the study it reads, retrained in full, is every
    digits record (two recipes, all seeds)."""
    facts: dict[str, dict[str, Any]] = {}
    cpus: set[str] = set()
    for kind, run in RUNS.items():
        secs = run_seconds(frozen, run)
        if not secs:
            raise ValueError(f"no frozen records of {run} in {frozen}: the syllabus needs them")
        facts[f"{kind}_runs"] = {"value": len(secs), "text": f"{len(secs):,}"}
        for name, v in (("lo", min(secs)), ("hi", max(secs)), ("total", sum(secs))):
            facts[f"{kind}_{name}"] = {"value": v, "text": _s(v)}
        for p in (frozen / run).glob("*.json"):
            cpus.add(json.loads(p.read_text()).get("computed_on", {}).get("cpu", "unknown"))
    digits = run_seconds(frozen, RUNS["digits"], init="pytorch")  # the lab's recipe
    facts["lab_lo"] = {"value": min(digits), "text": _s(min(digits))}
    facts["lab_hi"] = {"value": max(digits), "text": _s(max(digits))}
    facts["cpus"] = {"value": sorted(cpus), "text": ", ".join(sorted(cpus))}
    return facts


#: The graded assignments: number -> (folder under course/assignments/, title, chapters).
ASSIGNMENTS = {
    1: ("a1-patch-embedding", "Patch embedding by hand", (2, 3)),
    2: ("a2-attention", "Attention from scratch, with its tests", (5, 6)),
    3: ("a3-position-interpolation", "Position embeddings at a new resolution", (4, 9)),
    4: ("a4-recipe-study", "A training-recipe study across seeds", (9,)),
    5: ("a5-attention-maps", "Attention maps against a null baseline", (10,)),
}


def define(env: Any, chapter_cls: type) -> None:
    """Register ``course``, ``deck(n)`` and ``assignment(n)`` with mkdocs-macros."""
    project = Path(env.project_dir)
    try:
        facts = compute(project / "frozen")
    except ValueError:  # a project without the book's runs (a test's scratch site): a page
        facts = {}  # that prints a course number then fails with "unknown fact course.<name>"
    env.variables["course"] = chapter_cls("course", facts)

    def root() -> str:
        """The site root, relative to the page being rendered (``syllabus/`` -> ``../``)."""
        return "../" * env.page.url.count("/")

    @env.macro
    def deck(n: int) -> str:
        """Chapter n's slide deck and its PDF, as two links (raw HTML: the decks are written
        after MkDocs has checked the pages' Markdown links)."""
        base = f"{root()}slides/ch{n:02d}"
        return f'<a href="{base}/">Deck {n}</a> (<a href="{base}.pdf">PDF</a>)'

    @env.macro
    def assignment(n: int, link: bool = True) -> str:
        """The words "Assignment n: title", linked to its folder at this copy's ref."""
        folder, title, _ = ASSIGNMENTS[n]
        if not link:
            return f"Assignment {n}: {title}"
        ed = env.variables["edition"]
        url = f"{ed['repo']}/tree/{ed['ref']}/course/assignments/{folder}"
        return f"[Assignment {n}: {title}]({url})"
