"""Where the book's files are, wherever a command is started (a subfolder such as ``docs/``
included): everything is found from the folder that holds the imported ``vitbook`` package,
unless an environment variable names another place (tests and ``verify`` use them)."""

from __future__ import annotations

import importlib
import os
from functools import cache
from pathlib import Path


@cache
def project_root() -> Path:
    """The folder holding the ``vitbook`` package, ``figures/``, ``frozen/`` and ``docs/``."""
    package = importlib.import_module(__name__.split(".")[0])
    return Path(package.__file__).resolve().parents[1]


def _place(variable: str, *default: str) -> Path:
    given = os.environ.get(variable)
    return Path(given) if given else project_root().joinpath(*default)


def figures_dir() -> Path:
    """The rendered figures, ``facts.json`` and ``manifest.json``: ``$VITBOOK_FIGURES`` or
    ``figures/``."""
    return _place("VITBOOK_FIGURES", "figures")


def frozen_dir() -> Path:
    """The frozen training runs: ``$VITBOOK_FROZEN`` or ``frozen/``."""
    return _place("VITBOOK_FROZEN", "frozen")


def cache_dir() -> Path:
    """Local results, locks and stamps (never committed): ``$VITBOOK_CACHE`` or
    ``.cache/vitbook``."""
    return _place("VITBOOK_CACHE", ".cache", "vitbook")
