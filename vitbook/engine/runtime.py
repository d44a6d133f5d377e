"""The conditions every computation of the book runs under: seeds, threads and device.

The engine (serial builds and every worker of a parallel build) and a direct call of an item
(``item()`` in a notebook or a test) go through :func:`book_conditions`, so both give the same
numbers:

* ``random``, NumPy and PyTorch are seeded with 0 before each computation;
* PyTorch, OpenMP and the BLAS libraries use :data:`THREADS` threads, whatever ``--jobs`` is
  (a reduction split over another number of threads sums in another order, and its last bits
  move);
* the book computes on the CPU (:data:`DEVICE`): the command line hides any GPU
  (``CUDA_VISIBLE_DEVICES=""``) before PyTorch loads, so code that picks CUDA when present
  picks the CPU. (A notebook that loaded PyTorch with a GPU visible keeps it.)

These settings are part of every cache key (see :func:`vitbook.engine.build.environment`).
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Threads per computation, in serial builds and in each worker of ``--jobs N``.
THREADS = 1
#: Where the book computes.
DEVICE = "cpu"
#: Environment variables read by OpenMP and the BLAS libraries when they load.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pin_environment(threads: int = THREADS) -> None:
    """Set the variables that libraries read when they load: call before importing them (the
    command line does, and each worker of a parallel build)."""
    for var in THREAD_VARS:
        os.environ[var] = str(threads)
    if DEVICE == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def pin_threads(threads: int = THREADS) -> Any:
    """Use ``threads`` threads in the libraries already loaded (PyTorch, OpenMP, numpy's BLAS)
    and in those loaded later. Returns threadpoolctl's limiter (it can restore the old limits),
    or None if nothing was loaded yet."""
    for var in THREAD_VARS:
        os.environ[var] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    if "numpy" in sys.modules or "torch" in sys.modules:  # they read the variables on loading
        from threadpoolctl import threadpool_limits

        return threadpool_limits(threads)
    return None


def seed_everything(seed: int = 0) -> None:
    """Seed every random source the figure code may use (torch only if it is loaded)."""
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


@contextmanager
def book_conditions(seed: int = 0, *, restore: bool = False) -> Iterator[None]:
    """Run the enclosed computation as the engine does: seeded, on :data:`THREADS` threads.

    With ``restore=True`` (a direct call from a notebook) the thread counts in force before are
    put back afterwards; random states are not (a seeded computation consumed them).
    """
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    env = {var: os.environ.get(var) for var in THREAD_VARS}
    limiter = pin_threads()
    seed_everything(seed)
    try:
        yield
    finally:
        if restore:
            if limiter is not None:
                limiter.restore_original_limits()
            for var, value in env.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value
            if before is not None:
                torch.set_num_threads(before)


@contextmanager
def preserved_rng() -> Iterator[None]:
    """Put back the random states of ``random``, numpy and torch after the block, so that a
    computation that calls a run leaves them the same whether the run trained or was read."""
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    states = (
        random.getstate(),
        np.random.get_state() if np is not None else None,
        torch.get_rng_state() if torch is not None else None,
    )
    try:
        yield
    finally:
        random.setstate(states[0])
        if states[1] is not None:
            sys.modules["numpy"].random.set_state(states[1])
        if states[2] is not None:
            sys.modules["torch"].set_rng_state(states[2])
