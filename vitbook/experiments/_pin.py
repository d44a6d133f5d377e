"""Pinning what can be pinned for a training run on the CPU."""

from __future__ import annotations

from contextlib import contextmanager

import torch


@contextmanager
def deterministic():
    """``torch.use_deterministic_algorithms(True)`` for the duration of a run, then restored."""
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)
