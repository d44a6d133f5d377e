"""The book builds with the network switched off: nothing is fetched at build time.

Each build runs in a fresh network namespace (``unshare -n``) with only the loopback interface
up (Jupyter talks to the notebooks' kernel over 127.0.0.1; loopback reaches no other machine).
If namespaces are not permitted here the tests fail and say so: they never skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def offline() -> list[str]:
    prefix, why = sitebuild.offline_prefix()
    if prefix is None:
        pytest.fail(f"{why} to run the offline build tests", pytrace=False)
    return prefix


def run(
    prefix: list[str], *cmd: str, env: dict[str, str] | None = None, timeout: int = 3600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, *cmd],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_namespace_has_no_route_to_any_host(offline) -> None:
    """The sandbox is real: inside it, neither an IP address nor a host name can be reached."""
    probe = (
        "import socket\n"
        "for host in ('1.1.1.1', 'pypi.org'):\n"
        "    try:\n"
        "        socket.create_connection((host, 443), timeout=3)\n"
        "        print('REACHED', host)\n"
        "    except OSError as exc:\n"
        "        print('unreachable', host, exc.errno)\n"
    )
    proc = run(offline, sys.executable, "-c", probe)
    assert proc.returncode == 0, proc.stderr
    assert "REACHED" not in proc.stdout
    assert proc.stdout.count("unreachable") == 2, proc.stdout


@pytest.mark.slow
def test_figures_check_runs_offline(offline) -> None:
    proc = run(offline, sys.executable, "-m", "vitbook", "figures", "--check")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, (
        "`python -m vitbook figures --check` failed offline"
        + (" (figures are stale: build them first)" if "stale:" in out else "")
        + f":\n{out[-3000:]}"
    )


@pytest.mark.slow
def test_chapter_2_figures_compute_from_cold_offline(offline, tmp_path: Path) -> None:
    """A cold figure build (its data, model and drawing) fetches nothing."""
    env = {"VITBOOK_FIGURES": str(tmp_path / "figures"), "VITBOOK_CACHE": str(tmp_path / "cache")}
    proc = run(offline, sys.executable, "-m", "vitbook", "figures", "--chapter", "2", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "computed" in proc.stdout and len(list((tmp_path / "figures" / "ch02").glob("*.png")))


@pytest.mark.slow
def test_site_builds_strict_offline(offline, tmp_path: Path) -> None:
    """``mkdocs build --strict`` (macros, snippets, notebooks executed, MathJax copied) offline.

    The session's shared build is made offline when it can be (see ``sitebuild``): then it is
    the build checked here, and the notebooks are not executed a second time. With
    ``$VITBOOK_SITE`` (a site built elsewhere) this test builds its own."""
    if os.environ.get("VITBOOK_SITE") is None or sitebuild.BUILT_OFFLINE:
        site = sitebuild.built_site()  # fails the test with the build's output if it fails
        assert sitebuild.BUILT_OFFLINE.get("site"), "the session's site build was not offline"
    else:
        site = tmp_path / "site"
        proc = sitebuild.build_site(site, prefix=offline)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"the offline build failed:\n{out[-4000:]}"
    assert (site / "index.html").is_file()
    assert (site / "assets" / "mathjax" / "tex-mml-chtml.js").is_file()
