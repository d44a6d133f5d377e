"""The book's fonts, served from the site: the same letters on every machine and in the PDF.

The text face is DejaVu Sans and the code face DejaVu Sans Mono, the fonts matplotlib ships
(``mpl-data/fonts/ttf``, installed with the pinned matplotlib): the figures' labels are drawn
in the same face as the prose around them. A page never falls back to a system font for a
character it prints: :func:`install` cuts each font down to the characters the built site
uses (all of ASCII and Latin-1 as well), renames it **Vitbook Sans** / **Vitbook Mono** (the
Bitstream Vera licence asks that a modified font carry another name) and writes it as WOFF
into ``assets/fonts/``, with the licence beside it. ``docs/stylesheets/fonts.css`` declares
them; the printed edition embeds them.

The cut depends only on the site's characters and the pinned fonttools and matplotlib, so the
same site gives the same font files, byte for byte.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
import shutil
from pathlib import Path

#: (source file in matplotlib's font folder, file written, family name, style name)
FACES = (
    ("DejaVuSans.ttf", "vitbook-sans.woff", "Vitbook Sans", "Regular"),
    ("DejaVuSans-Bold.ttf", "vitbook-sans-bold.woff", "Vitbook Sans", "Bold"),
    ("DejaVuSans-Oblique.ttf", "vitbook-sans-italic.woff", "Vitbook Sans", "Italic"),
    ("DejaVuSans-BoldOblique.ttf", "vitbook-sans-bold-italic.woff", "Vitbook Sans", "Bold Italic"),
    ("DejaVuSansMono.ttf", "vitbook-mono.woff", "Vitbook Mono", "Regular"),
    ("DejaVuSansMono-Bold.ttf", "vitbook-mono-bold.woff", "Vitbook Mono", "Bold"),
)
#: Always in every cut: printable ASCII and Latin-1, so that a reader's search box, an
#: explorer's input or a later page never meets a missing letter.
BASE = {*range(0x20, 0x7F), *range(0xA0, 0x100), *map(ord, "–—‘’“”…−")}  # noqa: RUF001
_TAGS = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.S | re.I)


def font_dir() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def site_characters(site: Path) -> set[int]:
    """Every character the built pages show (text, not markup) and the explorers' scripts
    may write, plus :data:`BASE`."""
    chars = set(BASE)
    for page in sorted(site.rglob("*.html")):
        text = html.unescape(_TAGS.sub(" ", page.read_text(encoding="utf-8", errors="ignore")))
        chars.update(ord(c) for c in text if c.isprintable())
    for script in sorted((site / "javascripts").rglob("*.js")):
        chars.update(ord(c) for c in script.read_text(encoding="utf-8") if ord(c) > 0x7F)
    return chars


def cut(source: Path, chars: set[int], family: str, style: str) -> bytes:
    """``source`` reduced to ``chars`` (those it has), renamed, as WOFF bytes."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(source, recalcTimestamp=False)
    options = subset.Options()
    options.flavor = "woff"
    options.hinting = False  # screens and PDFs of today do not need TrueType hints
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6]
    options.layout_features = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(chars & set(font.getBestCmap())))
    subsetter.subset(font)
    postscript = family.replace(" ", "") + "-" + style.replace(" ", "")
    for record in font["name"].names:
        if record.nameID in (1, 16):
            record.string = family
        elif record.nameID in (2, 17):
            record.string = style
        elif record.nameID == 3:
            record.string = f"vitbook: {postscript}"
        elif record.nameID == 4:
            record.string = f"{family} {style}".replace(" Regular", "")
        elif record.nameID == 6:
            record.string = postscript
    font.flavor = "woff"
    out = io.BytesIO()
    font.save(out, reorderTables=True)
    return out.getvalue()


def install(site: Path, cache: Path | None = None) -> list[Path]:
    """Write the cut fonts and their licence into ``site/assets/fonts/``; return the files.
    With ``cache``, a cut already made for the same characters is reused."""
    import fontTools

    out = site / "assets" / "fonts"
    out.mkdir(parents=True, exist_ok=True)
    chars = site_characters(site)
    key = hashlib.sha256(
        repr((sorted(chars), fontTools.version, [f[:4] for f in FACES])).encode()
    ).hexdigest()[:16]
    written = []
    for source, name, family, style in FACES:
        stored = cache / f"{key}-{name}" if cache else None
        if stored is not None and stored.is_file():
            blob = stored.read_bytes()
        else:
            blob = cut(font_dir() / source, chars, family, style)
            if stored is not None:
                stored.parent.mkdir(parents=True, exist_ok=True)
                stored.write_bytes(blob)
        (out / name).write_bytes(blob)
        written.append(out / name)
    shutil.copyfile(font_dir() / "LICENSE_DEJAVU", out / "LICENSE-DejaVu.txt")
    return written
