"""The book's rule for "higher", "lower" and "indistinguishable" (vitbook/experiments/stats.py):
decided by the seeds' min-max ranges, not by their means."""

from __future__ import annotations

import pytest

from vitbook.experiments.stats import verdict


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0.7, 0.8], [0.1, 0.69], "higher"),  # every seed of a above every seed of b
        ([0.1, 0.69], [0.7, 0.8], "lower"),
        ([0.6, 0.7, 0.8], [0.1, 0.2, 0.65], "indistinguishable"),  # means apart, ranges overlap
        ([0.1, 0.2, 0.65], [0.6, 0.7, 0.8], "indistinguishable"),
        ([0.5, 0.9], [0.1, 0.5], "indistinguishable"),  # ranges that touch
        ([0.5, 0.9], [0.5, 0.9], "indistinguishable"),
    ],
)
def test_verdict_compares_the_seeds_ranges(a, b, expected) -> None:
    assert verdict(a, b) == expected
