"""Reproducibility: what the engine computes does not depend on how it is called, on undeclared
files or environment variables, and a rebuild is judged by stated rules.

* An item called directly (``item()``, as a notebook would) records the facts the engine does.
* Figure and data modules read no file and no environment variable they do not declare.
* ``vitbook.engine.verify``'s rules: exact bytes and printed text for deterministic items,
  ``tol`` for training results, nothing for timings.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vitbook.engine import verify
from vitbook.engine.registry import chapter_modules, discover

#: Tests that run a build in a subprocess (seconds each) belong to the full tier (CI's),
#: not to the quick one (`-m "not slow"`).
builds = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# --- a direct call records the engine's facts -----------------------------------------------

RANDOM_CHAPTER = """
import random
import numpy as np
import torch
from vitbook.engine import facts

@facts(chapter=95, id="draws")
def draws(rec):
    rec.fact("py", random.random())
    rec.fact("np", float(np.random.rand()))
    rec.fact("torch", torch.rand(1).item())
    rec.fact("torch_sum", float(torch.randn(1000).sum()))
    rec.fact("threads", torch.get_num_threads())
"""

DIRECT = """
import json, random, sys
import numpy as np
import torch
random.random(); np.random.rand(5); torch.rand(7)  # a notebook that has drawn numbers before
torch.set_num_threads(2)
from vitbook.engine import Recorder
from vitbook.figures.ch95_draws import draws

rec = Recorder(95)
draws(rec)
print(json.dumps({"facts": rec.facts, "threads_after": torch.get_num_threads()}))
"""


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """vitbook without the book's chapters, plus chapter 95 above."""
    shutil.copytree(
        ROOT / "vitbook",
        tmp_path / "vitbook",
        ignore=shutil.ignore_patterns("__pycache__", "ch[0-9][0-9]_*.py"),
    )
    (tmp_path / "vitbook/figures/ch95_draws.py").write_text(RANDOM_CHAPTER)
    return tmp_path


def _python(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PYTHONPATH=str(cwd),
        VITBOOK_FIGURES=str(cwd / "figures"),
        VITBOOK_CACHE=str(cwd / ".cache"),
    )
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@builds
def test_a_direct_call_seeds_and_pins_threads_like_the_engine(scratch: Path) -> None:
    _python(scratch, "-m", "vitbook", "figures")
    engine = json.loads((scratch / "figures/facts.json").read_text())["ch95"]
    direct = json.loads(_python(scratch, "-c", DIRECT).stdout)
    assert direct["facts"] == engine
    assert engine["threads"]["value"] == 1
    assert direct["threads_after"] == 2  # the notebook's own setting is given back


DIRECT_CHAPTER = """
import json, sys
from vitbook.engine import Recorder
from vitbook.engine.registry import chapter_modules, discover
out = {}
for key in sys.argv[1:]:
    item = discover([int(key[2:4])])[key]
    rec = Recorder(item.chapter)
    item(rec)
    out[key] = rec.facts
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("chapter", sorted(set(chapter_modules().values())))
def test_every_item_called_directly_records_the_committed_facts(chapter: int) -> None:
    """In a fresh process, as a notebook would: ``item()`` for every item of the chapter, one
    after the other; the facts equal the engine's (committed) ones under the rules of
    ``vitbook.engine.verify`` (same printed text, value within VALUE_RTOL). Left out: trained
    items (their runs may have to train first; ``tests/test_book_build.py`` checks them) and
    measured ones (timings)."""
    items = discover([chapter])
    keys = [k for k, i in items.items() if i.deterministic and not i.trained]
    if not keys:
        pytest.skip(f"chapter {chapter} has only trained or measured items")
    proc = subprocess.run(
        [sys.executable, "-c", DIRECT_CHAPTER, *keys],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    direct = json.loads(proc.stdout.strip().splitlines()[-1])
    committed = json.loads((ROOT / "figures/manifest.json").read_text())
    problems = []
    for key in keys:
        engine = committed[key]["facts"]
        assert sorted(direct[key]) == sorted(engine), key
        for name in engine:
            problem = verify.compare_fact(name, engine[name], direct[key][name])
            if problem:
                problems.append(f"{key}: {problem}")
    assert not problems, "\n".join(problems)


# --- no undeclared file reads or environment lookups -------------------------------------

#: Calls that read a file (by the called name's last part) or load code by name.
READS = {
    "open", "read_text", "read_bytes", "load", "loadtxt", "genfromtxt", "fromfile", "memmap",
    "load_file", "imread", "read_csv", "import_module", "spec_from_file_location",
    "__import__", "run_path", "run_module", "getenv", "putenv",
}  # fmt: skip
#: Names that are not file reads although they end like one (a model's state dict...).
NOT_READS = {"load_state_dict"}


def _called_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return ""


def outside_reads(source: str, declared: set[str]) -> list[str]:
    """File reads, code loads and environment lookups in ``source`` that do not name one of the
    ``declared`` files (by its base name, in the call's own text)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Call):
            name = _called_name(node)
            if name in READS and name not in NOT_READS:
                text = ast.get_source_segment(source, node) or ""
                if not any(Path(d).name in text for d in declared):
                    what = f"{name}(...)"
        elif isinstance(node, ast.Attribute) and node.attr in ("environ", "environb"):
            what = "os.environ"
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(a.name in ("environ", "getenv") for a in node.names):
                what = "from os import environ/getenv"
        if what:
            found.append((node.lineno, f"line {node.lineno}: {what}"))
    return [text for _, text in sorted(found)]


def _declared(path: Path) -> set[str]:
    """Files declared in ``path``: items' ``inputs=(...)`` and a module-level ``INPUTS``."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "inputs":
            out.update(ast.literal_eval(node.value))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "INPUTS" for t in node.targets
        ):
            out.update(ast.literal_eval(node.value))
    return out


SCANNED = sorted(
    [*(ROOT / "vitbook/figures").glob("ch*.py"), *(ROOT / "vitbook/data").glob("*.py")]
    + [ROOT / "vitbook/runs.py"]
)


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_modules_read_only_declared_files_and_no_environment(path: Path) -> None:
    found = outside_reads(path.read_text(), _declared(path))
    assert not found, (
        f"{path.relative_to(ROOT)} reads what its key does not cover: {found}. Declare data "
        "files on the item (@figure(..., inputs=('vitbook/data/x.npz',))) or, in a data "
        "module, in a module-level INPUTS list; compute without environment variables."
    )


def test_the_scan_finds_undeclared_reads_and_accepts_declared_ones() -> None:
    src = """
import os, importlib
import numpy as np
from pathlib import Path

def f():
    a = np.load("vitbook/data/table.npz")
    b = Path(__file__).with_name("face.png").read_bytes()
    c = open("notes.txt").read()
    d = os.environ.get("SCALE", "1")
    e = importlib.import_module("vitbook." + name)
    model.load_state_dict(sd)
"""
    found = outside_reads(src, {"vitbook/data/table.npz"})
    assert [f.split(": ")[1] for f in found] == [
        "read_bytes(...)",
        "open(...)",
        "os.environ",
        "import_module(...)",
    ]
    assert len(outside_reads(src, {"table.npz", "face.png", "notes.txt"})) == 2


@builds
def test_a_declared_input_is_part_of_the_key(tmp_path: Path) -> None:
    """``inputs=`` on an item and ``INPUTS`` in a data module: editing the file makes the
    items that read it stale, and only those."""
    shutil.copytree(
        ROOT / "vitbook",
        tmp_path / "vitbook",
        ignore=shutil.ignore_patterns("__pycache__", "ch[0-9][0-9]_*.py"),
    )
    (tmp_path / "vitbook/table.txt").write_text("3\n")
    (tmp_path / "vitbook/reader.py").write_text(
        'from pathlib import Path\nINPUTS = ("weights.txt",)\n\n'
        'def weight():\n    return int(Path(__file__).with_name("weights.txt").read_text())\n'
    )
    (tmp_path / "vitbook/weights.txt").write_text("5\n")
    (tmp_path / "vitbook/figures/ch96_inputs.py").write_text(
        "from pathlib import Path\n"
        "from vitbook.engine import facts\n\n"
        '@facts(chapter=96, id="table", inputs=("vitbook/table.txt",))\n'
        "def table(rec):\n"
        '    rec.fact("n", int(Path("vitbook/table.txt").read_text()))\n\n'
        '@facts(chapter=96, id="plain")\n'
        "def plain(rec):\n"
        '    rec.fact("p", 1)\n'
    )
    (tmp_path / "vitbook/figures/ch97_reader.py").write_text(
        "from vitbook.engine import facts\n"
        "from vitbook.reader import weight\n\n"
        '@facts(chapter=97, id="weight")\n'
        "def weighted(rec):\n"
        '    rec.fact("w", weight())\n'
    )
    _python(tmp_path, "-m", "vitbook", "figures")

    def check() -> set[str]:
        env = dict(
            os.environ,
            PYTHONPATH=str(tmp_path),
            VITBOOK_FIGURES=str(tmp_path / "figures"),
            VITBOOK_CACHE=str(tmp_path / ".cache"),
        )
        proc = subprocess.run(
            [sys.executable, "-m", "vitbook", "figures", "--check"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return {ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("stale:")}

    assert check() == set()
    (tmp_path / "vitbook/table.txt").write_text("4\n")
    assert check() == {"ch96/table"}
    _python(tmp_path, "-m", "vitbook", "figures")
    (tmp_path / "vitbook/weights.txt").write_text("6\n")
    assert check() == {"ch97/weight"}


# --- the rules a rebuild is judged by --------------------------------------------------------


def entry(facts: dict, files: dict, **flags) -> dict:
    return {"facts": facts, "files": files, "deterministic": True, "trained": False, **flags}


def fact(value, text=None, **extra) -> dict:
    return {"value": value, "text": text if text is not None else str(value), **extra}


def test_rules_for_deterministic_items() -> None:
    old = entry({"x": fact(6.600783339149032, "6.601")}, {"a.png": "h1"})
    same_text = entry({"x": fact(6.600783339149031, "6.601")}, {"a.png": "h1"})
    assert verify.compare_entry("k", old, old).status == "identical"
    assert verify.compare_entry("k", old, same_text).status == "within rules"
    other_text = entry({"x": fact(6.6017, "6.601")}, {"a.png": "h1"})
    assert verify.compare_entry("k", old, other_text).status == "differs"  # value moved 1.4e-4
    printed = entry({"x": fact(6.6, "6.600")}, {"a.png": "h1"})
    assert verify.compare_entry("k", old, printed).status == "differs"
    bytes_ = entry({"x": fact(6.600783339149032, "6.601")}, {"a.png": "h2"})
    verdict = verify.compare_entry("k", old, bytes_)
    assert verdict.status == "differs" and "a.png" in verdict.notes[0]


def test_rules_for_trained_and_measured_items() -> None:
    old = entry(
        {"acc": fact(0.796, "79.6%", tol=0.03), "verdict": fact("ViT wins")},
        {"a.png": "h1"},
        trained=True,
    )
    moved = entry(
        {"acc": fact(0.775, "77.5%", tol=0.03), "verdict": fact("ViT wins")},
        {"a.png": "h2"},
        trained=True,
    )
    assert verify.compare_entry("k", old, moved).status == "within rules"
    too_far = entry(
        {"acc": fact(0.691, "69.1%", tol=0.03), "verdict": fact("ViT wins")},
        {"a.png": "h2"},
        trained=True,
    )
    assert verify.compare_entry("k", old, too_far).status == "differs"
    turned = entry(
        {"acc": fact(0.796, "79.6%", tol=0.03), "verdict": fact("CNN wins")},
        {"a.png": "h1"},
        trained=True,
    )
    assert verify.compare_entry("k", old, turned).status == "differs"
    timing = entry({"ms": fact(12.0)}, {"t.png": "h1"}, deterministic=False)
    slower = entry({"ms": fact(19.0)}, {"t.png": "h9"}, deterministic=False)
    assert verify.compare_entry("k", timing, slower).status == "within rules"
    renamed = entry({"seconds": fact(19.0)}, {"t.png": "h9"}, deterministic=False)
    assert verify.compare_entry("k", timing, renamed).status == "differs"
    verdicts = verify.compare({"a": old, "b": timing}, {"a": moved})
    assert [v.status for v in verdicts] == ["within rules", "differs"]
    assert "1 within the rules, 1 differ" in verify.report(verdicts)


def test_rules_for_a_rounding_error_a_deterministic_item_shows() -> None:
    """A fact with ``tol`` on a deterministic item (float32 rounding shown as such): it may
    move within ``tol``, and then the files that show it may differ; otherwise bytes count."""
    old = entry({"err": fact(1.7e-06, "1.7e-06", tol=1e-5), "n": fact(196)}, {"a.svg": "h1"})
    moved = entry({"err": fact(1.9e-06, "1.9e-06", tol=1e-5), "n": fact(196)}, {"a.svg": "h2"})
    verdict = verify.compare_entry("k", old, moved)
    assert verdict.status == "within rules" and "err" in verdict.notes[-1]
    still = entry({"err": fact(1.7e-06, "1.7e-06", tol=1e-5), "n": fact(196)}, {"a.svg": "h2"})
    assert verify.compare_entry("k", old, still).status == "differs"
    far = entry({"err": fact(3e-05, "3.0e-05", tol=1e-5), "n": fact(196)}, {"a.svg": "h2"})
    assert verify.compare_entry("k", old, far).status == "differs"


def test_a_trained_fact_may_move_within_either_builds_seed_spread() -> None:
    """Each build's tolerance is the spread of its own seeds; a rebuild whose seeds happen to
    agree closely (spread at the one-point floor) must not turn the committed spread into 0.01."""
    old = entry({"hi": fact(0.318, "31.8%", tol=0.106)}, {}, trained=True)
    new = entry({"hi": fact(0.255, "25.5%", tol=0.01)}, {}, trained=True)
    assert verify.compare_entry("k", old, new).status == "within rules"
    assert verify.compare_entry("k", new, old).status == "within rules"
    beyond = entry({"hi": fact(0.2, "20.0%", tol=0.01)}, {}, trained=True)
    assert verify.compare_entry("k", old, beyond).status == "differs"
    # "at most tol": a move of exactly one point on a one-point tolerance passes
    one = entry({"a": fact(0.26, "26.0%", tol=0.01)}, {}, trained=True)
    down = entry({"a": fact(0.25, "25.0%", tol=0.01)}, {}, trained=True)
    assert verify.compare_entry("k", one, down).status == "within rules"


def test_explorer_data_is_compared_as_numbers_in_a_deterministic_item() -> None:
    from vitbook.engine.explorer import ExplorerData, encode

    def blob(tokens, weights, lim):
        arrays = {"tokens": np.asarray(tokens, np.float32), "w": np.asarray(weights, np.uint8)}
        return encode(ExplorerData({"lim": lim}, arrays))

    base = blob([1.0, -2.0, 35.36178], [10, 200], 35.36178)
    last_bits = blob([1.0000001, -2.0, 35.36176], [11, 200], 35.36176)  # one quantisation step
    flipped = blob([-1.0, -2.0, 35.36178], [10, 200], 35.36178)  # a component's sign
    two_steps = blob([1.0, -2.0, 35.36178], [12, 200], 35.36178)
    files = {"base": base, "last": last_bits, "flip": flipped, "two": two_steps}
    old = entry({}, {"c/x.explorer.bin": "h-base"})

    def check(name: str) -> str:
        new = entry({}, {"c/x.explorer.bin": f"h-{name}"})
        return verify.compare_entry("k", old, new, read=lambda f: (base, files[name])).status

    assert check("last") == "within rules"
    assert check("flip") == "differs"
    assert check("two") == "differs"
    # without the files, a changed hash is a difference as for any file
    new = entry({}, {"c/x.explorer.bin": "h-last"})
    assert verify.compare_entry("k", old, new).status == "differs"
