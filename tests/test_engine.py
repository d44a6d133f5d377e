"""The engine's promises: a warm build computes nothing, a change reruns exactly what depends
on it, output is byte-identical, interrupted builds leave no partial file, damage is repaired.

Most tests run the real command line on a scratch copy of the package in which the book's
chapters are replaced by three tiny ones, so that each build takes a second.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scratch import MODULE, ONLY_B, SHARED, book_env, builds, check_with, run, stale_names, statuses

ROOT = Path(__file__).resolve().parents[1]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_scratch_copy_is_the_one_imported(book: Path) -> None:
    proc = run(book, "list")
    assert "ch90/alpha" in proc.stdout and "ch02/" not in proc.stdout


@builds
def test_warm_build_computes_nothing(book: Path) -> None:
    first = statuses(run(book, "figures").stdout)
    assert set(first.values()) == {"computed"} and len(first) == 6
    second = run(book, "figures")  # answered from the stamp: no file changed
    assert "6 of 6 items up to date" in second.stdout and "no file changed" in second.stdout
    (book / ".cache/stamp.json").unlink()  # the full path agrees
    third = run(book, "figures")
    assert set(statuses(third.stdout).values()) == {"cached"}
    assert "nothing to compute" in third.stdout
    assert run(book, "figures", "--check").returncode == 0


@builds
def test_the_stamp_never_hides_a_change(book: Path) -> None:
    """A saved source, a changed figure file or a new frozen run sends the build down the
    full path, even when the stamp was just written."""
    run(book, "figures")
    assert "no file changed" in run(book, "figures", "--check").stdout
    with open(book / "vitbook/figures/ch92_gamma.py", "a") as f:
        f.write("\nEDITED = True\n")
    proc = run(book, "figures", "--check", check=False)
    assert proc.returncode == 1 and "stale: ch92/gamma" in proc.stdout
    run(book, "figures")
    (book / "figures/ch90/alpha.png").write_bytes(b"damaged")
    proc = run(book, "figures", "--check", check=False)
    assert proc.returncode == 1 and "alpha.png missing or damaged" in proc.stdout


@builds
def test_changing_one_chapter_reruns_only_that_chapter(book: Path) -> None:
    run(book, "figures")
    with open(book / "vitbook/figures/ch90_alpha.py", "a") as f:
        f.write("\nEDITED = True\n")
    assert run(book, "figures", "--check", check=False).returncode == 1
    after = statuses(run(book, "figures").stdout)
    assert after == {
        "ch90/alpha": "computed",
        "ch90/alpha-facts": "computed",
        "ch91/beta": "cached",
        "ch91/beta-facts": "cached",
        "ch92/gamma": "cached",
        "ch92/gamma-facts": "cached",
    }


@builds
def test_changing_a_shared_module_reruns_exactly_its_users(book: Path) -> None:
    run(book, "figures")
    (book / "vitbook/only_b.py").write_text(ONLY_B.replace("return 1", "return 2"))
    after = statuses(run(book, "figures").stdout)
    assert {k for k, s in after.items() if s == "computed"} == {"ch91/beta", "ch91/beta-facts"}
    facts = json.loads((book / "figures/facts.json").read_text())
    assert facts["ch91"]["answer"]["value"] == 43
    (book / "vitbook/shared_for_test.py").write_text(SHARED.replace("41", "40"))
    after = statuses(run(book, "figures").stdout)
    assert {k for k, s in after.items() if s == "computed"} == {
        "ch90/alpha",
        "ch90/alpha-facts",
        "ch91/beta",
        "ch91/beta-facts",
    }


@builds
def test_facts_are_written_by_chapter(book: Path) -> None:
    run(book, "figures")
    facts = json.loads((book / "figures/facts.json").read_text())
    assert facts["ch90"] == {
        "answer": {"text": "41", "value": 41},
        "twice": {"text": "82", "value": 82},
    }
    assert facts["ch92"]["answer"]["value"] == 7


@builds
def test_two_clean_builds_are_byte_identical(book: Path, tmp_path_factory) -> None:
    run(book, "figures")
    first = snapshot(book / "figures")
    shutil.rmtree(book / "figures")
    shutil.rmtree(book / ".cache")
    run(book, "figures")
    assert snapshot(book / "figures") == first
    names = set(first)
    assert {
        "ch90/alpha.png",
        "ch90/alpha.svg",
        "ch90/alpha.dark.png",
        "ch90/alpha.dark.svg",
        "ch90/alpha.phone.png",
        "ch90/alpha.phone.dark.png",
    } <= names
    assert not any(".phone" in n and n.endswith(".svg") for n in names)


@builds
def test_a_deleted_figure_is_redrawn_from_the_cache_without_recomputing(book: Path) -> None:
    run(book, "figures")
    (book / "figures/ch92/gamma.dark.svg").unlink()
    after = statuses(run(book, "figures").stdout)
    assert after["ch92/gamma"] == "redrawn" and after["ch90/alpha"] == "cached"


@builds
def test_a_damaged_cache_entry_is_recomputed_not_trusted(book: Path) -> None:
    run(book, "figures")
    clean = snapshot(book / "figures")
    for entry in (book / ".cache/results").glob("ch90-alpha-*.pkl"):
        entry.write_bytes(entry.read_bytes()[:-5] + b"xxxxx")
    (book / "figures/ch90/alpha.png").write_bytes(b"not a png")
    after = statuses(run(book, "figures").stdout)
    assert after["ch90/alpha"] == "computed"
    assert snapshot(book / "figures") == clean


@pytest.mark.slow
def test_killed_build_leaves_no_partial_file_and_the_next_build_finishes_the_job(
    book: Path,
) -> None:
    run(book, "figures")
    clean = snapshot(book / "figures")
    shutil.rmtree(book / "figures")
    shutil.rmtree(book / ".cache")
    env = book_env(book, {"SLOW": "1.5"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "vitbook", "figures"],
        cwd=book,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while not (book / "figures/ch90/alpha.png").exists() and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = snapshot(book / "figures")
    assert "ch90/alpha.png" in partial and "ch92/gamma.png" not in partial
    for name, blob in partial.items():  # a temporary file may remain; a final one is whole
        if name.endswith((".png", ".svg")) and not name.rsplit("/", 1)[-1].startswith("."):
            assert blob == clean[name], f"{name} is not a complete file"
    resumed = statuses(run(book, "figures").stdout)
    assert resumed["ch92/gamma"] == "computed"
    assert snapshot(book / "figures") == clean  # and the killed build's temp files are gone


@builds
def test_editing_a_draw_function_redraws_without_recomputing(book: Path) -> None:
    run(book, "figures")
    alpha = book / "vitbook/figures/ch90_alpha.py"
    src = alpha.read_text()
    for old, new in (
        ("ax.plot(data)", "ax.plot(data, lw=1)"),  # the draw function
        ("    return name", "    return name.upper()"),  # a private helper only it calls
    ):
        alpha.write_text(src.replace(old, new))
        proc = run(book, "figures", "--check", check=False)
        assert stale_names(proc.stdout) == {"ch90/alpha"}, proc.stdout
        assert "(rendering changed)" in proc.stdout
        after = statuses(run(book, "figures").stdout)
        assert after["ch90/alpha"] == "redrawn" and after["ch90/alpha-facts"] == "cached", after
        assert run(book, "figures", "--check", check=False).returncode == 0
        src = alpha.read_text()
    # a comment in the house style changes no key; its code (vitbook/plot.py, DRAWING_ONLY)
    # redraws every figure and recomputes nothing
    with open(book / "vitbook/plot.py", "a") as f:
        f.write("\n# a note on the style\n")
    assert run(book, "figures", "--check", check=False).returncode == 0
    with open(book / "vitbook/plot.py", "a") as f:
        f.write("\nRESTYLED = True\n")
    after = statuses(run(book, "figures").stdout)
    assert after == {k: "redrawn" if "facts" not in k else "cached" for k in ALL}, after
    # the compute function recomputes
    alpha.write_text(src.replace("return [1, 3, 2,", "return [1, 3, 3,"))
    after = statuses(run(book, "figures").stdout)
    assert after["ch90/alpha"] == "computed" and after["ch91/beta"] == "cached"


@builds
def test_every_figure_has_phone_files_with_readable_text(book: Path) -> None:
    run(book, "figures")
    manifest = json.loads((book / "figures/manifest.json").read_text())
    entry = manifest["ch90/alpha"]
    for name in ("ch90/alpha.phone.png", "ch90/alpha.phone.dark.png"):
        assert name in entry["files"]
        assert entry["text"][name]["width_in"] == 3.8
        assert entry["text"][name]["min_font_pt"] >= 8
    from PIL import Image

    with Image.open(book / "figures/ch90/alpha.phone.png") as im:
        assert im.width == round(3.8 * 150)


def test_compute_source_leaves_out_drawing_code(tmp_path: Path, monkeypatch) -> None:
    from vitbook.engine import deps

    body = """
from x import figure

def _style():
    return "bold"

def _shared():
    return 1

@figure(chapter=1, id="a", size=(1, 1), phone_size=(3.8, 2.5))
def fig(rec):
    return _shared()

@fig.draw
def _(data, v):
    return _style() + str(_shared())

@fig.export(parts=["p-1"])
def _(data):
    return data + 1
"""
    monkeypatch.syspath_prepend(str(tmp_path))

    def source(text: str, n=[0]) -> bytes:  # noqa: B006 - a counter: a fresh module each call
        n[0] += 1
        (tmp_path / f"vbtest_cs_{n[0]}.py").write_text(text)
        return deps.compute_source(f"vbtest_cs_{n[0]}")

    base = source(body)
    same = {
        "the draw function": body.replace("str(_shared())", "'x'"),
        "the export function, which has parts": body.replace("data + 1", "data + 2"),
        "a private helper only drawing calls": body.replace('"bold"', '"italic"'),
        "the sizes": body.replace("(1, 1)", "(2, 2)").replace("2.5", "4"),
        "a comment and formatting": body.replace("return 1", "return (\n  1  # one\n)"),
    }
    for what, text in same.items():
        assert source(text) == base, f"editing {what} changed the compute key"
    changed = {
        "the compute function": body.replace("return _shared()", "return _shared() + 1"),
        "a helper compute calls": body.replace("return 1", "return 2"),
        "the figure's id": body.replace('id="a"', 'id="b"'),
    }
    for what, text in changed.items():
        assert source(text) != base, f"editing {what} left the compute key as it was"
    (tmp_path / "vbtest_cs_only.py").write_text("DRAWING_ONLY = True\nX = 1\n")
    assert deps.compute_source("vbtest_cs_only") == b""


def test_cli_rejects_bad_input_with_status_2_and_the_valid_choices(book: Path) -> None:
    proc = run(book, "figures", "--chapter", "3", check=False)
    assert proc.returncode == 2 and "chapters with figures: 90, 91, 92" in proc.stderr
    proc = run(book, "figures", "--only", "ch90/nope", check=False)
    assert proc.returncode == 2 and "ch90/alpha" in proc.stderr
    proc = run(book, "figures", "--jobs", "0", check=False)
    assert proc.returncode == 2 and "--jobs" in proc.stderr
    assert "Traceback" not in proc.stderr


@builds
def test_parallel_build_gives_the_same_bytes(book: Path) -> None:
    run(book, "figures")
    clean = snapshot(book / "figures")
    shutil.rmtree(book / "figures")
    shutil.rmtree(book / ".cache")
    run(book, "figures", "--jobs", "2")
    assert snapshot(book / "figures") == clean


def test_committed_figures_are_up_to_date() -> None:
    """figures/ in the repository matches the code: nothing in it is stale."""
    proc = subprocess.run(
        [sys.executable, "-m", "vitbook", "figures", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, VITBOOK_FIGURES=str(ROOT / "figures")),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- What "up to date" means: every input that can change a result is in the key -------------


ALL = {
    "ch90/alpha",
    "ch90/alpha-facts",
    "ch91/beta",
    "ch91/beta-facts",
    "ch92/gamma",
    "ch92/gamma-facts",
}

PILLOW_99 = """
from vitbook.engine import deps
real = deps.library_version
deps.library_version = lambda dist: "99.0" if dist == "pillow" else real(dist)
"""

EIGHT_THREADS = """
from vitbook.engine import runtime
runtime.THREADS = 8
"""


@builds
def test_another_pillow_or_thread_count_stops_the_check_with_one_message(book: Path) -> None:
    """Library versions, threads and device are not in the keys but recorded with every item:
    where they differ from what is installed, the check stops at once and names them."""
    run(book, "figures")
    assert check_with(book, "").returncode == 0
    for patch, line in (
        (PILLOW_99, "pillow: installed 99.0"),
        (EIGHT_THREADS, "threads: installed 8"),
    ):
        proc = check_with(book, patch)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert line in proc.stderr and not stale_names(proc.stdout), proc.stdout + proc.stderr


@builds
def test_the_threads_are_pinned_whatever_jobs_is(book: Path) -> None:
    probe = MODULE.replace(
        'rec.fact("answer", {expr})',
        'import torch\n    rec.fact("answer", {expr})\n'
        '    rec.fact("threads", torch.get_num_threads())',
    )
    (book / "vitbook/figures/ch92_gamma.py").write_text(
        probe.format(ch=92, id="gamma", imports="", expr="7")
    )
    for jobs in ("1", "2"):
        shutil.rmtree(book / "figures", ignore_errors=True)
        run(book, "figures", "--jobs", jobs, "--chapter", "92", "--force")
        facts = json.loads((book / "figures/facts.json").read_text())
        assert facts["ch92"]["threads"]["value"] == 1, f"--jobs {jobs}"


@builds
def test_a_change_to_fact_formatting_recomputes_every_item_never_reusing_old_facts(
    book: Path,
) -> None:
    run(book, "figures")
    registry = book / "vitbook/engine/registry.py"
    src = registry.read_text()
    assert 'text = f"{value:,}"' in src
    registry.write_text(src.replace('text = f"{value:,}"', 'text = f"{value:,} (new)"'))
    proc = run(book, "figures", "--check", check=False)
    assert proc.returncode == 1 and stale_names(proc.stdout) == ALL, proc.stdout
    after = statuses(run(book, "figures").stdout)
    assert set(after.values()) == {"computed"}  # not "redrawn" from a cached result
    facts = json.loads((book / "figures/facts.json").read_text())
    assert facts["ch90"]["answer"]["text"] == "41 (new)"


@builds
def test_a_change_to_svg_post_processing_redraws_figures_only(book: Path) -> None:
    run(book, "figures")
    build_py = book / "vitbook/engine/build.py"
    src = build_py.read_text()
    assert 'text = f"{float(m.group()):.2f}"' in src
    build_py.write_text(src.replace(":.2f}", ":.3f}"))
    proc = run(book, "figures", "--check", check=False)
    assert stale_names(proc.stdout) == {"ch90/alpha", "ch91/beta", "ch92/gamma"}, proc.stdout
    assert "(rendering changed)" in proc.stdout
    after = statuses(run(book, "figures").stdout)
    assert after["ch90/alpha"] == "redrawn" and after["ch90/alpha-facts"] == "cached"


@builds
def test_editing_the_command_line_or_the_cache_code_changes_no_key(book: Path) -> None:
    run(book, "figures")
    for name in ("cli.py", "cache.py", "__init__.py"):
        with open(book / "vitbook/engine" / name, "a") as f:
            f.write("\n# an edit that shapes no result\n")
    assert run(book, "figures", "--check", check=False).returncode == 0


RUN_MODULE = """
from vitbook.engine import cached

@cached
def train(epochs: int = 500, seed: int = 0) -> int:
    return epochs + seed
"""

RUN_CHAPTER = """
from vitbook import plot
from vitbook.engine import figure
from vitbook.runs_for_test import train

@figure(chapter=93, id="delta", size=(3.0, 2.0))
def fig(rec):
    rec.fact("result", train(epochs=500) + train(500) + train())
    return [1, 2]

@fig.draw
def _(data, v):
    fig, ax = plot.subplots(v)
    ax.plot(data, color="{colour}")
    return fig
"""


def run_report(stdout: str) -> list[tuple[str, str]]:
    """The build report's training-run lines as (run, "trained" or "frozen")."""
    return [
        (line.split()[1], line.split()[2])
        for line in stdout.splitlines()
        if line.strip().startswith("run ")
    ]


def frozen_files(book: Path, run: str = "*") -> list[str]:
    return sorted(p.name for p in (book / "frozen").glob(f"{run}/*") if p.is_file())


@builds
def test_a_cached_run_is_keyed_by_its_code_and_bound_arguments_not_by_its_caller(
    book: Path,
) -> None:
    (book / "vitbook/runs_for_test.py").write_text(RUN_MODULE)
    chapter = book / "vitbook/figures/ch93_delta.py"
    chapter.write_text(RUN_CHAPTER.format(colour="C0"))
    first = run(book, "figures", "--chapter", "93")
    assert run_report(first.stdout) == [("train", "trained")]
    # f(500), f(epochs=500), f() are one record, named by the bound arguments; no pickle
    assert frozen_files(book) == ["epochs=500,seed=0.json"]
    chapter.write_text(RUN_CHAPTER.format(colour="C1"))  # a colour change must not retrain
    second = run(book, "figures", "--chapter", "93")
    assert statuses(second.stdout)["ch93/delta"] == "redrawn"  # nor even recompute
    assert run_report(second.stdout) == []
    chapter.write_text(RUN_CHAPTER.format(colour="C1").replace("[1, 2]", "[2, 1]"))
    second = run(book, "figures", "--chapter", "93")
    assert statuses(second.stdout)["ch93/delta"] == "computed"
    assert run_report(second.stdout) == [("train", "frozen")]
    (book / "vitbook/runs_for_test.py").write_text(RUN_MODULE.replace("epochs + seed", "epochs"))
    third = run(book, "figures", "--chapter", "93")
    assert run_report(third.stdout) == [("train", "trained")]


def test_cached_binds_arguments_with_defaults(tmp_path: Path, monkeypatch) -> None:
    from vitbook.engine import cached

    monkeypatch.setenv("VITBOOK_FROZEN", str(tmp_path / "frozen"))
    monkeypatch.setenv("VITBOOK_CACHE", str(tmp_path / "cache"))
    calls = []

    def train(epochs: int = 500, seed: int = 0) -> int:
        calls.append((epochs, seed))
        return epochs + seed

    f = cached(train)
    assert f(500) == f(epochs=500) == f() == f(500, 0) == f(seed=0, epochs=500) == 500
    assert calls == [(500, 0)]
    assert f(epochs=501) == 501 and f(500, seed=1) == 501
    assert calls == [(500, 0), (501, 0), (500, 1)]
    assert len(list((tmp_path / "frozen").glob("*/*.json"))) == 3


def test_the_report_counts_every_call_of_a_run_and_keeps_nested_runs_apart(
    tmp_path: Path, monkeypatch
) -> None:
    """``cache.RUNS`` (the build report's run lines): per run function, its own seconds (a run
    it calls is counted under that run, not twice), its calls and how many trained."""
    from vitbook.engine import cache

    monkeypatch.setenv("VITBOOK_FROZEN", str(tmp_path / "frozen"))
    monkeypatch.setenv("VITBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "RUNS", {})
    clock = [0.0]
    monkeypatch.setattr(cache.time, "perf_counter", lambda: clock[0])

    def pretrain() -> int:
        clock[0] += 5.0
        return 1

    inner = cache.cached(pretrain)

    def finetune(seed: int) -> int:
        clock[0] += 1.0
        return inner() + seed

    outer = cache.cached(finetune)
    assert [outer(seed=s) for s in (0, 1, 2, 0)] == [1, 2, 3, 1]
    runs = {name.rsplit(".", 1)[-1]: row for name, row in cache.RUNS.items()}
    assert runs == {"pretrain": (5.0, 3, 1), "finetune": (3.0, 4, 3)}


def test_the_engine_imports_nothing_of_the_book() -> None:
    """The engine runs functions and stores what they return: no page macros or hooks
    (``vitbook.site``), no Vision Transformer (``vitbook.model``, ``analysis``...)."""
    import ast

    outside = []
    for path in sorted((ROOT / "vitbook/engine").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            outside += [
                f"{path.name}: {n}"
                for n in names
                if n.split(".")[0] == "vitbook" and not n.startswith("vitbook.engine")
            ]
    assert not outside, outside


@builds
def test_a_source_saved_during_the_build_fails_its_items_and_stores_nothing(book: Path) -> None:
    shared = book / "vitbook" / "shared_for_test.py"
    proc = run(book, "figures", env={"EDIT": str(shared)}, check=False)
    assert proc.returncode != 0
    st = statuses(proc.stdout)
    # alpha and beta import the file that changed under them; gamma does not
    assert st["ch90/alpha"] == "failed" and st["ch91/beta"] == "failed"
    assert st["ch92/gamma"] == "computed"
    assert "changed during the build" in proc.stdout + proc.stderr
    assert not list((book / ".cache/results").glob("ch90-alpha-*.pkl"))
    manifest = json.loads((book / "figures/manifest.json").read_text())
    assert "ch90/alpha" not in manifest and "ch91/beta" not in manifest
    again = statuses(run(book, "figures").stdout)  # nothing edits the sources now
    assert again["ch90/alpha"] == "computed" and again["ch92/gamma"] == "cached"
    assert "up to date" in run(book, "figures", "--check").stdout


DEFER_CHAPTER = """
from vitbook.engine import facts
from vitbook.runs_for_test import train

@facts(chapter=94, id="a1")
def a1(rec):
    rec.fact("a1", train())

@facts(chapter=94, id="a2")
def a2(rec):
    rec.fact("a2", train() + 1)

@facts(chapter=94, id="b")
def b(rec):
    rec.fact("b", 3)
"""

HOLD_THE_RUN = """
import fcntl, json, threading
from vitbook.engine import build, cache
from vitbook.runs_for_test import train

lock = cache.cache_dir() / "locks" / train.name / "epochs=500,seed=0.lock"
lock.parent.mkdir(parents=True, exist_ok=True)
held = open(lock, "a+b")
fcntl.flock(held, fcntl.LOCK_EX)  # as if another process were training train()
release = lambda: fcntl.flock(held, fcntl.LOCK_UN)
order = []

def on_done(outcome):
    order.append(outcome.key)
    release()  # the training "finishes" when the first item is done

fallback = threading.Timer(300, release)  # without deferral both workers would wait forever
fallback.start()
outcomes = build.build(["ch94/a1", "ch94/a2", "ch94/b"], jobs=2, on_done=on_done)
fallback.cancel()
print(json.dumps({"order": order, "status": [o.status for o in outcomes]}))
"""


@builds
def test_an_item_waiting_for_a_run_lets_the_others_go_first(book: Path) -> None:
    """With two workers and two items that need a run another process is training, the third
    item is built first: the waiting ones are put back instead of holding both workers."""
    (book / "vitbook/runs_for_test.py").write_text(RUN_MODULE)
    (book / "vitbook/figures/ch94_defer.py").write_text(DEFER_CHAPTER)
    proc = subprocess.run(
        [sys.executable, "-c", HOLD_THE_RUN],
        cwd=book, env=book_env(book), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["order"][0] == "ch94/b"
    assert sorted(out["order"]) == ["ch94/a1", "ch94/a2", "ch94/b"]
    assert out["status"] == ["computed"] * 3
    facts = json.loads((book / "figures/facts.json").read_text())["ch94"]
    assert [facts[k]["value"] for k in ("a1", "a2", "b")] == [500, 501, 3]
