"""``python -m vitbook``: build the book's figures and facts, check them, list them.

Examples::

    python -m vitbook list
    python -m vitbook figures                 # everything that is stale
    python -m vitbook figures --chapter 2     # one chapter
    python -m vitbook figures --only ch02/patch-grids --force
    python -m vitbook figures --check         # exit 1 if anything is stale; computes nothing
    python -m vitbook runs                    # the frozen training runs: current or stale
    python -m vitbook verify --jobs 2         # every item recomputed from the frozen runs, in a
                                              # temporary folder, compared with figures/
    python -m vitbook verify --runs --shard 3/12 --jobs 2
                                              # retrain some frozen runs from nothing and compare
    python -m vitbook migrate                 # frozen records of format 1 into today's format

Every command but ``list`` first checks the frozen store (every file against its digest) and
the installed libraries against those the records and the manifest name, and stops with one
message where either is wrong (see :func:`preflight`).

Any folder of the project works as the starting point (``docs/``, say): the figures, frozen
runs and cache are found from the ``vitbook`` package (see :mod:`vitbook.engine.paths`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import cache, runtime, stamp
from .build import Outcome, build, read_manifest, stale
from .paths import figures_dir, frozen_dir, project_root
from .registry import discover

#: Each worker's share of a rotating shard of ``verify --runs`` (the seconds the runs took when
#: frozen): with two workers, a shard retrains about this long (reported, never asserted).
SHARD_BUDGET_S = 150
#: What retraining every frozen run may take with two workers on a two-core machine (the
#: experiments' budget: ``verify --runs`` reports against it, nothing asserts it).
VERIFY_BUDGET_S = 3600


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _shard(text: str) -> tuple[int, int] | str:
    if text == "auto":
        return text
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected K/N (say 3/12) or auto, got {text!r}") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"shard {k}/{n}: K must be between 1 and N")
    return k, n


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vitbook", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("figures", help="compute and draw figures and facts that are out of date")
    f.add_argument(
        "--chapter", type=int, action="append", metavar="N", help="only chapter N (repeatable)"
    )
    f.add_argument(
        "--only",
        action="append",
        metavar="ID",
        help="only this figure, as chNN/id or id (repeatable)",
    )
    f.add_argument("--force", action="store_true", help="recompute even if up to date")
    f.add_argument(
        "--jobs", type=_positive_int, default=1, metavar="N", help="worker processes (default 1)"
    )
    f.add_argument(
        "--check", action="store_true", help="compute nothing; exit 1 if anything is out of date"
    )
    ls = sub.add_parser("list", help="list every figure and computation")
    ls.add_argument("--chapter", type=int, action="append", metavar="N")
    sub.add_parser("runs", help="list the frozen training runs: seconds, CPU, up to date or not")
    v = sub.add_parser(
        "verify",
        help="recompute items from the frozen runs (or retrain runs) and compare",
        description="Without --runs: recompute the selected items in a temporary folder from "
        "the frozen runs (training nothing) and compare them with the committed figures under "
        "the rules of vitbook/engine/verify.py. With --runs: retrain frozen runs from nothing "
        "(a shard of them, or all) and compare each with its frozen record. Exit 1 if "
        "anything differs.",
    )
    v.add_argument("--chapter", type=int, action="append", metavar="N")
    v.add_argument("--only", action="append", metavar="ID")
    v.add_argument(
        "--jobs", type=_positive_int, default=1, metavar="N", help="worker processes (default 1)"
    )
    v.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="the figures to compare with (default: figures/ or $VITBOOK_FIGURES)",
    )
    v.add_argument(
        "--fresh",
        type=Path,
        metavar="DIR",
        help="compare this finished build instead of building (its manifest.json)",
    )
    v.add_argument("--keep", type=Path, metavar="DIR", help="build into DIR and keep it")
    v.add_argument("--runs", action="store_true", help="retrain frozen runs and compare them")
    v.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="with --runs: only shard K of N (or 'auto': the shard this commit rotates to)",
    )
    v.add_argument(
        "--budget",
        type=float,
        default=SHARD_BUDGET_S,
        metavar="S",
        help=f"with --shard auto: seconds per worker in a shard (default {SHARD_BUDGET_S})",
    )
    v.add_argument(
        "--record-seconds",
        action="store_true",
        help="with --runs: write each identical run's new seconds into its frozen record "
        "(after a retraining on a quiet machine: the shard plan reads them)",
    )
    v.add_argument(
        "--new-environment",
        action="store_true",
        help="verify under libraries other than those recorded (a deliberate upgrade)",
    )
    m = sub.add_parser("migrate", help="rewrite frozen records of format 1 into today's format")
    m.add_argument(
        "--record-environment",
        action="store_true",
        help="record the installed libraries as every run's and item's provenance (after "
        "`verify --runs --new-environment` passed)",
    )
    return p


def select(chapters: list[int] | None, only: list[str] | None) -> list[str]:
    """The registry keys matching ``--chapter`` and ``--only``; UsageError if none do."""
    from .registry import chapter_modules

    valid_chapters = sorted(set(chapter_modules().values()))
    if chapters:
        unknown = [c for c in chapters if c not in valid_chapters]
        if unknown:
            raise UsageError(
                f"unknown chapter {unknown[0]}; chapters with figures: "
                + ", ".join(map(str, valid_chapters))
            )
    registry = discover(chapters or None)
    keys = list(registry)
    if only:
        chosen = []
        for name in only:
            matches = [k for k in keys if k == name or k.split("/", 1)[1] == name]
            if not matches:
                raise UsageError(f"unknown figure {name!r}; valid ids:\n  " + "\n  ".join(keys))
            chosen += [m for m in matches if m not in chosen]
        keys = chosen
    return keys


def report(outcomes: list[Outcome], seconds: float) -> str:
    from collections import Counter

    width = max([len(o.key) for o in outcomes] + [6])
    lines = [f"{'figure':<{width}}  {'status':<8}  {'seconds':>8}", "-" * (width + 20)]
    for o in outcomes:
        lines.append(f"{o.key:<{width}}  {o.status:<8}  {o.seconds:8.2f}")
        for run, (secs, calls, trained) in sorted(o.runs.items()):
            status = "trained" if trained else "frozen"
            lines.append(
                f"{'  run ' + run:<{width}}  {status:<8}  {secs:8.2f}  "
                f"({trained} of {calls} call{'s' if calls > 1 else ''} trained)"
            )
    counts = Counter(o.status for o in outcomes)
    summary = ", ".join(
        f"{counts[s]} {s}" for s in ("computed", "redrawn", "cached", "failed") if counts[s]
    )
    lines.append("-" * (width + 20))
    lines.append(f"{len(outcomes)} items: {summary} in {seconds:.1f} s")
    if counts["computed"] + counts["redrawn"] == 0 and not counts["failed"]:
        lines.append("nothing to compute: every figure is up to date")
    return "\n".join(lines)


def whole_book(args: argparse.Namespace) -> bool:
    return not getattr(args, "chapter", None) and not getattr(args, "only", None)


def main(argv: list[str] | None = None) -> int:
    # before torch loads: the book computes on the CPU with runtime.THREADS threads per process
    from .runtime import pin_environment

    pin_environment()
    args = parser().parse_args(argv)
    if args.command == "figures" and whole_book(args) and not args.force and stamp.fresh():
        n = len(read_manifest(figures_dir()))
        print(f"{n} of {n} items up to date in {figures_dir()}/ (no file changed since the check)")
        return 0
    if args.command == "migrate":
        return migrate(args)
    problem = preflight(args) if args.command != "list" else None
    if problem:
        print(problem, file=sys.stderr)
        return 1
    if args.command == "runs":
        return list_runs()
    if args.command == "verify" and args.runs:
        return verify_runs(args)
    try:
        keys = select(getattr(args, "chapter", None), getattr(args, "only", None))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    registry = discover({int(k[2:4]) for k in keys})
    if args.command == "list":
        for key in keys:
            item = registry[key]
            kind = "figure" if item.is_figure else "facts"
            print(f"{key:<40} {kind:<7} {item.module}")
        return 0
    if args.command == "verify":
        return verify(keys, args)
    if args.check:
        out_of_date = stale(keys)
        for key, reason in out_of_date.items():
            print(f"stale: {key} ({reason})")
        print(f"{len(keys) - len(out_of_date)} of {len(keys)} items up to date in {figures_dir()}/")
        if not out_of_date and whole_book(args):
            stamp.record()
        return 1 if out_of_date else 0

    prune = whole_book(args)
    status = run_build(keys, force=args.force, jobs=args.jobs, prune=prune)
    if status == 0 and prune and not stale(keys):
        stamp.record()
    return status


def preflight(args: argparse.Namespace) -> str | None:
    """What stops a command before it builds, checks or trains anything (one message), or
    None: a damaged file in the frozen store (:func:`vitbook.engine.frozen.check_store`), or
    installed libraries other than those the frozen records and the manifest name (their
    provenance; ``verify --new-environment`` is the deliberate upgrade's way past it)."""
    from . import frozen
    from .deps import environment_mismatch

    damaged = frozen.check_store()
    if damaged:
        return "error: the frozen store is damaged:\n  " + "\n  ".join(damaged)
    if getattr(args, "new_environment", False):
        return None
    recorded: dict[str, set[str]] = {}
    envs = [r.get("environment") for r in frozen_records()]
    envs += [e.get("environment") for e in read_manifest(figures_dir()).values()]
    for env in filter(None, envs):
        for k, v in env.items():
            recorded.setdefault(k, set()).add(v)
    return environment_mismatch(recorded, "the frozen runs and figures/manifest.json")


def migrate(args: argparse.Namespace) -> int:
    """``python -m vitbook migrate``: see :func:`vitbook.engine.cache.migrate`; with
    ``--record-environment`` the manifest's entries record the installed libraries too."""
    lines = cache.migrate(record_environment=args.record_environment)
    if args.record_environment:
        from .deps import environment

        manifest = read_manifest(figures_dir())
        for entry in manifest.values():
            entry["environment"] = environment()
        text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
        cache.atomic_write(figures_dir() / "manifest.json", text.encode())
    print("\n".join(lines))
    return 1 if len(lines) > 1 else 0


def run_build(keys: list[str], *, force: bool, jobs: int, prune: bool) -> int:
    """Build ``keys`` with a progress bar, print the report; 1 if anything failed."""
    from tqdm import tqdm

    stamp.forget()
    start = time.perf_counter()
    with tqdm(total=len(keys), unit="fig", file=sys.stderr, dynamic_ncols=True) as bar:

        def done(o: Outcome) -> None:
            bar.set_postfix_str(f"{o.key} {o.status}")
            bar.update()

        outcomes = build(keys, force=force, jobs=jobs, prune=prune, on_done=done)
    print(report(outcomes, time.perf_counter() - start))
    failed = [o for o in outcomes if o.status == "failed"]
    for o in failed:
        print(f"\n{o.key} failed:\n{o.error}", file=sys.stderr)
    return 1 if failed else 0


def verify(keys: list[str], args: argparse.Namespace) -> int:
    """``python -m vitbook verify``: every item recomputed from the frozen runs, compared with
    the committed figures. Training is switched off: a run that is not frozen fails its item."""
    from . import verify as rules

    against = args.against or figures_dir()
    committed = read_manifest(against)
    if not committed:
        print(f"error: no manifest.json in {against}/", file=sys.stderr)
        return 2
    status = 0
    with tempfile.TemporaryDirectory(prefix="vitbook-verify-") as tmp:
        fresh_dir = args.fresh
        if fresh_dir is None:
            fresh_dir = args.keep or Path(tmp) / "figures"
            if fresh_dir.exists() and any(fresh_dir.iterdir()):
                print(f"error: {fresh_dir}/ is not empty: a fresh build needs an empty folder")
                return 2
            os.environ["VITBOOK_FIGURES"] = str(fresh_dir)
            os.environ["VITBOOK_CACHE"] = str(Path(tmp) / "cache")  # no cached result
            os.environ["VITBOOK_NO_TRAINING"] = "1"  # every run must come from frozen/
            start = time.perf_counter()
            status = run_build(keys, force=True, jobs=args.jobs, prune=False)
            seconds = time.perf_counter() - start
            print(
                f"recomputed {len(keys)} items from the frozen runs in {seconds:.0f} s, "
                f"{args.jobs} job(s) x {runtime.THREADS} thread(s) on {os.cpu_count()} CPUs"
            )
        fresh = read_manifest(fresh_dir)
        wanted = set(keys)
        verdicts = rules.compare(
            {k: e for k, e in committed.items() if k in wanted},
            {k: e for k, e in fresh.items() if k in wanted},
            read=lambda name: ((against / name).read_bytes(), (fresh_dir / name).read_bytes()),
        )
        print(f"\nverify: {fresh_dir}/ against {against}/ (rules: vitbook/engine/verify.py)")
        print(rules.report(verdicts))
        return 1 if status or any(v.status == "differs" for v in verdicts) else 0


# --- frozen runs ----------------------------------------------------------------------------


def frozen_records() -> list[dict[str, Any]]:
    """Every sound frozen run's record, sorted by file."""
    from . import frozen

    out = []
    for path in sorted(frozen_dir().glob("*/*.json")):
        record = frozen.read_record(path)
        if record is not None:
            record["_path"] = path
            out.append(record)
    return out


def list_runs() -> int:
    """``python -m vitbook runs``: every frozen run, its seconds and CPU, and its state."""
    from . import frozen

    records = frozen_records()
    width = max([len(str(r["_path"].relative_to(frozen_dir()))) for r in records] + [10])
    total, stale_runs = 0.0, 0
    for r in records:
        run = cache.run_named(r["run"], r["declared_in"])
        current = run is not None and run.current(frozen.decode(r["args"], {}, {})) is not None
        stale_runs += not current
        total += r.get("seconds", 0.0)
        where = r["computed_on"]
        print(
            f"{str(r['_path'].relative_to(frozen_dir())):<{width}}  "
            f"{'current' if current else 'STALE':<7}  {r.get('seconds', 0):8.1f} s  "
            f"{where['paths']:<8}  {where['capability']:<8}  {where['cpu']}"
        )
    size = sum(p.stat().st_size for p in frozen_dir().glob("*/*") if p.is_file())
    print(
        f"{len(records)} frozen runs, {stale_runs} stale, {total:.0f} s of training, "
        f"{size / 1e6:.1f} MB in {frozen_dir()}/, every file as its digest says"
    )
    return 1 if stale_runs else 0


def commit_index() -> int:
    """A number that grows by one with each commit (the length of the history), or a hash of
    the commit in a shallow clone; 0 outside a git checkout."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=project_root(), capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        if git("rev-parse", "--is-shallow-repository") == "true":
            return int(git("rev-parse", "HEAD")[:12], 16)
        return int(git("rev-list", "--count", "HEAD"))
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


def _retrain(name: str, declared_in: str, args: Any) -> tuple[dict[str, Any], bytes]:
    """In a worker: retrain one frozen run from nothing (its inputs read from frozen/); the
    record it would store and its tensors' bytes."""
    from . import frozen

    os.environ["VITBOOK_NO_TRAINING"] = "1"  # what it consumes must be frozen already
    return cache.run_named(name, declared_in).compute(frozen.decode(args, {}, {}))


def _record_seconds(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Put a retrained run's timings into its frozen record (its result is the same bits)."""
    from . import cache as _cache
    from . import frozen

    record = {k: v for k, v in old.items() if k != "_path"}
    record["seconds"], record["measured"] = new["seconds"], new["measured"]
    _cache.atomic_write(old["_path"], frozen.seal(record).encode())


def verify_runs(args: argparse.Namespace) -> int:
    """``python -m vitbook verify --runs``: retrain frozen runs (one shard, or all) and compare
    each with its record: a portable run bit for bit; a run on the CPU's own paths that gave
    other bits by the facts the book prints from it (:func:`judge_by_facts`)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    from . import verify as rules

    records = frozen_records()
    chosen = records
    if args.shard == "auto":
        # the per-commit rotation: runs that fit a worker's budget, in shards of two budgets
        rotation = [r for r in records if r.get("seconds", 0.0) <= args.budget]
        shards = rules.plan_shards(rotation, args.budget, args.jobs)
        k = commit_index() % len(shards) + 1
        chosen = shards[k - 1]
        planned = sum(r.get("seconds", 0.0) for r in chosen)
        print(
            f"shard {k} of {len(shards)}: {len(chosen)} of {len(records)} runs, {planned:.0f} s "
            f"when frozen ({args.budget:.0f} s per worker, {args.jobs} workers); every run of "
            f"the rotation is retrained once in any {len(shards)} consecutive commits; the "
            f"{len(records) - len(rotation)} runs longer than {args.budget:.0f} s only by "
            "`nox -s verify` (weekly, .github/workflows/verify.yml)"
        )
    elif args.shard is not None:
        k, n = args.shard
        shards = rules.split_shards(records, n)
        chosen = shards[k - 1]
        print(f"shard {k} of {n}: {len(chosen)} of {len(records)} runs")
    start = time.perf_counter()
    verdicts, others = [], []
    ctx = get_context("spawn")
    with ProcessPoolExecutor(
        args.jobs, mp_context=ctx, initializer=runtime.pin_environment
    ) as pool:
        futures = {pool.submit(_retrain, r["run"], r["declared_in"], r["args"]): r for r in chosen}
        for fut in as_completed(futures):
            old = futures[fut]
            try:
                new, blob = fut.result()
            except Exception as exc:  # reported, and the command fails
                verdicts.append(rules.Verdict(old["_path"].stem, "differs", [f"failed: {exc}"]))
                continue
            verdicts.append(rules.compare_run(old, new))
            if verdicts[-1].status == "other bits":
                others.append((old, new, blob, verdicts[-1]))
            if args.record_seconds and verdicts[-1].status == "identical":
                _record_seconds(old, new)
    if others:
        judge_by_facts(others, args.jobs)
    seconds = time.perf_counter() - start
    verdicts.sort(key=lambda v: v.key)
    print(rules.report(verdicts, noun="runs"))
    print(f"retrained {len(chosen)} runs in {seconds:.0f} s with {args.jobs} worker(s)")
    if chosen is records:  # every run: the experiments' budget
        within = "within" if seconds <= VERIFY_BUDGET_S else "over"
        print(f"{within} the budget of {VERIFY_BUDGET_S / 60:.0f} min for every run "
              f"(with 2 workers on a 2-core machine)")  # fmt: skip
    return 1 if any(v.status == "differs" for v in verdicts) else 0


def judge_by_facts(others: list[tuple[dict, dict, bytes, Any]], jobs: int) -> None:
    """Judge retrained runs that gave other bits by what the book prints from them: the items
    that read them are recomputed from a copy of frozen/ holding the retrained records and
    compared with the committed figures under the item rules (a trained fact within its
    ``tol``, every other fact's text exactly). Each verdict becomes ``within rules`` or
    ``differs``. (A run other runs consumed makes those not current: its items fail.)"""
    import shutil

    from . import frozen

    wanted = {(old["run"], frozen.slug(frozen.decode(old["args"], {}, {}))) for old, *_ in others}
    manifest = read_manifest(figures_dir())
    keys = sorted(
        k for k, e in manifest.items()
        if any((c["run"], c["slug"]) in wanted for c in e.get("consumed", []))
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="vitbook-runs-") as tmp:
        store = Path(tmp) / "frozen"
        shutil.copytree(frozen_dir(), store)
        for old, new, blob, _ in others:
            cache.run_named(old["run"], old["declared_in"]).store(new, blob, root=store)
        os.environ["VITBOOK_FROZEN"] = str(store)
        print(f"\n{len(others)} runs gave other bits: the {len(keys)} items that read them, "
              "recomputed from them")  # fmt: skip
        ns = argparse.Namespace(against=figures_dir(), fresh=None, keep=None, jobs=jobs)
        status = verify(keys, ns) if keys else 1
    for *_, verdict in others:
        verdict.status = "differs" if status else "within rules"
        verdict.notes.append(
            f"other bits; the {len(keys)} items that read them print "
            + ("other facts (above)" if status else "the same facts, within their tol")
        )
