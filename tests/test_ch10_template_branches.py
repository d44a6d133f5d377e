"""Chapter 10's paragraph on the models that fall short, rendered in every branch of its
template: each branch names the model it speaks of (an earlier edition printed "seed A finding
that fails..." in one of them, with no seed)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import jinja2
import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "10-inside-a-trained-vit.md"
START = "{% if ch10.n_shortfalls.value > 0 %}"
END = " And {{ ch10.pre_seeds }} models are few"


class Fact:
    """A fact as the pages see it: ``.value``, ``.text``, and its text when printed."""

    def __init__(self, value, text=None) -> None:
        self.value = value
        self.text = str(value) if text is None else text

    def __str__(self) -> str:
        return self.text


def paragraph() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(START)
    return text[start : text.index(END, start)]


def render(**values) -> str:
    ch10 = {
        "weakest_seed": Fact(3),
        "weakest_acc": Fact(0.334, "33.4%"),
        "pc1_above_seeds": Fact("1 and 3"),
        **{k: Fact(v) for k, v in values.items()},
    }
    ch09 = {"chance_pre": Fact(1 / 6, "16.7%")}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    return env.from_string(paragraph()).render(ch10=ch10, ch09=ch09)


# (shortfalls, of them the weakest model's): none, all one model's, most, a few
COUNTS = [(0, 0), (5, 5), (5, 3), (5, 2)]
CASES = list(itertools.product(COUNTS, (True, False), (1, 2)))


@pytest.mark.parametrize(("counts", "pc1_weakest", "n_above"), CASES)
def test_every_branch_names_the_model_it_speaks_of(counts, pc1_weakest, n_above) -> None:
    total, weakest = counts
    out = render(n_shortfalls=total, n_shortfalls_weakest=weakest,
                 pc1_above_are_weakest=pc1_weakest, n_pc1_vs_random_is_above=n_above)  # fmt: skip
    if total == 0:
        assert out == ""
        return
    # "seed" or "seeds" is always followed by the seed (or seeds) it names
    assert not re.search(r"\bseeds?\b(?! \d)", out), out
    assert "seed 3" in out and "33.4%" in out  # the weakest model, by name and accuracy
    assert ("seeds 1 and 3" in out) == (pc1_weakest and n_above > 1)
    assert out.rstrip().endswith(".")  # whole sentences


def test_the_branches_differ() -> None:
    """The three wordings are distinct: the test above reaches every branch."""
    outs = {render(n_shortfalls=t, n_shortfalls_weakest=w, pc1_above_are_weakest=False,
                   n_pc1_vs_random_is_above=1) for t, w in COUNTS[1:]}  # fmt: skip
    assert len(outs) == 3
