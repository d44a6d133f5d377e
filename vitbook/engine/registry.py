"""The figure registry: which computations and drawings the book has.

A figure is two functions in ``vitbook/figures/chNN_<slug>.py``:

* a *compute* function, registered with :func:`figure`, that does the real work
  (runs a model, trains, measures) and returns plain data; it may record named
  numbers ("facts") that the pages quote;
* a *draw* function, attached with ``@<compute>.draw``, that turns that data into
  a matplotlib figure. Drawing is cheap and runs once per variant (light, dark, and the
  same two at phone width; the draw function sees ``v.phone``).

A computation with no drawing (a table of numbers, say) is registered with
:func:`facts`. The engine knows nothing about Vision Transformers: it only runs
these functions, caches what they return and writes their files.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MODULE_RE = re.compile(r"^ch(\d\d)_[a-z0-9_]+$")
FIGURES_PACKAGE = "vitbook.figures"


class Recorder:
    """Collects the facts one computation records (see :meth:`fact`)."""

    def __init__(self, chapter: int) -> None:
        self.chapter = chapter
        self.facts: dict[str, dict[str, Any]] = {}

    def fact(
        self,
        name: str,
        value: Any,
        fmt: str | None = None,
        *,
        text: str | None = None,
        measured: bool = False,
        tol: float | None = None,
        seeds: int | None = None,
    ) -> Any:
        """Record a number the prose may quote as ``{{ chNN.name }}``.

        Args:
            name: a short identifier, unique within the chapter (``tokens_p16``).
            value: the number (or short string) itself; stored as JSON.
            fmt: a ``str.format`` pattern for the page, such as ``"{:,}"`` or ``"{:.2f}"``.
                Integers default to thousands separators, floats to four significant digits.
            text: the exact text to show instead of formatting ``value``.
            measured: True for a wall-clock measurement (seconds, milliseconds), which
                differs from run to run; reproducibility checks leave it out.
            tol: for a result of training, which can move on another CPU (other SIMD paths
                in torch and BLAS): the largest absolute change the book accepts, set from the
                spread over seeds. Across machines such a fact is checked within ``tol``;
                every other fact must reproduce its printed text exactly.
            seeds: for a result summarised over training seeds, how many (seeds 0..N-1);
                the pages show it with the number's provenance.
        Returns:
            ``value``, so a fact can be recorded where it is computed.
        """
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"fact name {name!r} must be lower_snake_case (letters, digits, _)")
        if name in self.facts:
            raise ValueError(f"fact {name!r} recorded twice in chapter {self.chapter}")
        value = _plain(value)
        if text is None:
            if fmt is not None:
                text = fmt.format(value)
            elif isinstance(value, bool) or not isinstance(value, int | float):
                text = str(value)
            elif isinstance(value, int):
                text = f"{value:,}"
            else:
                text = f"{value:.4g}"
        self.facts[name] = {"value": value, "text": text}
        if measured:
            self.facts[name]["measured"] = True
        if tol is not None:
            if not isinstance(value, int | float) or isinstance(value, bool) or tol < 0:
                raise ValueError(f"fact {name!r}: tol needs a number and a tolerance >= 0")
            self.facts[name]["tol"] = float(tol)
        if seeds is not None:
            self.facts[name]["seeds"] = int(seeds)
        return value


def _plain(value: Any) -> Any:
    """Turn numpy/torch scalars into plain Python numbers for JSON."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass
class Item:
    """One registered computation, with its drawing if it has one."""

    chapter: int
    id: str
    compute: Callable[[Recorder], Any]
    module: str
    size: tuple[float, float] | None = None
    deterministic: bool = True
    trained: bool = False
    #: data files the computation reads, relative to the project root (hashed into its key)
    inputs: tuple[str, ...] = ()
    #: width and height (inches) of the phone variant; see :func:`phone_size_for`
    phone_size: tuple[float, float] | None = None
    draw_fn: Callable[..., Any] | None = field(default=None, repr=False)
    export_fn: Callable[[Any], Any] | None = field(default=None, repr=False)
    #: names of the explorer data's parts, each a file of its own (see :meth:`export`)
    explorer_parts: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The figure's public name, ``chNN/id``."""
        return f"ch{self.chapter:02d}/{self.id}"

    @property
    def is_figure(self) -> bool:
        return self.draw_fn is not None

    def draw(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: attach the drawing function ``fn(data, theme) -> Figure``."""
        if self.draw_fn is not None:
            raise ValueError(f"{self.key} already has a draw function")
        self.draw_fn = fn
        return fn

    def export(self, fn: Callable[[Any], Any] | None = None, *, parts: Iterable[str] = ()) -> Any:
        """Decorator: attach ``fn(data) -> ExplorerData``, the data of the in-browser explorer
        that shows this figure interactively (written to ``figures/chNN/<id>.explorer.bin``
        with the figure's files, under the same key). Only figures can export.

        ``@item.export(parts=names)``: the data also comes in parts that the page loads only
        when it needs them, ``ExplorerData.parts`` with exactly these names (lower-case words
        joined by '-'), each written to ``figures/chNN/<id>.<name>.explorer.bin``
        (:mod:`vitbook.engine.explorer`)."""
        if fn is None:
            return lambda f: self.export(f, parts=parts)
        if self.export_fn is not None:
            raise ValueError(f"{self.key} already exports explorer data")
        names = tuple(parts)
        if not all(ID_RE.match(n) for n in names) or len(set(names)) != len(names):
            raise ValueError(
                f"{self.key}: explorer parts must be distinct ids (lower-case words joined by '-')"
                f": {names}"
            )
        self.export_fn = fn
        self.explorer_parts = names
        return fn

    def __call__(self, rec: Recorder | None = None) -> Any:
        """Run the computation directly (handy in notebooks and tests), under the conditions
        the engine runs it under (seeded with 0, on the book's thread count; see
        :mod:`vitbook.engine.runtime`), so it records the facts a build records. The caller's
        thread counts are restored afterwards."""
        from .runtime import book_conditions

        with book_conditions(restore=True):
            return self.compute(rec or Recorder(self.chapter))


REGISTRY: dict[str, Item] = {}


def _register(
    fn: Callable[[Recorder], Any],
    *,
    chapter: int,
    id: str,
    size: tuple[float, float] | None,
    deterministic: bool,
    trained: bool = False,
    inputs: tuple[str, ...] = (),
    phone_size: tuple[float, float] | None = None,
) -> Item:
    module = fn.__module__
    m = MODULE_RE.match(module.rsplit(".", 1)[-1])
    if not module.startswith(FIGURES_PACKAGE + ".") or not m:
        raise ValueError(f"{module}: figures live in {FIGURES_PACKAGE}.chNN_<slug> modules")
    if int(m.group(1)) != chapter:
        raise ValueError(f"{module} registers chapter {chapter}; its name says {int(m.group(1))}")
    if not ID_RE.match(id):
        raise ValueError(f"figure id {id!r} must be lower-case words joined by '-'")
    if isinstance(inputs, str) or not all(isinstance(p, str) for p in inputs):
        raise ValueError(f"{module}: inputs= takes a tuple of paths relative to the project root")
    if size is not None:
        phone_size = phone_size_for(size, phone_size)
    item = Item(chapter, id, fn, module, size, deterministic, trained, tuple(inputs), phone_size)
    if item.key in REGISTRY and REGISTRY[item.key].module != module:
        raise ValueError(f"{item.key} is registered twice")
    REGISTRY[item.key] = item
    return item


#: The width (inches) of every phone variant: drawn at this width, a figure fills a phone's
#: column (about 358 CSS px at a 390 px viewport) at about 1 CSS px per 0.77 pt of text.
PHONE_WIDTH = 3.8


def phone_size_for(
    size: tuple[float, float], phone_size: tuple[float, float] | float | None = None
) -> tuple[float, float]:
    """The phone variant's size: ``phone_size`` if given (a number is a height), otherwise
    :data:`PHONE_WIDTH` wide and 1.4 times the desktop height (room for a row of panels to
    become two rows, and for larger text)."""
    if phone_size is None:
        return (PHONE_WIDTH, round(size[1] * 1.4, 2))
    if isinstance(phone_size, int | float):
        return (PHONE_WIDTH, float(phone_size))
    return (float(phone_size[0]), float(phone_size[1]))


def figure(
    *,
    chapter: int,
    id: str,
    size: tuple[float, float],
    deterministic: bool = True,
    trained: bool = False,
    inputs: tuple[str, ...] = (),
    phone_size: tuple[float, float] | float | None = None,
) -> Callable[[Callable[[Recorder], Any]], Item]:
    """Register a figure's compute function; attach its drawing with ``@item.draw``.

    Args:
        chapter: the chapter number (must match the module's ``chNN`` prefix).
        id: the figure id, unique in the chapter; files become ``figures/chNN/<id>.png``.
        size: width and height in inches (the house style assumes a 7-inch column).
        deterministic: False for figures whose numbers are measured timings, which
            cannot be byte-identical between two fresh computations.
        trained: True when the numbers come from training runs: reproducible on one machine,
            but another CPU may move them a little. Across machines their facts are checked
            within each fact's ``tol`` and the files are not compared byte for byte.
        inputs: data files the computation reads (``open``, ``np.load``...), as paths relative
            to the project root, e.g. ``("vitbook/data/face.png",)``; their contents are part
            of the key. A file read that is not declared fails ``tests/test_reproducibility.py``.
        phone_size: the phone variant's size in inches, or just its height (the width is
            :data:`PHONE_WIDTH`); by default 1.4 times ``size``'s height.
    """

    kw = dict(chapter=chapter, id=id, size=size, deterministic=deterministic, trained=trained)
    return lambda fn: _register(fn, **kw, inputs=inputs, phone_size=phone_size)


def facts(
    *,
    chapter: int,
    id: str,
    deterministic: bool = True,
    trained: bool = False,
    inputs: tuple[str, ...] = (),
) -> Callable[[Callable[[Recorder], Any]], Item]:
    """Register a computation that only records facts (no drawing); arguments as :func:`figure`."""

    kw = dict(chapter=chapter, id=id, deterministic=deterministic, trained=trained)
    return lambda fn: _register(fn, **kw, size=None, inputs=inputs)


def chapter_modules() -> dict[str, int]:
    """Every figure module's name and chapter number, found without importing them."""
    package = importlib.import_module(FIGURES_PACKAGE)
    found = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        m = MODULE_RE.match(info.name)
        if m:
            found[f"{FIGURES_PACKAGE}.{info.name}"] = int(m.group(1))
    return found


def discover(chapters: Iterable[int] | None = None) -> dict[str, Item]:
    """Import the ``vitbook.figures.chNN_*`` modules (of ``chapters``, or all) and return the
    registry, sorted by chapter. Importing only what is asked keeps one broken chapter from
    stopping the build of another."""
    wanted = None if chapters is None else set(chapters)
    for module, chapter in chapter_modules().items():
        if wanted is None or chapter in wanted:
            importlib.import_module(module)
    for item in REGISTRY.values():
        if item.size is not None and item.draw_fn is None:
            raise ValueError(f"{item.key} has no draw function; add @{item.compute.__name__}.draw")
        if item.export_fn is not None and item.draw_fn is None:
            raise ValueError(f"{item.key} exports explorer data but is not a figure")
    items = {k: i for k, i in REGISTRY.items() if wanted is None or i.chapter in wanted}
    return dict(sorted(items.items(), key=lambda kv: kv[1].chapter))
