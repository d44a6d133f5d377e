"""How the book summarises runs over seeds, and how it decides "higher", "lower" or "same".

One rule, used by every chapter:

* A result over seeds is printed as its mean with the min-max range and the number of seeds
  (and of failed runs where a run can fail).
* Two settings are compared by their per-seed values: ``"higher"`` or ``"lower"`` only when the
  min-max ranges do not overlap, else ``"indistinguishable"``. With three to five seeds this is
  deliberately strict: a claim the book prints holds for every seed it ran.
* The tolerance of a trained fact across machines (``rec.fact(..., tol=...)``) is the min-max
  range of the seeds behind it, and at least ``TOL_FLOOR``: a rebuild on another CPU moves each
  seed a little, and the book accepts a move as large as the spread it already shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TOL_FLOOR = 0.01  # one percentage point on an accuracy


@dataclass(frozen=True)
class Summary:
    """Per-seed values and what the book prints about them."""

    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def lo(self) -> float:
        return float(np.min(self.values))

    @property
    def hi(self) -> float:
        return float(np.max(self.values))

    @property
    def spread(self) -> float:
        return self.hi - self.lo

    @property
    def tol(self) -> float:
        return tolerance(self.values)


def summary(values: Sequence[float]) -> Summary:
    return Summary(tuple(float(v) for v in values))


def record(rec, name: str, values: Sequence[float], fmt: str = "{:.1%}") -> Summary:
    """Record per-seed ``values`` on a figure's recorder ``rec``: their mean as ``name``, their
    min and max as ``name_lo`` and ``name_hi``, each with the seed spread as its tolerance."""
    s = summary(values)
    rec.fact(name, s.mean, fmt, tol=s.tol, seeds=s.n)
    rec.fact(f"{name}_lo", s.lo, fmt, tol=s.tol, seeds=s.n)
    rec.fact(f"{name}_hi", s.hi, fmt, tol=s.tol, seeds=s.n)
    return s


def tolerance(values: Sequence[float], floor: float = TOL_FLOOR) -> float:
    """The cross-machine tolerance of a fact computed from these per-seed values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(max(floor, v.max() - v.min())) if len(v) else floor


def verdict(a: Sequence[float], b: Sequence[float]) -> str:
    """``"higher"`` if every seed of ``a`` is above every seed of ``b``, ``"lower"`` if every
    one is below, else ``"indistinguishable"`` (the min-max ranges overlap)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.min() > b.max():
        return "higher"
    if a.max() < b.min():
        return "lower"
    return "indistinguishable"


def interval(hits: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of the mean of ``hits`` (resampled over items, seeded)."""
    hits = np.asarray(hits, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(hits), size=(n_boot, len(hits)))
    means = hits[idx].mean(1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def seeds(n: int) -> tuple[int, ...]:
    """The seeds of an experiment repeated ``n`` times: always 0 to n - 1, never picked."""
    return tuple(range(n))
