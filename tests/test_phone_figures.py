"""Every figure has a phone variant (3.8 in wide, no text under 8 pt), and the pages serve it
to narrow screens: a ``<source media=...>`` before the desktop one, in both themes (the dark
one's files named in ``data-vb-*`` attributes, filled in by reader.js on a theme switch)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vitbook.engine import registry
from vitbook.engine.build import PHONE_MIN_FONT_PT, file_names
from vitbook.site import macros

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((ROOT / "figures/manifest.json").read_text())
FIGURES = [k for k, item in registry.discover().items() if item.is_figure]


def test_the_phone_variant_is_narrow_with_readable_text() -> None:
    assert registry.PHONE_WIDTH == 3.8 and PHONE_MIN_FONT_PT >= 8
    assert registry.phone_size_for((7.2, 3.0)) == (3.8, 4.2)
    assert registry.phone_size_for((7.2, 3.0), 5) == (3.8, 5.0)


@pytest.mark.parametrize("key", FIGURES)
def test_every_figure_has_phone_files_with_text_of_at_least_8pt(key: str) -> None:
    item = registry.discover([int(key[2:4])])[key]
    names = file_names(item)
    stem = f"{key}.phone"
    assert {f"{stem}.png", f"{stem}.dark.png"} <= set(names)
    assert not any(".phone" in n and n.endswith(".svg") for n in names)
    entry = MANIFEST[key]
    for name in (f"{stem}.png", f"{stem}.dark.png"):
        assert name in entry["files"], f"{name} not built: run `python -m vitbook figures`"
        text = entry["text"][name]
        assert text["width_in"] == 3.8, (name, text)
        assert text["min_font_pt"] >= 8, (name, text)


def test_the_picture_serves_the_phone_file_to_narrow_screens_only() -> None:
    light = macros.picture("f/x", "light", "alt", 1080, 480, phone=("f/x.phone", 570, 600))
    dark = macros.picture("f/x.dark", "dark", "alt", 1080, 480, phone=("f/x.phone.dark", 570, 600))
    media = 'media="screen and (max-width: 44.9375em)"'
    assert f'<source {media} type="image/webp" srcset="f/x.phone.webp 570w"' in light
    assert f'<source {media} type="image/png" srcset="f/x.phone.png 570w"' in light
    assert 'width="570" height="600"' in light
    assert f'<source {media} type="image/webp" data-vb-srcset="f/x.phone.dark.webp 570w"' in dark
    assert " srcset=" not in dark  # nothing of the hidden theme loads until it is shown
    # the phone sources come first (the first match wins); print matches no screen query,
    # so it gets the desktop figure
    sources = re.findall(r"<source[^>]*>", light)
    assert [("media=" in s) for s in sources] == [True, True, False]
    assert 'src="f/x.png"' in light


def test_a_caption_that_places_panels_says_how_a_phone_orders_them() -> None:
    """A phone variant lays its panels out in fewer columns: a caption that says "Left:" or
    "on the left," gets a note shown with the phone variant only; other captions none."""
    for caption in ("Left: the data. Right: the fit.", "losses (on the left, accuracy right)",
                    "six maps (middle) and the mean", "accuracy, left against size"):  # fmt: skip
        note = macros.phone_note(caption)
        assert 'class="vb-phone-note"' in note and "reading order" in note, caption
    for caption in ("runs that never left chance", "the label on the right gives the distance",
                    "A single map of the class token."):  # fmt: skip
        assert macros.phone_note(caption) == "", caption
    css = (ROOT / "docs/stylesheets/book.css").read_text()
    assert re.search(r"\.vb-phone-note \{ display: none; \}", css)
    assert re.search(
        re.escape(macros.PHONE_MEDIA) + r" \{\s*\.vb-phone-note \{ display: inline", css
    )


def test_the_webp_copies_are_the_files_the_picture_names_at_their_widths(tmp_path) -> None:
    """A desktop figure (1,440 px: two device pixels per CSS pixel of the 720 px column) gets
    WebP copies at each width the page's srcset names, each as wide as it says; a phone variant
    (570 px) only its own width, encoded with libwebp's tightest method (what phones fetch)."""
    import io

    from PIL import Image

    from vitbook.engine.build import DPI
    from vitbook.site import hooks

    assert round(7.2 * DPI) == 1440
    for width, stem in ((1440, "x"), (570, "x.phone")):
        png = tmp_path / f"{stem}.png"
        Image.new("RGB", (width, 60), (200, 120, 40)).save(png)
        copies = hooks.webp_copies(png)
        srcset = re.search(r'srcset="([^"]*)"', macros.picture(stem, "light", "a", width, 60))[1]
        named = dict(reversed(c.split()) for c in srcset.split(", "))  # {"720w": "x.720w.webp"}
        assert sorted(copies) == sorted(named.values())
        for w, name in named.items():
            assert Image.open(io.BytesIO(copies[name])).size[0] == int(w.removesuffix("w"))
    assert hooks.webp_method(570) == hooks.webp_method(720) == 6 > hooks.webp_method(1080)
