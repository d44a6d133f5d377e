"""Does a build reproduce the committed figures and facts? The rules, and a report.

A cold build on another machine (another CPU, other SIMD paths in torch, numpy and BLAS) is
compared with the committed ``figures/`` item by item:

* **deterministic items** (the default): every file byte for byte, except explorer data
  (``.explorer.bin``), whose arrays are compared as numbers: floats within a relative
  :data:`VALUE_RTOL`, quantised integers within one step (a float that moved across a rounding
  boundary); every fact's printed text exactly, and its stored value within a relative
  :data:`VALUE_RTOL` (the last bits of a float may move; the text the book prints may not);
* **trained items** (``trained=True``): a fact recorded with ``tol=`` may move by at most
  ``tol`` (the larger of the two builds' tolerances: each is the spread of its own seeds, and a
  move inside either is seed noise); every other fact (counts, verdicts) must print the same
  text; the files are drawn from the training results and are not compared byte for byte;
* a deterministic item may also record a fact with ``tol=``: a rounding error that the book
  shows as such (float32 sums in another order). It may move by at most ``tol``; when it did
  move, the item's files (which show it) are not compared byte for byte either;
* **measured items** (``deterministic=False``, wall-clock timings): neither files nor facts are
  compared; the item must still exist and record the same fact names.

``python -m vitbook verify`` builds cold into a temporary folder and applies these rules;
:func:`compare` is the comparison alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .explorer import decode

#: The largest relative change of a stored fact value whose printed text is unchanged. Float32
#: arithmetic on another SIMD path moves values by about 1e-7 relative per operation; through
#: a ViT-B forward pass, measured up to 5e-6 (Chapter 0's features, AVX-512 against baseline).
VALUE_RTOL = 1e-4


@dataclass
class Verdict:
    """How one item compares: ``identical``, ``within rules`` or ``differs``."""

    key: str
    status: str
    notes: list[str] = field(default_factory=list)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def compare_fact(name: str, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """None if fact ``name`` reproduces under the rules, else what is wrong. (A value that moved
    within the rules also returns None.)"""
    tols = [t for t in (old.get("tol"), new.get("tol")) if t is not None]
    tol = max(tols) if tols else None
    if tol is not None and _number(old["value"]) and _number(new["value"]):
        move = abs(new["value"] - old["value"])
        if move > tol * (1 + 1e-9):  # "at most": a move of exactly tol (one point) passes
            return f"{name}: {old['text']!r} -> {new['text']!r}, moved {move:.3g} > tol {tol:g}"
        return None
    if old["text"] != new["text"]:
        return f"{name}: printed {old['text']!r}, now {new['text']!r}"
    a, b = old["value"], new["value"]
    if _number(a) and _number(b):
        if not math.isclose(a, b, rel_tol=VALUE_RTOL, abs_tol=0.0) and a != b:
            return f"{name}: value {a!r} -> {b!r} (same text; moved more than {VALUE_RTOL:g})"
    elif a != b:
        return f"{name}: value {a!r} -> {b!r}"
    return None


def _meta_close(a: Any, b: Any) -> bool:
    """Equal, except that numbers may differ by a relative :data:`VALUE_RTOL`."""
    if _number(a) and _number(b):
        return math.isclose(a, b, rel_tol=VALUE_RTOL, abs_tol=0.0) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return sorted(a) == sorted(b) and all(_meta_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_meta_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def explorer_data_close(old: bytes, new: bytes) -> bool:
    """Whether two explorer data files hold the same meta and the same arrays up to the last
    bits: numbers in the meta and floats within a relative :data:`VALUE_RTOL` (of the array's
    largest value), integers (quantised weights) within one step."""
    a, b = decode(old), decode(new)
    if not _meta_close(a.meta, b.meta) or sorted(a.arrays) != sorted(b.arrays):
        return False
    return all(arrays_close(x, b.arrays[name]) for name, x in a.arrays.items())


def arrays_close(x: np.ndarray, y: np.ndarray) -> bool:
    """The rule for explorer arrays computed on two CPUs: same dtype and shape; floats within
    a relative :data:`VALUE_RTOL` of ``x``'s largest value; integers (quantised weights)
    within one step."""
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape or x.dtype.kind != y.dtype.kind:
        return False
    if x.size == 0:
        return True
    if np.issubdtype(x.dtype, np.floating):
        scale = float(np.abs(x).max()) or 1.0
        return bool(np.allclose(x, y, rtol=VALUE_RTOL, atol=VALUE_RTOL * scale))
    return int(np.abs(x.astype(np.int64) - y.astype(np.int64)).max()) <= 1


def compare_entry(
    key: str,
    old: dict[str, Any],
    new: dict[str, Any],
    read: Callable[[str], tuple[bytes, bytes]] | None = None,
) -> Verdict:
    """Apply the rules to one item's manifest entries (committed ``old``, fresh ``new``).
    ``read(file)`` returns a file's committed and fresh bytes; without it, explorer data is
    compared by hash like every other file."""
    deterministic = new.get("deterministic", True)
    trained = new.get("trained", False)
    problems: list[str] = []
    notes: list[str] = []
    old_facts, new_facts = old.get("facts", {}), new.get("facts", {})
    moved_within_tol = [
        name
        for name in sorted(set(old_facts) & set(new_facts))
        if "tol" in new_facts[name] | old_facts[name]
        and old_facts[name]["value"] != new_facts[name]["value"]
    ]
    if sorted(old_facts) != sorted(new_facts):
        gone, added = set(old_facts) - set(new_facts), set(new_facts) - set(old_facts)
        problems.append(f"facts removed {sorted(gone)}, added {sorted(added)}")
    if not deterministic:
        notes.append("measured: facts and files not compared")
    else:
        for name in sorted(set(old_facts) & set(new_facts)):
            o, n = old_facts[name], new_facts[name]
            if o.get("measured") or n.get("measured"):
                continue
            problem = compare_fact(name, o, n)
            if problem:
                problems.append(problem)
            elif o != n:
                notes.append(f"{name} moved {o['value']!r} -> {n['value']!r}")
    old_files, new_files = old.get("files", {}), new.get("files", {})
    if sorted(old_files) != sorted(new_files):
        problems.append(f"files {sorted(old_files)} -> {sorted(new_files)}")
    else:
        changed = [f for f in sorted(new_files) if new_files[f] != old_files[f]]
        if deterministic and not trained and read is not None:
            bins = [f for f in changed if f.endswith(".explorer.bin")]
            close = [f for f in bins if explorer_data_close(*read(f))]
            if close:
                notes.append("explorer data within the last bits: " + ", ".join(close))
                changed = [f for f in changed if f not in close]
        if changed and deterministic and not trained and not moved_within_tol:
            problems.append("bytes differ: " + ", ".join(changed))
        elif changed:
            why = (
                "trained"
                if trained
                else "measured"
                if not deterministic
                else "they show " + ", ".join(moved_within_tol) + ", moved within tol"
            )
            notes.append(f"{len(changed)} files differ (not compared: {why})")
    if problems:
        return Verdict(key, "differs", problems + notes)
    return Verdict(key, "within rules" if notes else "identical", notes)


def compare(
    committed: dict[str, dict[str, Any]],
    fresh: dict[str, dict[str, Any]],
    read: Callable[[str], tuple[bytes, bytes]] | None = None,
) -> list[Verdict]:
    """Compare two manifests (``figures/manifest.json``) item by item (``read``: see
    :func:`compare_entry`)."""
    out = []
    for key in sorted(set(committed) | set(fresh)):
        if key not in fresh:
            out.append(Verdict(key, "differs", ["missing from the fresh build"]))
        elif key not in committed:
            out.append(Verdict(key, "differs", ["not in the committed figures"]))
        else:
            out.append(compare_entry(key, committed[key], fresh[key], read))
    return out


def report(verdicts: list[Verdict], noun: str = "items") -> str:
    """The verdicts as text: one line per item (or run), its notes indented, and a summary."""
    width = max([len(v.key) for v in verdicts] + [6])
    lines = []
    for v in verdicts:
        lines.append(f"{v.key:<{width}}  {v.status}")
        lines.extend(f"{'':<{width}}    {note}" for note in v.notes)
    counts = {s: sum(v.status == s for v in verdicts) for s in STATUSES}
    middle = "within the rules" if noun == "items" else "within the printed facts"
    n_middle = counts["within rules"]
    lines.append(
        f"{len(verdicts)} {noun}: {counts['identical']} identical, {n_middle} {middle}, "
        f"{counts['differs']} differ"
    )
    return "\n".join(lines)


#: A verdict's status, from the best to the worst.
STATUSES = ("identical", "within rules", "differs")


# --- frozen runs, retrained from nothing (``verify --runs``) -------------------------------


def compare_run(old: dict[str, Any], new: dict[str, Any]) -> Verdict:
    """A retrained run (``new``) against its frozen record (``old``): ``identical`` when its
    result and tensors are the same bits; a portable run that gave other bits ``differs``; a
    run on the CPU's own code paths that did is ``other bits``, to be judged by the facts the
    book prints from it (``verify --runs`` rebuilds the items that read it with the retrained
    record, under the item rules above: a trained fact within its ``tol``), never by every
    point of its curves, which a last-bit difference moves."""
    from .frozen import result_digest

    name = f"{old['run'].rsplit('.', 1)[-1]}({_slug(old)})"
    secs = f"{new.get('seconds', 0):.0f} s (frozen: {old.get('seconds', 0):.0f} s)"
    if result_digest(old) == result_digest(new):
        return Verdict(name, "identical", [secs])
    if old.get("portable"):
        return Verdict(name, "differs", [secs, "a portable run gave other bits"])
    return Verdict(name, "other bits", [secs])


def _slug(record: dict[str, Any]) -> str:
    from .frozen import decode, slug

    return slug(decode(record["args"], {}, {}))


def plan_shards(records: list[dict[str, Any]], budget: float, jobs: int) -> list[list[dict]]:
    """Split frozen runs into as many shards as it takes for each to hold about ``budget``
    seconds for each of ``jobs`` workers (see :func:`split_shards`)."""
    import math

    total = sum(r.get("seconds", 0.0) for r in records)
    return split_shards(records, max(1, math.ceil(total / (budget * jobs))))


def split_shards(records: list[dict[str, Any]], n: int) -> list[list[dict]]:
    """Split frozen runs into ``n`` shards by the seconds each took when frozen: the longest
    first, each to the lightest shard. The plan changes only when a run is frozen again (its
    seconds are those of its frozen record)."""
    costs = sorted(records, key=lambda r: (-r.get("seconds", 0.0), r["run"], _slug(r)))
    shards: list[list[dict]] = [[] for _ in range(n)]
    loads = [0.0] * n
    for r in costs:
        i = min(range(n), key=lambda k: (loads[k], k))
        shards[i].append(r)
        loads[i] += r.get("seconds", 0.0)
    return shards
