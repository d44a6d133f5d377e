"""The whole book recomputed from its frozen runs, and a shard of those runs retrained.

* Every item (figures, facts, explorer data) is recomputed in a scratch folder with training
  switched off, so every run it needs must come from ``frozen/`` (a clean clone trains
  nothing), and compared with what is committed under the rules of
  ``vitbook/engine/verify.py`` (``python -m vitbook verify``): deterministic items byte for
  byte with the same printed facts, trained items within each fact's ``tol``, timings not
  compared.
* One shard of the frozen runs, chosen by the commit (``verify --runs --shard auto``), is
  retrained from nothing and compared with its records: the same bits on the portable paths,
  judged by the facts the book prints from them on the CPU's own. Consecutive commits rotate
  through the shards.

No time limit is asserted: the reports print the seconds of every item and run, and
``nox -s bench`` reports them against their budgets.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JOBS = str(max(1, min(4, os.cpu_count() or 1)))


def vitbook(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "vitbook", *args],
        cwd=ROOT,
        env=dict(os.environ, VITBOOK_FIGURES=str(ROOT / "figures")),
        capture_output=True,
        text=True,
        timeout=4 * 3600,  # a guard against a hang, not a budget
    )
    print(proc.stdout)  # the reports: seconds per item and run, and the verdicts
    return proc


@pytest.mark.slow
def test_every_item_recomputed_from_the_frozen_runs_reproduces_the_committed_one() -> None:
    proc = vitbook("verify", "--jobs", JOBS)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    built = re.findall(r"^(ch\d\d/\S+)\s+(computed|redrawn|cached|failed)\s", proc.stdout, re.M)
    assert built and {status for _, status in built} == {"computed"}, "not computed afresh"
    assert not re.search(r"^\s+run \S+\s+trained", proc.stdout, re.M), "a run was trained"
    verdict = re.search(
        r"^(\d+) items: \d+ identical, \d+ within the rules, 0 differ$", proc.stdout, re.M
    )
    assert verdict and int(verdict.group(1)) == len(built)


@pytest.mark.slow
def test_a_rotating_shard_of_frozen_runs_retrains_to_what_is_frozen() -> None:
    proc = vitbook("verify", "--runs", "--shard", "auto", "--jobs", JOBS)
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    shard = re.search(r"^shard (\d+) of (\d+): (\d+) of (\d+) runs", proc.stdout, re.M)
    assert shard, proc.stdout[-2000:]
    verdict = re.search(r"^(\d+) runs: \d+ identical, \d+ within the printed facts, 0 differ$",
                        proc.stdout, re.M)  # fmt: skip
    assert verdict and verdict.group(1) == shard.group(3)
