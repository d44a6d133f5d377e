"""The whole book from nothing: every figure and fact recomputed in a scratch folder, every
training run included, and compared with what is committed under the reproducibility rules of
``vitbook/engine/verify.py`` (``python -m vitbook verify``): deterministic items byte for byte
with the same printed facts, trained items within each fact's ``tol``, timings not compared.

No time limit is asserted: the build report prints the seconds of every item and training run,
and ``nox -s bench`` reports the cold-build time against its budget.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vitbook.engine import cache

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_cold_build_reproduces_the_committed_figures_and_facts(tmp_path: Path) -> None:
    jobs = max(1, min(4, os.cpu_count() or 1))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vitbook",
            "verify",
            "--jobs",
            str(jobs),
            "--keep",
            str(tmp_path / "figures"),
            "--share-runs",  # the later tests that need trained models find them cached
            str(cache.cache_dir().resolve()),
        ],  # fmt: skip
        cwd=ROOT,
        env=dict(os.environ, VITBOOK_FIGURES=str(ROOT / "figures")),
        capture_output=True,
        text=True,
        timeout=4 * 3600,  # a guard against a hang, not a budget
    )
    print(proc.stdout)  # the build report (seconds per item and run) and the verdicts
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    built = re.findall(r"^(ch\d\d/\S+)\s+(computed|redrawn|cached|failed)\s", proc.stdout, re.M)
    assert built and {status for _, status in built} == {"computed"}, "the build was not cold"
    verdict = re.search(
        r"^(\d+) items: \d+ identical, \d+ within the rules, 0 differ$", proc.stdout, re.M
    )
    assert verdict and int(verdict.group(1)) == len(built)
