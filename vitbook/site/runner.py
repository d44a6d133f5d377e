"""The workflows on a GitHub runner: how long each job is expected to take, and the rehearsal.

Each job of ``.github/workflows/*.yml`` says its expected time on a 2-core runner in the comment
right above its key (``# Expected on a 2-core runner: about N min ...`` or ``under 1 min``).
The ``check`` job of ``ci.yml`` (what a pull request waits for) is rehearsed here by ``nox -s
rehearse`` (``.ci/rehearse.py``), which writes each step's wall and CPU seconds to
``.ci/rehearsal.json``; ``docs/building.md`` prints both, and ``tests/test_workflows.py`` checks
that every job has its comment and that the check job's is at least what the rehearsal
measured and at most ten minutes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ESTIMATE = re.compile(r"# Expected on a 2-core runner: (?:about (\d+) min|under 1 min)")


def job_estimates(path: Path) -> dict[str, int | None]:
    """Each job of a workflow with its expected minutes from the comment above its key (0 for
    "under 1 min", None where there is no such comment)."""
    lines = Path(path).read_text().splitlines()
    start = lines.index("jobs:")
    found: dict[str, int | None] = {}
    for k in range(start + 1, len(lines)):
        m = re.match(r"^  ([\w-]+):\s*$", lines[k])
        if not m:
            continue
        j, comment = k - 1, []
        while j > start and lines[j].startswith("  #"):
            comment.insert(0, lines[j].strip().lstrip("#").strip())
            j -= 1
        hit = ESTIMATE.search("# " + " ".join(comment))
        found[m.group(1)] = None if not hit else int(hit.group(1) or 0)
    return found


def rehearsal(root: Path) -> dict[str, Any]:
    """``.ci/rehearsal.json``: the last rehearsal of ci.yml's check job."""
    return json.loads((Path(root) / ".ci" / "rehearsal.json").read_text())


def estimate_minutes(record: dict[str, Any]) -> float:
    """A runner's minutes for a rehearsed job's computing, from its steps: each step's CPU
    seconds (what it costs whatever else this shared machine runs; as if on one core, so an
    upper bound for a 2-core runner), or its wall seconds where those are fewer (a step that
    kept both cores busy). What a runner waits for that this machine does not (downloads from
    PyPI, PyTorch's index and npm, the artifact's upload) is not in it: the workflow's comment
    adds a margin for it."""
    return sum(min(s["seconds"], s.get("cpu_seconds", s["seconds"])) for s in record["steps"]) / 60
