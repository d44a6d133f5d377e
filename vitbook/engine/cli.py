"""``python -m vitbook``: build the book's figures and facts, or list them.

Examples::

    python -m vitbook list
    python -m vitbook figures                 # everything that is stale
    python -m vitbook figures --chapter 2     # one chapter
    python -m vitbook figures --only ch02/patch-grids --force
    python -m vitbook figures --check         # exit 1 if anything is stale; computes nothing
    python -m vitbook verify --jobs 2         # a cold build in a temporary folder, compared
                                              # with figures/ (see vitbook/engine/verify.py)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from . import cache, runtime
from .build import Outcome, build, figures_dir, read_manifest, stale
from .registry import discover

#: What a cold build of the whole book should take on two cores (reported by ``verify``, never
#: asserted: a loaded machine is slower, and that is not a defect of the book).
COLD_BUILD_BUDGET_S = 600


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
    v = sub.add_parser(
        "verify",
        help="build cold in a temporary folder and compare with the committed figures",
        description="Build the selected items cold (a fresh cache) in a temporary folder and "
        "compare them with the committed figures under the reproducibility rules of "
        "vitbook/engine/verify.py. Exit 1 if any item differs.",
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
    v.add_argument(
        "--share-runs",
        type=Path,
        metavar="DIR",
        help="after the cold build, copy its training runs into the cache DIR where DIR lacks "
        "them (the same keys), so that later warm work there does not train them again",
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
            status = "trained" if trained else "cached"
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


def main(argv: list[str] | None = None) -> int:
    # before torch loads: the book computes on the CPU with runtime.THREADS threads per process
    from .runtime import pin_environment

    pin_environment()
    args = parser().parse_args(argv)
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
        return 1 if out_of_date else 0

    prune = not args.chapter and not args.only
    return run_build(keys, force=args.force, jobs=args.jobs, prune=prune)


def run_build(keys: list[str], *, force: bool, jobs: int, prune: bool) -> int:
    """Build ``keys`` with a progress bar, print the report; 1 if anything failed."""
    from tqdm import tqdm

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
    """``python -m vitbook verify``: a cold build compared with the committed figures."""
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
                print(f"error: {fresh_dir}/ is not empty: a cold build needs an empty folder")
                return 2
            os.environ["VITBOOK_FIGURES"] = str(fresh_dir)
            os.environ["VITBOOK_CACHE"] = str(Path(tmp) / "cache")  # cold: no cached result
            start = time.perf_counter()
            status = run_build(keys, force=True, jobs=args.jobs, prune=False)
            seconds = time.perf_counter() - start
            if args.share_runs is not None:
                shared = cache.share_runs(Path(tmp) / "cache", args.share_runs)
                print(f"shared {shared} training run(s) with {args.share_runs}/")
            print(
                f"cold build: {seconds:.0f} s for {len(keys)} items, {args.jobs} job(s) x "
                f"{runtime.THREADS} thread(s) on {os.cpu_count()} CPUs "
                f"(budget for the whole book on two cores: {COLD_BUILD_BUDGET_S} s; reported, "
                "not enforced)"
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
