"""Rehearse a job of a workflow here: ci.yml's ``check`` job unless told otherwise.

Reads the job from the workflow file (nothing here repeats its steps), clones HEAD into a
temporary folder as ``actions/checkout`` would (its ``fetch-depth``, 1 by default), and runs the
job's ``run:`` steps in order, each with bash as a runner does (``bash --noprofile --norc -eo
pipefail``), with the job's and the step's ``env:``, ``CI=true`` and a ``$GITHUB_STEP_SUMMARY``
file. It stops at the first step that fails, as the runner would, and prints each step's wall
time. The ``uses:`` steps stand in for what this machine has:

* ``actions/checkout``: the clone;
* ``actions/setup-python``: a fresh venv of this machine's python3.11 first on the PATH (no pip
  cache: the rehearsal is a cold run);
* ``actions/setup-node``: this machine's node, whose major version must be the one asked for;
* ``actions/cache``: a miss (nothing restored, nothing saved);
* ``actions/upload-artifact``: the path must hold files (``if-no-files-found: error``); its
  ``artifact-url`` output is the folder's ``file://`` address.

Two values of the job's environment are replaced, and the run says so: ``VITBOOK_CHROMIUM``
names this machine's Chromium (``/usr/bin/chromium``) instead of the runner's Chrome, and
``VITBOOK_TORCH_INDEX`` (PyTorch's CPU wheel index, unreachable from here) is left unset, so
torch comes from pip's configuration here, which holds the same CPU build.

The times go to ``.ci/rehearsal.json`` in the checkout (``--out``): the job, the commit, this
machine's CPU count and load, and each step's name, kind and seconds. The workflows' comments
give each job's expected time on a runner from them; ``tests/test_workflows.py`` checks that.

Usage: python .ci/rehearse.py [--workflow .github/workflows/ci.yml] [--job check] [--keep]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
#: what replaces the job's environment here, and why (printed with the times)
REPLACED = {
    "VITBOOK_CHROMIUM": (CHROMIUM, "this machine's Chromium stands in for the runner's Chrome"),
    "VITBOOK_TORCH_INDEX": (
        None,
        "PyTorch's CPU wheel index is unreachable from here: torch 2.13.0+cpu came from pip's "
        "own configuration (the same CPU build)",
    ),
}
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def cpu_seconds() -> float:
    """CPU time (user and system) of this process and every child that has ended: what a step
    costs whatever else the machine runs beside it (its wall time grows with the load)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def load_job(workflow: Path, job: str) -> dict:
    data = yaml.safe_load(workflow.read_text())
    if job not in data.get("jobs", {}):
        raise SystemExit(f"{workflow}: no job {job!r}")
    return data["jobs"][job]


def expand(value: str, outputs: dict[str, dict[str, str]]) -> str:
    """The ``${{ steps.ID.outputs.NAME }}`` expressions of an ``env:`` value; any other
    expression is an error (the rehearsal would not know its value)."""

    def one(m: re.Match) -> str:
        ref = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", m.group(1))
        if not ref:
            raise SystemExit(f"the rehearsal cannot evaluate ${{{{ {m.group(1)} }}}}")
        return outputs.get(ref.group(1), {}).get(ref.group(2), "")

    return EXPR.sub(one, str(value))


def step_name(step: dict) -> str:
    if "name" in step:
        return str(step["name"])
    if "uses" in step:
        return str(step["uses"]).split("@")[0]
    return str(step["run"]).strip().splitlines()[0]


def stand_in(step: dict, clone: Path, tmp: Path, env: dict[str, str]) -> tuple[str, dict]:
    """Do what this machine has for a ``uses:`` step; returns (what was done, its outputs)."""
    action = step["uses"].split("@")[0]
    args = step.get("with") or {}
    if action == "actions/checkout":
        depth = int(args.get("fetch-depth", 1))
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip
        cmd = ["git", "clone", "-q", "--no-checkout"]
        cmd += ["--depth", str(depth)] if depth else []
        subprocess.run([*cmd, f"file://{ROOT}", str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", head], check=True)
        return f"cloned {head[:7]} (fetch-depth {depth})", {}
    if action == "actions/setup-python":
        want = str(args.get("python-version", "3"))
        exe = shutil.which(f"python{want}") or sys.exit(f"no python{want} on this machine")
        venv = tmp / "python"
        subprocess.run([exe, "-m", "venv", str(venv)], check=True)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
        code = "import platform; print(platform.python_version())"
        version = subprocess.run([str(venv / "bin" / "python"), "-c", code], check=True,
                                 capture_output=True, text=True).stdout.strip()  # fmt: skip
        return f"a fresh venv of python {version}", {"python-version": version}
    if action == "actions/setup-node":
        want = str(args.get("node-version", ""))
        have = subprocess.run(["node", "--version"], check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip
        if want and not have.lstrip("v").startswith(want.split(".")[0] + "."):
            raise SystemExit(f"the job asks for node {want}; this machine has {have}")
        return f"this machine's node {have}", {}
    if action == "actions/cache":
        return "a cache miss (nothing restored)", {"cache-hit": "false"}
    if action == "actions/upload-artifact":
        path = clone / str(args["path"])
        files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
        if path.is_file():
            files = [path]
        if not files and args.get("if-no-files-found", "warn") == "error":
            raise SystemExit(f"upload-artifact: no files at {args['path']}")
        size = sum(p.stat().st_size for p in files)
        return (f"{len(files)} files, {size / 1e6:.1f} MB would be uploaded",
                {"artifact-url": path.as_uri(), "artifact-id": "0"})  # fmt: skip
    raise SystemExit(f"no stand-in for {step['uses']}: teach .ci/rehearse.py what it does")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workflow", type=Path, default=ROOT / ".github/workflows/ci.yml")
    parser.add_argument("--job", default="check")
    parser.add_argument("--out", type=Path, default=ROOT / ".ci" / "rehearsal.json")
    parser.add_argument("--keep", action="store_true", help="keep the clone")
    args = parser.parse_args(argv)
    job = load_job(args.workflow, args.job)
    tmp = Path(tempfile.mkdtemp(prefix="vitbook-rehearse-"))
    clone = tmp / "repo"
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "NOX_", "PIP_REQUIRE_VIRTUALENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    # nox's own venv (this session's) is not the runner's: leave it off the PATH
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if "/.nox/" not in p
    )
    summary = tmp / "step-summary.md"
    env |= {"VITBOOK_REHEARSAL": "1", "CI": "true", "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_WORKSPACE": str(clone), "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(tmp / "output"), "GITHUB_ENV": str(tmp / "env"),
            "RUNNER_TEMP": str(tmp)}  # fmt: skip
    notes = []
    job_env = {str(k): str(v) for k, v in (job.get("env") or {}).items()}
    for name, (_, why) in REPLACED.items():
        if name in job_env:
            notes.append(f"{name}: {why}")
    outputs: dict[str, dict[str, str]] = {}
    steps = []
    failed = None
    started = time.monotonic()
    for k, step in enumerate(job["steps"], 1):
        name = step_name(step)
        if "if" in step:
            raise SystemExit(f"step {name!r} has an `if:` the rehearsal does not evaluate")
        print(f"\n=== step {k}: {name}", flush=True)
        t0, cpu0 = time.monotonic(), cpu_seconds()
        if "uses" in step:
            what, out = stand_in(step, clone, tmp, env)
            kind = "uses"
            ok = True
            print(f"    stand-in: {what}", flush=True)
        else:
            what, out, kind = str(step["run"]), {}, "run"
            step_env = dict(env)
            for key, value in {**job_env, **(step.get("env") or {})}.items():
                step_env[str(key)] = expand(value, outputs)
            for key, (value, _) in REPLACED.items():
                step_env.pop(key, None)
                if value is not None and key in job_env:
                    step_env[key] = value
            script = tmp / f"step-{k}.sh"
            script.write_text(what)
            cwd = clone / str(step.get("working-directory", "."))
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=cwd, env=step_env, check=False,
            )  # fmt: skip
            ok = proc.returncode == 0
        seconds = round(time.monotonic() - t0, 1)
        cpu = round(cpu_seconds() - cpu0, 1)
        outputs[str(step.get("id", k))] = out
        steps.append({"name": name, "kind": kind, "seconds": seconds, "cpu_seconds": cpu,
                      "ok": ok})  # fmt: skip
        print(f"=== step {k}: {'ok' if ok else 'FAILED'} in {seconds:.1f} s "
              f"({cpu:.1f} s of CPU)", flush=True)  # fmt: skip
        if not ok:
            failed = name
            break
    total = round(time.monotonic() - started, 1)
    load = os.getloadavg()
    record = {
        "workflow": args.workflow.resolve().relative_to(ROOT).as_posix(),
        "job": args.job,
        "commit": subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "cpus": os.cpu_count(),
        "load_after": round(load[0], 1),
        "cold": True,
        "ok": failed is None,
        "steps": steps,
        "seconds": total,
        "cpu_seconds": round(sum(s["cpu_seconds"] for s in steps), 1),
        "notes": notes,
    }
    print(f"\n{'step':<64} {'kind':<5} {'wall s':>8} {'CPU s':>8}")
    for s in steps:
        mark = "" if s["ok"] else "  FAILED"
        print(f"{s['name'][:64]:<64} {s['kind']:<5} {s['seconds']:>8.1f} "
              f"{s['cpu_seconds']:>8.1f}{mark}")  # fmt: skip
    cpu = record["cpu_seconds"]
    print(
        f"{'total':<64} {'':<5} {total:>8.1f} {cpu:>8.1f}  ({total / 60:.1f} min wall, "
        f"{cpu / 60:.1f} min of CPU; load {record['load_after']} on {record['cpus']} CPUs)"
    )
    for note in notes:
        print(f"note: {note}")
    if summary.exists():
        print(f"\n$GITHUB_STEP_SUMMARY:\n{summary.read_text()}")
    if failed is None:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.out}")
    else:
        print(f"the job fails at step {failed!r}; {args.out} not written", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"the clone: {clone}")
    return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
