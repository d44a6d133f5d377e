"""Alt text: one entry in ``docs/figure-alt.yml`` per placed figure, none stale, plain words.

Not a browser test (it reads the sources and the macro); it lives with the reader tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from vitbook.site import macros

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FIGURE_RE = re.compile(
    r"""\{\{\s*(?:figure|explorer)\(\s*["']([a-z0-9/-]+)["']\s*,\s*["'](.*?)["']""", re.S
)


def placed() -> dict[str, str]:
    """Every figure placed by a page: ``chNN/id -> caption``."""
    found = {}
    for path in sorted(DOCS.glob("*.md")):
        n = macros.chapter_of(path.name)
        for label, caption in FIGURE_RE.findall(path.read_text(encoding="utf-8")):
            if "/" not in label and n is None:
                continue  # documentation of the macro on a back-matter page
            found[label if "/" in label else f"ch{n:02d}/{label}"] = caption
    return found


def alt() -> dict[str, str]:
    return yaml.safe_load((DOCS / "figure-alt.yml").read_text(encoding="utf-8"))


def test_every_figure_has_alt_text_and_none_is_stale() -> None:
    figures, entries = placed(), alt()
    assert len(figures) >= 40, f"only {len(figures)} figures found: the scan is broken"
    missing = sorted(set(figures) - set(entries))
    stale = sorted(set(entries) - set(figures))
    assert not missing, f"figures without alt text in docs/figure-alt.yml: {missing}"
    assert not stale, f"alt text for figures no page places: {stale}"


@pytest.mark.parametrize("key", sorted(placed()))
def test_alt_text_is_plain_words_not_the_caption(key: str) -> None:
    text = " ".join(str(alt().get(key, "")).split())
    caption = " ".join(placed()[key].split())
    assert 60 <= len(text) <= 600, f"{key}: alt text of {len(text)} characters"
    assert not re.search(r"[`*_\[\]<>]|\]\(", text), f"{key}: Markdown or HTML in the alt text"
    words = lambda s: re.findall(r"[a-z]+", s.lower())  # noqa: E731
    first = " ".join(words(caption)[:8])
    assert first not in " ".join(words(text)), f"{key}: the alt text repeats the caption"


def test_fallback_alt_drops_markdown() -> None:
    assert macros.plain("Drawn by `f` in [the code](x.py), **bold**.") == (
        "Drawn by f in the code, bold."
    )
