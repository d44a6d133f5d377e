"""Runs that give the same bits whatever vector instructions (AVX2, AVX-512) the CPU has.

A training run is chaotic: a last-bit difference in one matrix product grows over thousands of
steps until the final accuracy differs by points. Left to themselves, PyTorch, MKL and oneDNN
pick the widest vector code the CPU offers (AVX-512 on one machine, AVX2 on another), and
those sum in different orders. The book's pre-training run, computed so, reached accuracies
several points apart on two kinds of machine, and every result built on it moved with it.

:func:`call` runs a function in a child process whose libraries are held to code paths that
do not depend on the CPU's vector width (:data:`ENV`, and oneDNN switched off so that
convolutions and matrix products go through MKL):

* ``ATEN_CPU_CAPABILITY=default``: PyTorch's plain kernels instead of its AVX2/AVX-512 ones;
* ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility on its plain SSE2
  branch (Intel documents it for Intel processors; AMD ones are expected to agree, untested);
* ``OPENBLAS_CORETYPE=Nehalem``: numpy's matrix products on OpenBLAS's SSE4.2 kernels, not
  the ones it picks for this CPU (Haswell, SkylakeX and Nehalem kernels give other bits);
* ``NPY_DISABLE_CPU_FEATURES``: every SIMD target numpy dispatches to above its baseline
  switched off (float64 ``np.exp`` gives other bits with and without AVX-512), so the data a
  run generates with numpy are the same everywhere;
* one thread (:data:`vitbook.engine.runtime.THREADS`), so reductions are never split
  differently.

This costs time (the plain kernels and the SSE2 branch are several times slower; the build
report gives the seconds), so only the runs everything else stands on use it. The portable
runs are exactly: ``vitbook.runs.pretrained_shapes_vit`` (the pre-training that Chapters 4, 9
and 10 are built on). Every other run computes on the CPU's own paths (the digits runs too, since
2f151a3): retrained on another CPU it may give other bits, and ``verify --runs``
judges it by the facts the book prints from it (:func:`vitbook.engine.verify.compare_run`).
``tests/test_portable.py`` hides the CPU's AVX, AVX2, FMA and AVX-512 from glibc, oneDNN and
MKL and checks that the bits do not move.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import runtime

#: What the child process is started with (before it loads any library); see :func:`env`.
ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "OPENBLAS_CORETYPE": "Nehalem"}
#: True in the child process: a portable run computes alone (it calls no other run).
IN_CHILD = False


def env() -> dict[str, str]:
    """:data:`ENV` and numpy's dispatch targets to switch off: all of those the installed
    numpy was built with (a property of its version, which every key covers)."""
    from numpy._core import _multiarray_umath as umath

    return {**ENV, "NPY_DISABLE_CPU_FEATURES": " ".join(umath.__cpu_dispatch__)}


def call(fn: Callable[..., Any], arguments: dict[str, Any], extra_env: dict | None = None) -> Any:
    """``fn(**arguments)`` computed in a child process on the portable code paths, under the
    book's conditions (:func:`vitbook.engine.runtime.book_conditions`). ``fn`` must be a
    module-level function; ``extra_env`` is for tests. The child's output goes to this
    process's stdout and stderr; a failure in it raises ``subprocess.CalledProcessError``."""
    root = Path(__file__).resolve().parents[2]  # the folder that holds the vitbook package
    child_env = dict(os.environ, **(extra_env or {}), **env())
    child_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(root), child_env.get("PYTHONPATH")])
    )
    with tempfile.TemporaryDirectory(prefix="vitbook-portable-") as tmp:
        job, out = Path(tmp) / "job.pkl", Path(tmp) / "out.pkl"
        job.write_bytes(pickle.dumps((fn.__module__, fn.__qualname__, arguments)))
        start = f"import sys; from pathlib import Path; from {__name__} import _child; " + (
            "_child(Path(sys.argv[1]), Path(sys.argv[2]))"
        )
        subprocess.run([sys.executable, "-c", start, str(job), str(out)], env=child_env, check=True)
        return pickle.loads(out.read_bytes())


def conditions() -> dict[str, Any]:
    """The code paths this process computes on (what :func:`call` promises, made visible)."""
    import torch

    return {
        "capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn": torch.backends.mkldnn.enabled,
        "MKL_CBWR": os.environ.get("MKL_CBWR"),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "numpy_disabled": os.environ.get("NPY_DISABLE_CPU_FEATURES"),
        "threads": torch.get_num_threads(),
    }


def _child(job: Path, out: Path) -> None:
    global IN_CHILD
    IN_CHILD = True
    runtime.pin_environment()  # before torch loads
    import torch

    torch.backends.mkldnn.enabled = False
    if torch.backends.cpu.get_cpu_capability() != "DEFAULT":
        raise RuntimeError("ATEN_CPU_CAPABILITY=default did not take effect")
    module, qualname, arguments = pickle.loads(job.read_bytes())
    fn = importlib.import_module(module)
    for part in qualname.split("."):
        fn = getattr(fn, part)
    with runtime.book_conditions():
        value = fn(**arguments)
    out.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
