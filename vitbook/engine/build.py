"""Build figures and facts: decide what is stale, compute it, draw it, write it safely.

For every registered item the engine derives a key (see :func:`item_key`) from everything
that can change what the item's files and facts contain: its code and the code it imports
(syntax trees: comments and docstrings change no key), the data files it declares and the
engine code that seeds, records facts and renders. The manifest ``figures/manifest.json``
remembers, per item, the key its files were made with, the digest of the result of each run
it read, each file's SHA-256 and the environment it was made in (provenance, checked by
the command line). :func:`why_stale` is the one place that decides whether an item is stale;
only stale items are computed. A computed result is also stored in the result cache (under
:func:`compute_key`), so a figure whose files were deleted or damaged is redrawn without
recomputing.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cache as memoize
from pathlib import Path
from typing import Any

from . import cache, explorer, frozen, registry, runtime
from .deps import code_of, environment, file_digest, source_key
from .paths import figures_dir, project_root
from .registry import Item, Recorder, discover

#: The desktop PNGs' resolution: the 7.2 in column is 1,440 px, two device pixels per CSS pixel
#: of the 720 px slot (pages offer WebP copies at 720 and 1,080 px below it, so a screen of one
#: or one and a half device pixels per CSS pixel downloads no more than it did at 150 dpi).
DPI = 200
#: The SVGs' resolution for what they hold as images (heat maps): unchanged, so are they.
SVG_DPI = 150
#: The phone variants' resolution: 3.8 in at 150 dpi is 570 px, about 1.6 device pixels per
#: CSS pixel of a 390 px phone's column, and keeps the files light.
PHONE_DPI = 150
#: No text in a phone variant is smaller than this (points): at 3.8 in across a 390 px phone's
#: column it is displayed at about 10 CSS px. The engine raises smaller text to it.
PHONE_MIN_FONT_PT = 8.0
THEMES = ("light", "dark")
SVG_SALT = "vitbook"


@dataclass(frozen=True)
class Variant:
    """What a draw function is told: the theme, the figure's size in inches, and whether this
    is the phone variant (narrower, for a single column of about 360 CSS px)."""

    name: str
    size: tuple[float, float]
    phone: bool = False

    @property
    def dark(self) -> bool:
        return self.name == "dark"


@dataclass
class Outcome:
    """What happened to one item in a build."""

    key: str
    status: str  # "computed", "redrawn", "cached" or "failed" ("deferred": tried again later)
    seconds: float = 0.0
    runs: dict[str, tuple[float, int, int]] = field(default_factory=dict)  # see cache.RUNS
    entry: dict[str, Any] | None = None
    error: str | None = None


def _code_digest(parts: list[Any]) -> str:
    """A hash of the code of each function, class or module in ``parts`` (its syntax tree:
    comments and docstrings do not count; other values by their ``repr``)."""
    h = hashlib.sha256()
    for part in parts:
        code = inspect.isfunction(part) or inspect.isclass(part) or inspect.ismodule(part)
        text = code_of(part) if code else repr(part)
        h.update(hashlib.sha256(text.encode()).digest())
    return h.hexdigest()[:20]


@memoize
def compute_code() -> str:
    """The engine code that shapes what a computation returns and records: the seeds, threads
    and device it runs under (the whole of ``runtime``) and the way facts are formatted and
    stored (``registry.Recorder``). Editing it makes every item stale; editing the command line,
    the cache or the progress bar does not."""
    return _code_digest([runtime, registry.Recorder, registry._plain, _facts_of])


@memoize
def render_code() -> str:
    """The engine code that shapes the bytes of a figure's files: drawing in each theme,
    PNG quantisation, SVG post-processing, the explorer encoding and the constants they use."""
    return _code_digest(
        [
            Variant,
            render,
            variants,
            file_names,
            raise_small_text,
            shrink_png,
            stable_svg,
            explorer,
            DPI,
            SVG_DPI,
            PHONE_DPI,
            PHONE_MIN_FONT_PT,
            THEMES,
            SVG_SALT,
            _NUMBER.pattern,
            _HASHED_ID.pattern,
        ]
    )


def item_inputs(item: Item) -> list[Path]:
    """The data files ``item`` declares (``inputs=``), as paths under the project root."""
    return [project_root() / p for p in item.inputs]


def compute_key(item: Item) -> str:
    """What the computation depends on: its module's import closure without its drawing code
    (see :func:`vitbook.engine.deps.compute_source`), its declared inputs and the engine code
    that runs it and records its facts (the runs it reads: by their results, see
    :func:`why_stale`). Restyling a figure leaves it alone, so
    the figure is redrawn from the cached result (a timing is not measured again)."""
    inputs = file_digest(item_inputs(item)) if item.inputs else ""
    return source_key(item.module, item.key, inputs, compute_code(), compute_only=True)


def item_key(item: Item) -> str:
    """What the files depend on: the computation and, for a figure, the whole code of its
    module's import closure (drawing code included), its sizes and the rendering code (an item
    without a figure writes no file: its key is its computation's)."""
    if not item.is_figure:
        return compute_key(item)
    parts = [
        compute_key(item),
        source_key(item.module, item.key),
        repr(item.size),
        repr(item.phone_size),
        render_code(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def variants(item: Item) -> list[tuple[Variant, str, tuple[str, ...]]]:
    """What :func:`render` draws, in order: each variant, its file stem suffix and formats.
    The desktop variants come as PNG and SVG; the phone ones as PNG only (pages link the
    desktop SVGs)."""
    out = []
    for phone in (False, True):
        size = item.phone_size if phone else item.size
        for theme in THEMES:
            suffix = (".phone" if phone else "") + ("" if theme == "light" else ".dark")
            formats = ("png",) if phone else ("png", "svg")
            out.append((Variant(theme, size, phone), suffix, formats))
    return out


def file_names(item: Item) -> list[str]:
    """Paths, relative to the figures folder, that an item writes."""
    if not item.is_figure:
        return []
    stem = f"ch{item.chapter:02d}/{item.id}"
    names = [f"{stem}{suffix}.{ext}" for _, suffix, formats in variants(item) for ext in formats]
    if item.export_fn is not None:
        names.append(explorer.file_name(stem))
        names += [explorer.file_name(stem, part) for part in item.explorer_parts]
    return names


def sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def why_stale(item: Item, entry: dict[str, Any] | None, outdir: Path) -> str | None:
    """Why ``item`` is out of date (a short phrase), or None if it is up to date: the one
    place that decides. Stale: its key (its code, inputs or the engine code that shapes it)
    changed, a run it read gives another result now (or is not current), or a file is
    missing or not the one the manifest recorded."""
    if not entry:
        return "never built"
    if entry.get("key") != item_key(item):
        if entry.get("compute_key") == compute_key(item):
            return "rendering changed"
        return "key changed"
    for c in entry.get("consumed", []):
        if cache.consumed_result(c) != c.get("result"):
            return f"run {short_run(c)} changed"
    files = entry.get("files", {})
    names = file_names(item)
    if sorted(files) != sorted(names):
        return "files changed"
    for n in names:
        if sha256(outdir / n) != files[n]:
            return f"{n} missing or damaged"
    return None


def short_run(consumed: dict[str, Any]) -> str:
    """``transfer_run(arm=cnn,n_train=100,seed=0)``: a consumed run, named for a person."""
    return f"{consumed['run'].rsplit('.', 1)[-1]}({consumed['slug']})"


def render(item: Item, data: Any) -> dict[str, bytes]:
    """Draw ``data`` in every variant (see :func:`variants`) and return the encoded files by
    name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, bytes] = {}
    names = iter(file_names(item))
    metas = {"png": {"Software": None}, "svg": {"Date": None}}
    for variant, _suffix, formats in variants(item):
        with matplotlib.rc_context({"svg.hashsalt": SVG_SALT, "svg.fonttype": "path"}):
            fig = item.draw_fn(data, variant)
            if variant.phone:
                raise_small_text(fig, PHONE_MIN_FONT_PT)
            for fmt in formats:
                buf = io.BytesIO()
                dpi = PHONE_DPI if variant.phone else DPI if fmt == "png" else SVG_DPI
                fig.savefig(buf, format=fmt, dpi=dpi, metadata=metas[fmt])
                blob = buf.getvalue()
                name = next(names)
                out[name] = shrink_png(blob) if fmt == "png" else stable_svg(blob)
                TEXT_SIZES[name] = text_metrics(fig)
            plt.close(fig)
    if item.export_fn is not None:
        export = item.export_fn(data)
        if sorted(export.parts) != sorted(item.explorer_parts):
            raise ValueError(
                f"{item.key} exports the parts {sorted(export.parts)}; "
                f"its @export declares {sorted(item.explorer_parts)}"
            )
        out.update(explorer.encode_files(item.key, export))
    return out


def raise_small_text(fig: Any, floor: float) -> None:
    """Raise every text of ``fig`` smaller than ``floor`` points to ``floor`` (tick labels
    included, which exist only once the figure is drawn), so that no phone file carries text
    too small to read whatever its draw function asked for."""
    from matplotlib.text import Text

    fig.canvas.draw()
    for ax in fig.get_axes():
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            for minor in (False, True):
                ticks = axis.get_minor_ticks() if minor else axis.get_major_ticks()
                if any(t.label1.get_fontsize() < floor for t in ticks[:1]):
                    ax.tick_params(axis=which, which="minor" if minor else "major", labelsize=floor)
    for t in fig.findobj(Text):
        if t.get_fontsize() < floor:
            t.set_fontsize(floor)


#: ``file name -> {"width_in", "min_font_pt"}`` of the files :func:`render` drew last; the
#: manifest records it per file (``entry["text"]``), so a browser test can compute the size
#: figure text is displayed at: ``min_font_pt * shown_width_px / (width_in * 72)``.
TEXT_SIZES: dict[str, dict[str, float]] = {}


def text_metrics(fig: Any) -> dict[str, float]:
    """The figure's width in inches and the smallest font size (points) of its visible text
    (call it after the figure is drawn: tick labels exist only then)."""
    from matplotlib.text import Text

    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_alpha() != 0
    ]
    return {
        "width_in": round(float(fig.get_size_inches()[0]), 3),
        "min_font_pt": round(float(min(sizes)), 2) if sizes else 0.0,
    }


def text_sizes(names: Iterable[str]) -> dict[str, dict[str, float]]:
    """The text metrics of the named files from the last :func:`render` (empty if unknown)."""
    return {n: TEXT_SIZES[n] for n in sorted(names) if n in TEXT_SIZES}


def shrink_png(blob: bytes) -> bytes:
    """Reduce a PNG to a 256-colour palette (dithered): about a third of the bytes, which
    keeps pages light. Deterministic, like the rest of the rendering."""
    from PIL import Image

    image = Image.open(io.BytesIO(blob)).convert("RGB")
    small = image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.FLOYDSTEINBERG)
    out = io.BytesIO()
    small.save(out, format="PNG", optimize=True)
    return out.getvalue()


_NUMBER = re.compile(rb"(?<![\w#.])-?\d+\.\d{3,}")
_HASHED_ID = re.compile(rb'id="([a-z][0-9a-f]{10})"')


def stable_svg(blob: bytes) -> bytes:
    """Make an SVG independent of last-digit noise in the layout.

    Layout coordinates can differ in their sixth decimal between two runs (numpy's SIMD sums
    depend on memory alignment), and matplotlib names clip paths by a hash of them. Rounding
    to 0.01 pt (invisible) and numbering the hashed ids in order of appearance gives the
    same bytes for the same drawing.
    """

    def rounded(m: re.Match[bytes]) -> bytes:
        text = f"{float(m.group()):.2f}"
        return b"0.00" if text == "-0.00" else text.encode()

    blob = _NUMBER.sub(rounded, blob)
    for n, old in enumerate(dict.fromkeys(_HASHED_ID.findall(blob))):
        blob = blob.replace(b"#" + old + b")", b"#vb" + str(n).encode() + b")")
        blob = blob.replace(b'"' + old + b'"', b'"vb' + str(n).encode() + b'"')
        blob = blob.replace(b'"#' + old + b'"', b'"#vb' + str(n).encode() + b'"')
    return blob


def _facts_of(item: Item) -> tuple[Any, dict[str, Any]]:
    """Run ``item``'s computation under the book's conditions; its data and its facts."""
    rec = Recorder(item.chapter)
    with runtime.book_conditions():
        data = item.compute(rec)
    return data, rec.facts


class SourcesChanged(RuntimeError):
    """A source file an item depends on changed while the item was built: the code that ran
    may not be the code its key describes, so nothing is stored for it."""


def build_one(key: str, outdir: Path, force: bool, expected: str | None = None) -> Outcome:
    """Compute (or fetch) and draw one item; write its files atomically.

    ``expected`` is the item's key when the build started. The key is read from the files on
    disk, the code from what this process imported, so an edit in between could record a new
    key over results of old code: the key is checked against ``expected`` first and against
    the files again before anything is stored, and the item fails if it moved."""
    item = discover([int(key[2:4])])[key]
    cache.RUNS.clear()
    start = time.perf_counter()
    ikey = item_key(item)
    ckey = compute_key(item)

    def unchanged(now: str, then: str | None) -> None:
        if then is not None and now != then:
            raise SourcesChanged(f"{key}: a source file changed during the build; build again")

    unchanged(ikey, expected)
    result_path = cache.cache_dir() / "results" / f"ch{item.chapter:02d}-{item.id}-{ckey}.pkl"

    def compute() -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
        with frozen.tracing() as consumed:
            data, facts = _facts_of(item)
        unchanged(compute_key(item), ckey)  # raising here keeps it out of the result cache
        return data, facts, consumed

    hit = False
    if not force:
        ok, value = cache.load(result_path)
        hit = ok and len(value) == 3  # and every run it read still gives what it read:
        hit = hit and all(cache.consumed_result(c) == c.get("result") for c in value[2])
    if hit:
        data, facts, consumed = value
    else:
        with cache.file_lock(result_path.with_suffix(".lock"), wait=cache._WAIT):
            data, facts, consumed = compute()
            cache.store(result_path, (data, facts, consumed))
    files = render(item, data) if item.is_figure else {}
    unchanged(item_key(item), ikey)
    for name, blob in files.items():
        cache.atomic_write(outdir / name, blob)
    entry = {
        "key": ikey,
        "compute_key": ckey,
        "files": {n: hashlib.sha256(b).hexdigest() for n, b in sorted(files.items())},
        "facts": facts,
        "deterministic": item.deterministic,
        "trained": item.trained,
        "text": text_sizes(files),
        "consumed": consumed,
        "source": source_of(item),
        "computed_on": cache.computed_on(portable=False),
        "environment": environment(),
    }
    seconds = time.perf_counter() - start
    status = "redrawn" if hit else "computed"
    return Outcome(key, status, seconds, dict(cache.RUNS), entry)


def source_of(item: Item) -> dict[str, Any]:
    """Where the item's computation is: its file (from the project root), function and lines."""
    import inspect

    fn = inspect.unwrap(item.compute)
    lines, first = inspect.getsourcelines(fn)
    path = Path(inspect.getsourcefile(fn)).resolve()
    try:
        path = path.relative_to(project_root())
    except ValueError:
        pass
    return {
        "file": path.as_posix(),
        "function": fn.__name__,
        "lines": [first, first + len(lines) - 1],
    }


def _safe_build_one(
    key: str, outdir: Path, force: bool, expected: str | None = None, defer: bool = False
) -> Outcome:
    """:func:`build_one`, with a failure reported as an outcome. With ``defer``, an item that
    needs a run another worker is training gives up at once with the status "deferred"."""
    try:
        with cache.waiting(not defer):
            return build_one(key, outdir, force, expected)
    except cache.Busy:
        return Outcome(key, "deferred")
    except Exception as exc:  # reported in the table; the build exits non-zero
        import traceback

        return Outcome(key, "failed", error="".join(traceback.format_exception(exc)))


def read_manifest(outdir: Path) -> dict[str, Any]:
    try:
        return json.loads((outdir / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def write_outputs(
    outdir: Path,
    outcomes: Iterable[Outcome],
    registry: dict[str, Item],
    prune: bool,
    pending: frozenset[str] = frozenset(),
) -> None:
    """Merge new entries into the manifest and rewrite ``facts.json`` (under a lock).

    ``pending``: items this build has still to compute. Their old entries are stale, so their
    facts stay out of ``facts.json`` until they are rebuilt: a fact that moved from one of them
    to an item built earlier is not recorded twice."""
    with cache.file_lock(outdir / ".lock"):
        manifest = read_manifest(outdir)
        for o in outcomes:
            if o.entry is not None:
                manifest[o.key] = o.entry
        if prune:
            for key in set(manifest) - set(registry):
                del manifest[key]
            keep = {n for e in manifest.values() for n in e["files"]}
            for path in outdir.glob("ch*/*.*"):
                if path.relative_to(outdir).as_posix() not in keep:
                    path.unlink()
            cache.prune_frozen([c for e in manifest.values() for c in e.get("consumed", [])])
        facts: dict[str, dict[str, Any]] = {}
        for key, entry in sorted(manifest.items()):
            if key in pending:
                continue
            chapter = key.split("/")[0]
            for name, fact in entry["facts"].items():
                if name in facts.setdefault(chapter, {}):
                    raise ValueError(f"fact {chapter}.{name} is recorded by two items")
                facts[chapter][name] = fact
        dump = lambda obj: (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode()  # noqa: E731
        cache.atomic_write(outdir / "manifest.json", dump(manifest))
        cache.atomic_write(outdir / "facts.json", dump(facts))


def build(
    keys: list[str],
    *,
    force: bool = False,
    jobs: int = 1,
    prune: bool = False,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Bring the items named by ``keys`` up to date; return what happened to each."""
    outdir = figures_dir()
    with cache.file_lock(outdir / ".lock"):
        cache.remove_orphans(outdir)
    cache.remove_orphans(cache.cache_dir())
    registry = discover({int(k[2:4]) for k in keys} if not prune else None)
    manifest = read_manifest(outdir)
    outcomes: list[Outcome] = []
    todo = []
    for key in keys:
        if not force and why_stale(registry[key], manifest.get(key), outdir) is None:
            outcomes.append(Outcome(key, "cached"))
            if on_done:
                on_done(outcomes[-1])
        else:
            todo.append(key)
    expected = {key: item_key(registry[key]) for key in todo}  # the sources as the build starts
    pending = set(todo)
    if jobs == 1 or len(todo) <= 1:
        for key in todo:
            outcomes.append(_safe_build_one(key, outdir, force, expected[key]))
            if on_done:
                on_done(outcomes[-1])
            pending.discard(key)
            write_outputs(outdir, outcomes[-1:], registry, prune=False, pending=frozenset(pending))
    else:
        import multiprocessing

        # Every worker computes on runtime.THREADS threads, whatever ``jobs`` is. An item that
        # needs a run another worker is still training is put back once, behind the others,
        # instead of holding a worker while it waits; the second time it waits.
        ctx = multiprocessing.get_context("spawn")
        queue = deque((key, True) for key in todo)
        running: set[Future[Outcome]] = set()
        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=runtime.pin_environment) as pool:
            while queue or running:
                while queue and len(running) < jobs:
                    key, defer = queue.popleft()
                    running.add(
                        pool.submit(_safe_build_one, key, outdir, force, expected[key], defer)
                    )
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    outcome = fut.result()
                    if outcome.status == "deferred":
                        queue.append((outcome.key, False))
                        continue
                    outcomes.append(outcome)
                    if on_done:
                        on_done(outcome)
                    pending.discard(outcome.key)
                    write_outputs(outdir, [outcome], registry, prune=False,
                                  pending=frozenset(pending))  # fmt: skip
    # nothing is pruned unless every item of the whole book was built: a run an item that
    # failed (or was killed) trained is in no manifest entry yet, and must not be deleted
    write_outputs(outdir, [], registry, prune=prune and all(o.status != "failed" for o in outcomes))
    order = {k: i for i, k in enumerate(keys)}
    return sorted(outcomes, key=lambda o: order[o.key])


def stale(keys: list[str]) -> dict[str, str]:
    """The items among ``keys`` whose files are missing, damaged or out of date, each with the
    reason (see :func:`why_stale`)."""
    outdir = figures_dir()
    registry = discover({int(k[2:4]) for k in keys})
    manifest = read_manifest(outdir)
    reasons = {k: why_stale(registry[k], manifest.get(k), outdir) for k in keys}
    return {k: r for k, r in reasons.items() if r is not None}
