"""MkDocs hooks: serve the rendered figures and the locally installed MathJax with the site.

``mkdocs.yml`` lists this file under ``hooks``. Figures are copied from ``figures/`` and
MathJax from ``node_modules`` (installed by ``npm ci`` from the pinned ``package-lock.json``),
so the built site asks no other host for anything.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from vitbook.site import macros as book
from vitbook.site import math

MATHJAX = Path("node_modules/mathjax/es5")


def on_config(config: Any) -> Any:
    book.numbering.cache_clear()
    book.bibliography.cache_clear()
    return config


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Typeset the page's formulas at build time (SVG in the page: no math runtime needed)."""
    return math.typeset_page(html)


def on_post_build(config: Any) -> None:
    """Copy the rendered figures and MathJax (from ``npm ci``) into the built site.

    The MathJax runtime is loaded only by pages whose math is not typeset at build time (the
    notebook pages' Markdown cells); see ``docs/javascripts/mathjax.js``."""
    math.TYPESETTER.close()
    math.clean_search_index(Path(config["site_dir"]))
    site = Path(config["site_dir"])
    project = Path(config["config_file_path"]).parent
    src = project / "figures"
    for path in sorted(src.glob("ch*/*.*")):
        dest = site / "figures" / path.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    mathjax = project / MATHJAX
    if not (mathjax / "tex-mml-chtml.js").exists():
        raise book.BookError(f"{mathjax}/tex-mml-chtml.js is missing: run `npm ci` in {project}")
    out = site / "assets" / "mathjax"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mathjax / "tex-mml-chtml.js", out / "tex-mml-chtml.js")
    # the fonts, and the TeX extensions MathJax loads on demand (\boldsymbol, \cancel, ...)
    for sub in ("output/chtml/fonts/woff-v2", "input/tex/extensions"):
        shutil.copytree(mathjax / sub, out / sub, dirs_exist_ok=True)
