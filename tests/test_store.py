"""The frozen store never loses a run and never hides a damaged one (issue #38), and the engine
stops at once where the installed libraries are not those the records name (issue #34).

The quick tests call the engine in this process on a temporary store; the build tests run the
real command line on the scratch project of tests/scratch.py.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from scratch import book_env, builds, run, stale_names, statuses
from test_frozen import CHAPTERS, runs_book

from vitbook.engine import cache, deps, frozen

ROOT = Path(__file__).resolve().parents[1]

#: PyPI's torch: the same release, without the local version of PyTorch's CPU wheel index.
PYPI_TORCH = """
import importlib.metadata as md
real = md.version
md.version = lambda dist: "2.13.0" if dist == "torch" else real(dist)
"""
CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def run_with(book: Path, patch: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m vitbook ARGS`` in a process where ``patch`` ran first."""
    code = f"import sys\n{patch}\nfrom vitbook.engine.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=book, env=book_env(book),
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def frozen_files(book: Path) -> set[str]:
    return {p.relative_to(book / "frozen").as_posix() for p in (book / "frozen").rglob("*.*")}


# --- 1. nothing is pruned unless the whole build succeeded -------------------------------------

FAILING = """
from vitbook.engine import facts
from vitbook import runs_test

@facts(chapter=97, id="fails", trained=True)
def fails(rec):
    rec.fact("value", runs_test.other(seed=7)["value"])  # trains a run, then fails
    raise RuntimeError("this item fails after training")
"""


@builds
def test_a_failed_or_killed_build_prunes_nothing(book: Path) -> None:
    runs_book(book)
    run(book, "figures")
    had = frozen_files(book)
    assert "vitbook.exp_b.run/seed=0.json" in had
    # ch96 stops reading other(seed=0): a whole build that succeeds would delete its record
    ch96 = book / "vitbook/figures/ch96_other.py"
    ch96.write_text(CHAPTERS["ch96_other.py"].replace("other()", "other(seed=3)"))
    (book / "vitbook/figures/ch97_fails.py").write_text(FAILING)
    proc = run(book, "figures", check=False)
    assert proc.returncode == 1 and "this item fails after training" in proc.stderr
    after = frozen_files(book)
    assert had <= after, had - after  # every record it had
    assert "vitbook.exp_b.run/seed=7.json" in after  # and the one the failed item trained
    # a build killed half-way: every record is still there
    (book / "vitbook/figures/ch97_fails.py").unlink()
    # (--force: every item is computed, and the first scratch figure sleeps 60 s)
    proc = subprocess.Popen([sys.executable, "-m", "vitbook", "figures", "--force"], cwd=book,
                            env=book_env(book, {"SLOW": "60"}), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    time.sleep(5)
    assert proc.poll() is None  # still building when it is killed
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert had <= frozen_files(book)
    # the same build, finished: what nothing reads any more goes
    run(book, "figures")
    assert "vitbook.exp_b.run/seed=0.json" not in frozen_files(book)
    assert "vitbook.exp_b.run/seed=7.json" not in frozen_files(book)


# --- 2. every frozen file is checked against its digest ----------------------------------------


def write_run(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A run with a tensor in its result, frozen in a temporary store: its two files."""
    import torch

    monkeypatch.setenv("VITBOOK_FROZEN", str(tmp_path / "frozen"))
    monkeypatch.setenv("VITBOOK_CACHE", str(tmp_path / "cache"))

    def weights(seed: int = 0) -> dict:
        return {"w": torch.arange(4.0) + seed, "acc": 0.5}

    run_ = cache.cached(weights)
    assert run_()["acc"] == 0.5
    (path,) = (tmp_path / "frozen").glob("*/*.json")
    return path, path.with_suffix(".safetensors")


def flip(path: Path, at: int) -> None:
    blob = bytearray(path.read_bytes())
    blob[at] ^= 0x01
    path.write_bytes(bytes(blob))


def test_a_flipped_byte_in_a_record_or_its_tensors_is_found_and_named(
    tmp_path: Path, monkeypatch
) -> None:
    path, tensors = write_run(tmp_path, monkeypatch)
    assert frozen.read(path)[2] is None and frozen.check_store() == []
    good_json, good_tensors = path.read_bytes(), tensors.read_bytes()
    # one byte of the tensor data (its last byte: a float of the weights)
    flip(tensors, len(good_tensors) - 1)
    assert frozen.read(path)[2] == f"{tensors.name} is not the bytes the record's digest names"
    assert frozen.read_record(path) is None  # never read as if it were sound
    (line, *_) = frozen.check_store()
    assert line.startswith(f"frozen/{path.parent.name}/{path.name}: ")
    tensors.write_bytes(good_tensors)
    # one byte of the record: a digit of its result (still JSON), then every other byte
    at = good_json.index(b'"acc": 0.5') + len(b'"acc": 0.')
    path.write_bytes(good_json)
    flip(path, at)
    assert frozen.read(path)[2] == "its bytes are not those its digest names"
    for where in range(len(good_json)):
        path.write_bytes(good_json)
        flip(path, where)
        assert frozen.read(path)[2] is not None, where
        assert frozen.check_store()[0].startswith(f"frozen/{path.parent.name}/{path.name}: ")
    path.write_bytes(good_json)
    assert frozen.check_store() == []


@builds
def test_runs_check_and_build_stop_at_a_damaged_file_and_name_it(book: Path) -> None:
    runs_book(book)
    (book / "vitbook/exp_b.py").write_text(
        "import torch\n\ndef run(seed: int = 0) -> dict:\n"
        "    return {'value': 2 + seed, 'w': torch.arange(3.0)}\n"
    )
    run(book, "figures")
    record = book / "frozen/vitbook.exp_b.run/seed=0.json"
    for damaged in (record, record.with_suffix(".safetensors")):
        good = damaged.read_bytes()
        flip(damaged, len(good) // 2)
        for args in (["runs"], ["figures", "--check"], ["figures"], ["verify"]):
            proc = run(book, *args, check=False)
            assert proc.returncode == 1, args
            assert "frozen/vitbook.exp_b.run/seed=0.json: " in proc.stderr, (args, proc.stderr)
            assert " trained " not in proc.stdout  # nothing trained over it
        damaged.write_bytes(good)
    assert run(book, "runs").returncode == 0
    assert run(book, "figures", "--check").returncode == 0


# --- 3. consumers are keyed by what they read; versions are provenance -------------------------


@builds
def test_an_item_is_stale_when_what_it_read_changed_and_not_for_comments(book: Path) -> None:
    runs_book(book)
    run(book, "figures")
    # comments, docstrings and a new run declared beside the others change no key
    runs_test = book / "vitbook/runs_test.py"
    runs_test.write_text(
        '"""Runs, explained."""\n# a note\n' + runs_test.read_text()
        + "\nthird = cached(exp_b.run)  # declared, read by nothing yet\n"
    )  # fmt: skip
    engine_runtime = book / "vitbook/engine/runtime.py"
    engine_runtime.write_text(engine_runtime.read_text() + "\n# a comment in the engine\n")
    package = book / "vitbook/__init__.py"
    package.write_text(package.read_text().replace('"""', '"""An edited docstring. ', 1))
    proc = run(book, "figures", "--check", check=False)
    assert proc.returncode == 0, proc.stdout
    # a record that kept its base key but holds another result (retrained on other SIMD
    # paths, say): what read it is stale, though no code changed
    path = book / "frozen/vitbook.exp_b.run/seed=0.json"
    record = json.loads(path.read_text())
    record["result"]["value"] = 5
    path.write_text(frozen.seal(record))
    proc = run(book, "figures", "--check", check=False)
    assert stale_names(proc.stdout) == {"ch96/other"}, proc.stdout
    assert "(run run(seed=0) changed)" in proc.stdout
    again = run(book, "figures")
    assert statuses(again.stdout)["ch96/other"] == "computed" and " trained " not in again.stdout
    assert json.loads((book / "figures/facts.json").read_text())["ch96"]["other"]["value"] == 5


def test_the_message_for_pypis_torch_names_what_to_install(monkeypatch) -> None:
    """PyPI's torch says 2.13.0 where the CPU build the records were made with says
    2.13.0+cpu: one message, with the command that installs the CPU build."""
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda d: "2.13.0" if d == "torch" else real(d)
    )
    deps.environment.cache_clear()
    try:
        recorded = {k: {v} for k, v in deps.environment().items()} | {"torch": {"2.13.0+cpu"}}
        message = deps.environment_mismatch(recorded, "the frozen runs")
    finally:
        deps.environment.cache_clear()
    assert message is not None
    lines = message.splitlines()
    assert "  torch: installed 2.13.0, the records need 2.13.0+cpu" in lines
    assert f"  {CPU_TORCH}" in lines
    assert sum(": installed " in line for line in lines) == 1  # only torch differs
    monkeypatch.undo()
    deps.environment.cache_clear()
    assert deps.environment_mismatch({"torch": {real("torch")}}, "x") is None
    assert deps.install_command("numpy", "2.4.6") == "pip install numpy==2.4.6"


@builds
def test_another_torch_stops_every_command_at_once_with_one_message(book: Path) -> None:
    runs_book(book)
    run(book, "figures")
    for args in (["figures", "--check"], ["figures"], ["runs"], ["verify"]):
        proc = run_with(book, PYPI_TORCH, *args)
        assert proc.returncode == 1, args
        assert "torch: installed 2.13.0, the records need 2.13.0+cpu" in proc.stderr, args
        assert CPU_TORCH in proc.stderr
        assert "stale:" not in proc.stdout and " trained " not in proc.stdout, proc.stdout
    # a deliberate upgrade: verify under the new libraries, then record them as provenance
    proc = run_with(book, PYPI_TORCH, "verify", "--runs", "--new-environment")
    assert proc.returncode == 0 and "3 runs: 3 identical" in proc.stdout, proc.stdout
    assert run_with(book, PYPI_TORCH, "migrate", "--record-environment").returncode == 0
    proc = run_with(book, PYPI_TORCH, "figures", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((book / "frozen/vitbook.exp_b.run/seed=0.json").read_text())
    assert record["environment"]["torch"] == "2.13.0"
    assert run(book, "runs", check=False).returncode == 1  # the CPU build now differs


# --- 4. a run on the CPU's own paths is judged by what the book prints -------------------------


@builds
def test_verify_runs_judges_a_native_run_by_the_facts_it_gives(book: Path) -> None:
    runs_book(book)
    (book / "vitbook/exp_b.py").write_text(
        "def run(seed: int = 0) -> dict:\n    return {'value': 2 + seed, 'curve': [0.5, 0.25]}\n"
    )
    run(book, "figures")
    path = book / "frozen/vitbook.exp_b.run/seed=0.json"
    good = json.loads(path.read_text())
    # a point of a curve the book does not print moved: within the rules
    record = json.loads(path.read_text())
    record["result"]["curve"][1] = 0.2500001
    path.write_text(frozen.seal(record))
    run(book, "figures")  # the book built from it
    proc = run(book, "verify", "--runs")
    assert re.search(r"^run\(seed=0\) +within rules$", proc.stdout, re.M), proc.stdout
    assert "the 1 items that read them print the same facts" in proc.stdout
    # the printed fact moved: differs
    record = dict(good)
    record["result"] = {**good["result"], "value": 5}
    path.write_text(frozen.seal(record))
    run(book, "figures")
    proc = run(book, "verify", "--runs", check=False)
    assert proc.returncode == 1, proc.stdout
    assert re.search(r"^run\(seed=0\) +differs$", proc.stdout, re.M), proc.stdout


def test_portable_names_exactly_the_portable_runs() -> None:
    import re

    from vitbook import runs
    from vitbook.engine import portable

    doc = " ".join(portable.__doc__.split())
    sentence = doc.split("The portable runs are exactly: ")[1].split(". ")[0]
    named = set(re.findall(r"``vitbook\.runs\.(\w+)``", sentence))
    actual = {
        name for name, value in vars(runs).items()
        if isinstance(value, cache.Run) and value.portable
    }  # fmt: skip
    assert named == actual == {"pretrained_shapes_vit"}
    assert not runs.digits_run.portable  # since 2f151a3


# --- 5. the mutations that survived ------------------------------------------------------------


def test_two_calls_whose_arguments_share_a_file_name_are_two_runs(
    tmp_path: Path, monkeypatch
) -> None:
    """``x=1`` and ``x="1"`` are both named ``x=1.json``: the key holds the arguments' repr,
    so the second call trains instead of reading the first one's result."""
    monkeypatch.setenv("VITBOOK_FROZEN", str(tmp_path / "frozen"))
    monkeypatch.setenv("VITBOOK_CACHE", str(tmp_path / "cache"))
    calls = []

    def echo(x: object = 0) -> str:
        calls.append(x)
        return repr(x)

    f = cache.cached(echo)
    assert f(x=1) == "1" and f(x="1") == "'1'" and f(x="1") == "'1'"
    assert calls == [1, "1"]


def test_the_migration_is_idempotent_and_keeps_every_result(tmp_path: Path, monkeypatch) -> None:
    """A record in format 1 (as the other branches still write them) is rewritten once, with
    the same result and tensors; a second migration changes nothing."""
    path, tensors = write_run(tmp_path, monkeypatch)
    new = json.loads(path.read_text())
    run_ = cache.REGISTRY[new["run"]]
    old = {k: v for k, v in new.items() if k not in ("digest", "environment")}
    old["format"] = 1
    old["base"] = run_.base_key({"seed": 0}, env=deps.environment())
    path.write_text(frozen.canonical(old))
    assert frozen.read(path)[2].startswith("format 1, not 2")
    assert cache.migrate()[-1] == "1 of 1 records rewritten, 0 left as they were"
    migrated = path.read_bytes()
    assert frozen.read(path)[2] is None
    assert frozen.result_digest(json.loads(migrated)) == frozen.result_digest(new)
    assert cache.migrate()[-1] == "0 of 1 records rewritten, 0 left as they were"
    assert path.read_bytes() == migrated
    # a format-1 record made by other code than today's is left alone, and said so
    old["base"] = "0" * 20
    path.write_text(frozen.canonical(old))
    (note, summary) = cache.migrate()
    assert "stale under the keys it was made with" in note and summary.startswith("0 of 1")
