"""Frozen runs (``frozen/``, vitbook/engine/frozen.py): stored without pickles, the same bytes
for the same run, keyed so that keys compose, and a build that trains nothing when every run
is frozen.

The build tests run the real command line on the scratch project of tests/test_engine.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scratch import book_env, builds, run, stale_names, statuses

from vitbook.engine import frozen
from vitbook.model import VisionTransformer, ViTConfig
from vitbook.train import History

ROOT = Path(__file__).resolve().parents[1]


# --- the codec --------------------------------------------------------------------------------


def sample_result() -> dict:
    torch.manual_seed(0)
    model = VisionTransformer(
        cfg=ViTConfig(image_size=8, patch_size=4, in_chans=1, dim=8, depth=1, heads=2,
                      num_classes=3)
    )  # fmt: skip
    model.eval()
    hist = History(train_loss=[1.5, 0.25], test_acc=[0.5, float("nan")], seconds=12.5)
    return {
        "model": model,
        "history": hist,
        "hit": np.array([True, False, True]),
        "scores": np.array([0.25, 0.5], dtype=np.float32),
        "scalar": np.float64(0.1),
        "pair": (1, "two"),
        "by_size": {100: 0.5, 400: 0.75},
        "inf": float("inf"),
        "seconds": 3.25,
        "nested": [{"seconds": 1.0, "acc": 0.9}],
    }


def roundtrip(value):
    enc = frozen.Encoder()
    text = frozen.canonical(enc(value))
    blob = frozen.tensor_bytes(enc.tensors)
    back = frozen.decode(json.loads(text), frozen.tensors_from(blob), enc.measured)
    return text, blob, enc.measured, back


def test_a_result_round_trips_exactly() -> None:
    value = sample_result()
    _, _, measured, back = roundtrip(value)
    assert isinstance(back["model"], VisionTransformer) and not back["model"].training
    for k, v in value["model"].state_dict().items():
        assert torch.equal(back["model"].state_dict()[k], v), k
    x = torch.randn(2, 1, 8, 8)
    assert torch.equal(back["model"](x), value["model"](x))
    assert back["history"].train_loss == [1.5, 0.25] and math.isnan(back["history"].test_acc[1])
    assert back["history"].seconds == 12.5  # a timing comes back from the measured part
    assert back["hit"].dtype == bool and back["hit"].tolist() == [True, False, True]
    assert back["scores"].dtype == np.float32 and back["scores"].tolist() == [0.25, 0.5]
    assert type(back["scalar"]) is np.float64 and back["scalar"] == np.float64(0.1)
    assert back["pair"] == (1, "two") and back["by_size"] == {100: 0.5, 400: 0.75}
    assert back["inf"] == float("inf")
    assert measured == {"/seconds": 3.25, "/history/seconds": 12.5, "/nested/0/seconds": 1.0}


def test_the_same_result_gives_the_same_bytes_and_timings_stay_apart() -> None:
    a, blob_a, _, _ = roundtrip(sample_result())
    slower = sample_result()
    slower["seconds"] = 99.0
    slower["history"].seconds = 1.0
    b, blob_b, measured, _ = roundtrip(slower)
    assert a == b and blob_a == blob_b and blob_a  # the weights are in the tensor file
    assert measured["/seconds"] == 99.0
    assert "12.5" not in a and "3.25" not in a  # no timing in the result's bytes
    assert "pickle" not in a


def test_what_cannot_be_frozen_is_refused_with_a_reason() -> None:
    with pytest.raises(TypeError, match="cannot freeze a object"):
        frozen.Encoder()({"x": object()})
    with pytest.raises(TypeError, match="init_kwargs"):
        frozen.Encoder()(torch.nn.Linear(2, 2))
    forged = {"__dataclass__": "collections:OrderedDict", "fields": {}}
    with pytest.raises(TypeError, match="only the project's own classes"):
        frozen.decode(forged, {}, {})


def test_record_names_come_from_the_arguments() -> None:
    assert frozen.slug({"seed": 0, "arm": "cnn", "n_train": 100}) == "arm=cnn,n_train=100,seed=0"
    assert frozen.slug({"lr": 0.001, "models": ("vit", "cnn")}) == "lr=0.001,models=vit+cnn"
    assert frozen.slug({"name": "a/b"}).startswith("args-")  # never a path
    assert frozen.slug({"name": "a/b"}) != frozen.slug({"name": "a/c"})


# --- keys that compose -------------------------------------------------------------------------

EXPERIMENT = """
def run(seed: int = 0) -> dict:
    return {{"value": {value} + seed, "seconds": 0.5}}
"""

FINETUNE = """
def finetune(pre: int, seed: int = 0) -> dict:
    return {"value": pre * 10 + seed}
"""

RUNS = """
from vitbook.engine import cached
from vitbook import exp_a, exp_b, exp_c

KEYED_BY_RUNS = True

pre = cached(exp_a.run, portable={portable})


def _pre():
    return pre()["value"]


tuned = cached(exp_c.finetune, given={{"pre": _pre}})
other = cached(exp_b.run)
"""

CHAPTERS = {
    "ch95_tuned.py": """
from vitbook.engine import facts
from vitbook import runs_test

@facts(chapter=95, id="tuned", trained=True)
def tuned(rec):
    rec.fact("tuned", runs_test.tuned(seed=1)["value"])
""",
    "ch96_other.py": """
from vitbook.engine import facts
from vitbook import runs_test

@facts(chapter=96, id="other", trained=True)
def other(rec):
    rec.fact("other", runs_test.other()["value"])
""",
}


def runs_book(book: Path, portable: bool = False) -> Path:
    (book / "vitbook/exp_a.py").write_text(EXPERIMENT.format(value=1))
    (book / "vitbook/exp_b.py").write_text(EXPERIMENT.format(value=2))
    (book / "vitbook/exp_c.py").write_text(FINETUNE)
    (book / "vitbook/runs_test.py").write_text(RUNS.format(portable=portable))
    for name, text in CHAPTERS.items():
        (book / "vitbook/figures" / name).write_text(text)
    return book


def frozen_bytes(book: Path) -> dict[str, bytes]:
    return {p.relative_to(book / "frozen").as_posix(): p.read_bytes()
            for p in sorted((book / "frozen").rglob("*.json"))}  # fmt: skip


@builds
def test_a_consumed_runs_new_key_makes_its_consumers_stale(book: Path) -> None:
    runs_book(book)
    run(book, "figures", "--chapter", "95", "--chapter", "96")
    facts = json.loads((book / "figures/facts.json").read_text())
    assert facts["ch95"]["tuned"]["value"] == 11 and facts["ch96"]["other"]["value"] == 2
    manifest = json.loads((book / "figures/manifest.json").read_text())
    (consumed,) = manifest["ch95/tuned"]["consumed"]  # what the item read, with its key
    assert consumed["run"] == "vitbook.exp_c.finetune" and consumed["slug"] == "seed=1"
    tuned = json.loads((book / "frozen/vitbook.exp_c.finetune/seed=1.json").read_text())
    assert [c["run"] for c in tuned["consumed"]] == ["vitbook.exp_a.run"]  # a run in a run
    # the pre-training's code changes: the run that consumed it and the item that read that
    # run are stale, though neither's own code changed (finetune's module does not import
    # exp_a); the other chapter is not
    (book / "vitbook/exp_a.py").write_text(EXPERIMENT.format(value=3))
    proc = run(book, "figures", "--check", "--chapter", "95", "--chapter", "96", check=False)
    assert stale_names(proc.stdout) == {"ch95/tuned"}, proc.stdout
    assert "(run finetune(seed=1) changed)" in proc.stdout
    again = run(book, "figures", "--chapter", "95", "--chapter", "96")
    assert statuses(again.stdout) == {"ch95/tuned": "computed", "ch96/other": "cached"}
    facts = json.loads((book / "figures/facts.json").read_text())
    assert facts["ch95"]["tuned"]["value"] == 31


@builds
def test_the_portable_settings_are_in_the_key_of_every_consumer(book: Path) -> None:
    runs_book(book, portable=True)
    run(book, "figures", "--chapter", "95")
    patch = "from vitbook.engine import portable\nportable.ENV['MKL_CBWR'] = 'AVX2'"
    code = (
        f"import sys\n{patch}\nfrom vitbook.engine.cli import main\n"
        "sys.exit(main(['figures', '--check', '--chapter', '95']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=book, env=book_env(book),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 1 and "(run finetune(seed=1) changed)" in proc.stdout, proc.stdout


@builds
def test_editing_one_experiment_leaves_the_other_experiments_keys_alone(book: Path) -> None:
    runs_book(book)
    run(book, "figures", "--chapter", "95", "--chapter", "96")
    before = frozen_bytes(book)
    with open(book / "vitbook/exp_b.py", "a") as f:
        f.write("\nUNUSED = 1\n")  # code, not a comment
    proc = run(book, "figures", "--check", "--chapter", "95", "--chapter", "96", check=False)
    assert stale_names(proc.stdout) == {"ch96/other"}, proc.stdout
    run(book, "figures", "--chapter", "95", "--chapter", "96")
    after = frozen_bytes(book)
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"vitbook.exp_b.run/seed=0.json"}  # the pre-training and finetune: same


@builds
def test_a_run_function_must_live_outside_the_module_that_declares_runs(tmp_path: Path) -> None:
    """Its key would cover every experiment that module imports (the measured defect)."""
    (tmp_path / "declares.py").write_text("KEYED_BY_RUNS = True\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import declares

        from vitbook.engine import cached

        def train(seed: int = 0) -> int:
            return seed

        train.__module__ = "declares"
        with pytest.raises(TypeError, match="in its own module"):
            cached(train)
        del declares
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("declares", None)


@builds
def test_a_docstring_or_comment_retrains_nothing(book: Path) -> None:
    runs_book(book)
    run(book, "figures", "--chapter", "95")
    (book / "vitbook/exp_a.py").write_text(
        '"""The experiment, explained at last."""\n# a note\n' + EXPERIMENT.format(value=1)
    )
    assert run(book, "figures", "--check", "--chapter", "95").returncode == 0


@builds
def test_the_command_line_works_from_a_subfolder(book: Path) -> None:
    runs_book(book)
    run(book, "figures", "--chapter", "95")
    (book / "docs").mkdir()
    env = {k: v for k, v in book_env(book).items() if not k.startswith("VITBOOK_")}
    proc = subprocess.run(
        [sys.executable, "-m", "vitbook", "figures", "--check", "--chapter", "95"],
        cwd=book / "docs", env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"1 of 1 items up to date in {book / 'figures'}/" in proc.stdout
    assert not (book / "docs/figures").exists() and not (book / "docs/.cache").exists()


@builds
def test_a_clean_clone_builds_every_item_from_frozen_runs_and_trains_nothing(book: Path) -> None:
    runs_book(book)
    run(book, "figures")
    shutil.rmtree(book / ".cache")  # what a clone has: figures/ and frozen/, no local cache
    proc = run(book, "verify", "--jobs", "2")
    assert "0 differ" in proc.stdout and " trained " not in proc.stdout, proc.stdout
    # a run that is not frozen fails the items that need it, with the fix in the message
    (book / "frozen/vitbook.exp_c.finetune/seed=1.json").unlink()
    proc = run(book, "verify", "--chapter", "95", check=False)
    assert proc.returncode == 1
    assert "is not frozen for this code" in proc.stderr and "commit frozen/" in proc.stderr


@builds
def test_a_whole_build_removes_the_frozen_runs_nothing_reads_any_more(book: Path) -> None:
    runs_book(book)
    run(book, "figures")
    chapter = book / "vitbook/figures/ch96_other.py"
    chapter.write_text(CHAPTERS["ch96_other.py"].replace("other()", "other(seed=3)"))
    run(book, "figures", "--chapter", "96")  # one chapter: nothing is removed yet
    assert (book / "frozen/vitbook.exp_b.run/seed=0.json").exists()
    run(book, "figures")
    assert sorted(p.name for p in (book / "frozen/vitbook.exp_b.run").iterdir()) == ["seed=3.json"]
    assert (book / "frozen/vitbook.exp_a.run/seed=0.json").exists()  # read by a run, kept


@builds
def test_verify_runs_retrains_and_finds_the_same_bits(book: Path) -> None:
    runs_book(book)
    run(book, "figures")
    proc = run(book, "verify", "--runs", "--jobs", "2")
    assert "3 runs: 3 identical" in proc.stdout, proc.stdout
    # a frozen result that training does not give, and that the book prints, is found
    path = book / "frozen/vitbook.exp_b.run/seed=0.json"
    record = json.loads(path.read_text())
    record["result"]["value"] = 5
    path.write_text(frozen.seal(record))
    run(book, "figures")
    proc = run(book, "verify", "--runs", check=False)
    assert proc.returncode == 1 and "1 differ" in proc.stdout, proc.stdout


def test_shards_cover_every_run_once_and_stay_within_the_budget() -> None:
    from vitbook.engine.verify import plan_shards, split_shards

    records = [
        {"run": f"r{i}", "args": {"seed": i}, "seconds": s}
        for i, s in enumerate([100, 90, 80, 40, 40, 30, 10, 5, 5])
    ]
    shards = plan_shards(records, budget=50, jobs=2)
    assert len(shards) == 4  # 400 s in shards of 2 x 50 s
    assert len(split_shards(records, 3)) == 3
    flat = [r["run"] for shard in shards for r in shard]
    assert sorted(flat) == sorted(r["run"] for r in records)  # each run exactly once
    loads = [sum(r["seconds"] for r in shard) for shard in shards]
    assert max(loads) - min(loads) <= 100  # the longest run bounds the imbalance


def test_the_books_frozen_runs_are_current_and_small() -> None:
    """Every frozen run of the book is current for this code, the store holds no pickle, and
    all of it stays under 25 MB."""
    proc = subprocess.run(
        [sys.executable, "-m", "vitbook", "runs"], cwd=ROOT, capture_output=True, text=True,
        timeout=600, env=dict(os.environ),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    files = [p for p in (ROOT / "frozen").rglob("*") if p.is_file()]
    assert files and {p.suffix for p in files} <= {".json", ".safetensors"}
    assert sum(p.stat().st_size for p in files) <= 25 * 1024 * 1024


def test_the_building_page_names_the_runs_left_out_of_the_rotation() -> None:
    """docs/building.md says which runs only the weekly verification retrains: counted by their
    function from the records, so the sentence follows a re-recorded time (it once said "the
    pre-trainings" when 17 of the 22 were transfer runs)."""
    import re

    from vitbook.engine.cli import SHARD_BUDGET_S
    from vitbook.site import macros

    summary = macros.frozen_summary(ROOT / "frozen")
    counts = re.findall(r"(\d+) of `(\w+)`", summary.long_kinds.text)
    records = [json.loads(p.read_text()) for p in (ROOT / "frozen").glob("*/*.json")]
    long = [r["run"].rsplit(".", 1)[-1] for r in records if r["seconds"] > SHARD_BUDGET_S]
    assert sorted((fn, int(n)) for n, fn in counts) == sorted(
        (fn, long.count(fn)) for fn in set(long)
    )
    assert sum(int(n) for n, _ in counts) == summary.long_runs.value > 0
