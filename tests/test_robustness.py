"""Interrupted and damaged figure builds never leave a wrong figure behind.

Chapter 2's figure build (small, quick) runs as a subprocess into temporary figures and cache
folders (``VITBOOK_FIGURES``, ``VITBOOK_CACHE``); nothing is copied from the repository's
``figures/``. It is killed with SIGKILL at random points, and its files and cache entries are
damaged; after each, every file under a final name must be whole, and the next build must repair
everything and match a clean build byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from vitbook.engine import cache as vcache

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "2"
KILLS = 4
ENGINE_TEMP = re.compile(r"^\..+\.tmp$")  # cache.atomic_write: ".<name>.<random>.tmp"


def build_cmd() -> list[str]:
    return [sys.executable, "-m", "vitbook", "figures", "--chapter", CHAPTER]


def env_for(fig: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "VITBOOK_FIGURES": str(fig), "VITBOOK_CACHE": str(cache)}


def build(fig: Path, cache: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        build_cmd(), cwd=ROOT, env=env_for(fig, cache), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc


def statuses(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """``{"ch02/patch-grids": "computed", ...}`` from the build's report table."""
    found = re.findall(
        r"^(ch\d\d/[a-z0-9-]+)\s+(computed|redrawn|cached|failed)\s", proc.stdout, re.M
    )
    return dict(found)


def snapshot(fig: Path) -> dict[str, bytes]:
    """What a clean build must reproduce: every figure file, facts.json, and the manifest less
    its timings. Files of items marked non-deterministic are left out."""
    manifest = json.loads((fig / "manifest.json").read_text())
    skip = {n for e in manifest.values() if not e.get("deterministic", True) for n in e["files"]}
    out = {
        p.relative_to(fig).as_posix(): p.read_bytes()
        for p in sorted(fig.glob("ch*/*"))
        if not p.name.startswith(".")
    }
    out = {k: v for k, v in out.items() if k not in skip}
    out["facts.json"] = (fig / "facts.json").read_bytes()
    for entry in manifest.values():
        entry.pop("compute_seconds", None)
    out["manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    return out


def unsound(fig: Path, cache: Path) -> tuple[list[str], list[str]]:
    """Problems with files under their final names, and the engine's leftover temp files."""
    problems, temps = [], []
    for path in sorted(p for p in list(fig.rglob("*")) + list(cache.rglob("*")) if p.is_file()):
        name = path.name
        if name.endswith(".tmp"):
            (temps if ENGINE_TEMP.match(name) else problems).append(str(path))
            continue
        try:
            if name.endswith(".png"):
                with Image.open(path) as im:
                    im.load()
            elif name.endswith(".svg"):
                ET.parse(path)
            elif name.endswith(".json"):
                json.loads(path.read_text())
            elif name.endswith(".pkl"):
                ok, _ = vcache.load(path)
                if not ok:
                    problems.append(f"{path}: a damaged cache entry under its final name")
        except Exception as exc:  # noqa: BLE001 - any decode failure is a partial file
            problems.append(f"{path}: {type(exc).__name__}: {exc}")
    manifest_path = fig / "manifest.json"
    if manifest_path.exists():
        for key, entry in json.loads(manifest_path.read_text()).items():
            for rel, digest in entry["files"].items():
                path = fig / rel
                got = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
                if got != digest:
                    problems.append(
                        f"manifest lists {rel} for {key} but the file "
                        f"{'differs' if got else 'is missing'}"
                    )
    return problems, temps


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, Path, float]:
    """A clean cold build of Chapter 2: (figures, cache, seconds it took)."""
    base = tmp_path_factory.mktemp("clean")
    fig, cache = base / "figures", base / "cache"
    start = time.perf_counter()
    proc = build(fig, cache)
    seconds = time.perf_counter() - start
    assert set(statuses(proc).values()) == {"computed"}, proc.stdout
    assert list(fig.glob("ch02/*.png")), "the clean build wrote no figure"
    return fig, cache, seconds


def copy_build(clean: tuple[Path, Path, float], dest: Path) -> tuple[Path, Path]:
    fig, cache, _ = clean
    shutil.copytree(fig, dest / "figures")
    shutil.copytree(cache, dest / "cache")
    return dest / "figures", dest / "cache"


def test_two_clean_cold_builds_are_byte_identical(clean, tmp_path: Path) -> None:
    """The reference is itself reproducible (otherwise 'matches a clean build' means nothing)."""
    fig, cache = tmp_path / "figures", tmp_path / "cache"
    build(fig, cache)
    assert snapshot(fig) == snapshot(clean[0])


def test_killed_at_random_points_leaves_no_partial_file_and_rebuild_matches_clean(
    clean, tmp_path: Path
) -> None:
    ref, _, seconds = clean
    fig, cache = tmp_path / "figures", tmp_path / "cache"
    rng = random.Random(8)
    log = []
    for i in range(KILLS):
        delay = rng.uniform(0.3, seconds * 0.9)
        proc = subprocess.Popen(
            build_cmd(),
            cwd=ROOT,
            env=env_for(fig, cache),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(delay)
        finished = proc.poll() is not None
        if not finished:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        problems, temps = unsound(fig, cache)
        log.append(
            f"kill {i + 1} at {delay:.1f} s: {'finished first' if finished else 'killed'}; "
            f"{len(list(fig.glob('ch02/*.png')))} PNGs; temp files left: {temps}"
        )
        assert not problems, f"after kill {i + 1} at {delay:.1f} s:\n  " + "\n  ".join(problems)
    print("\n" + "\n".join(log))
    proc = build(fig, cache)
    problems, _ = unsound(fig, cache)
    assert not problems
    assert snapshot(fig) == snapshot(ref)


def test_damaged_figures_and_cache_entries_are_repaired_to_clean_bytes(
    clean, tmp_path: Path
) -> None:
    ref = clean[0]
    fig, cache = copy_build(clean, tmp_path)
    results = cache / "results"

    def entry(item: str) -> Path:
        (path,) = results.glob(f"ch02-{item}-*.pkl")
        return path

    # figure files: truncated, one byte flipped, deleted, emptied
    grid = fig / "ch02/patch-grids.png"
    grid.write_bytes(grid.read_bytes()[: grid.stat().st_size // 2])
    seq = fig / "ch02/patch-sequence.svg"
    blob = bytearray(seq.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    seq.write_bytes(bytes(blob))
    (fig / "ch02/token-counts.dark.png").unlink()
    (fig / "ch02/not-divisible.dark.svg").write_bytes(b"")
    # cache entries: one truncated, one with a flipped payload byte
    e1 = entry("patch-grids")
    e1.write_bytes(e1.read_bytes()[:100])
    e2 = entry("patch-sequence")
    blob = bytearray(e2.read_bytes())
    blob[-10] ^= 0x01
    e2.write_bytes(bytes(blob))

    proc = build(fig, cache)
    got = statuses(proc)
    assert got["ch02/patch-grids"] == "computed", "a truncated cache entry was trusted"
    assert got["ch02/patch-sequence"] == "computed", "an altered cache entry was trusted"
    assert got["ch02/token-counts"] == "redrawn", "a deleted file was not redrawn from the cache"
    assert got["ch02/not-divisible"] == "redrawn", "an emptied file was not redrawn"
    assert snapshot(fig) == snapshot(ref)

    # the bookkeeping itself: a damaged manifest and an emptied facts file
    (fig / "manifest.json").write_bytes(b'{"ch02/patch-grids": {"key": ')
    (fig / "facts.json").write_bytes(b"")
    proc = build(fig, cache)
    assert "failed" not in statuses(proc).values()
    problems, temps = unsound(fig, cache)
    assert not problems and not temps
    assert snapshot(fig) == snapshot(ref)


def test_a_temp_file_left_by_a_killed_write_is_removed_by_the_next_build(
    clean, tmp_path: Path
) -> None:
    """SIGKILL between a temp file's creation and its rename leaves ``.<name>.<rand>.tmp``
    behind (no handler can run). The next build must clean such leftovers up."""
    fig, cache = copy_build(clean, tmp_path)
    stale = [
        fig / "ch02" / ".patch-grids.png.k1ll3d.tmp",
        fig / ".manifest.json.k1ll3d.tmp",
        next((cache / "results").glob("*.pkl")).with_name(".entry.pkl.k1ll3d.tmp"),
    ]
    hour_ago = time.time() - 3600
    for path in stale:
        path.write_bytes(b"\x89PNG half of a file")
        os.utime(path, (hour_ago, hour_ago))
    build(fig, cache)
    left = [str(p) for p in stale if p.exists()]
    assert not left, "temp files of a killed build are never removed:\n  " + "\n  ".join(left)
    assert snapshot(fig) == snapshot(clean[0])
