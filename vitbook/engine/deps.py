"""What a computation depends on: the source of its module and of every module it imports.

The cache key of a figure is a hash over these sources (found by reading ``import``
statements, transitively, inside the project's own package), as syntax trees without
comments, formatting or docstrings, the data files those modules declare (a module-level
``INPUTS`` list, see :func:`declared_inputs`) and the figure's parameters. Editing a module's
code therefore invalidates exactly the figures that can see it, and nothing else. The
environment (:func:`environment`: library versions, Python, threads, device) is not in any key:
it is recorded with every frozen run and manifest entry, and :func:`environment_mismatch`
stops the engine where the installed one is not the recorded one.

A computation's key (:func:`source_key` with ``compute_only=True``) leaves drawing code out,
so that restyling a figure redraws it without recomputing its numbers (some of which are
wall-clock timings): the bodies of the functions registered with ``@<item>.draw`` or
``@<item>.export``, the module's private helpers that only those functions call
(:func:`compute_source`), and whole modules that declare ``DRAWING_ONLY = True`` (the house
style, ``vitbook.plot``). The key of a figure's files still hashes all of it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import platform
from functools import cache
from pathlib import Path

from . import runtime

ENGINE = "vitbook.engine"
#: Libraries whose version changes numbers or pixels; recorded with every result. (Pillow: the
#: PNG palette quantisation and the face's resize; threadpoolctl: how the threads are pinned.)
VERSIONED = (
    "torch", "numpy", "matplotlib", "pillow", "scikit-learn", "scikit-image", "scipy",
    "threadpoolctl",
)  # fmt: skip


@cache
def _module_file(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


@cache  # by the text: a check parses each module once, however many keys it appears in
def _imports_in(name: str, is_pkg: bool, root: str, text: str) -> frozenset[str]:
    """Modules of package ``root`` that module ``name`` imports (absolute or relative)."""
    tree = ast.parse(text)
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
    return frozenset(
        m for m in found if (m == root or m.startswith(root + ".")) and _module_file(m)
    )


@cache
def closure(name: str) -> tuple[str, ...]:
    """``name`` and every project module it reaches through imports, sorted."""
    root = name.split(".")[0]
    seen: set[str] = set()
    todo = [name]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        # importing a.b.c runs a/__init__ and a/b/__init__ too
        parts = mod.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        path = _module_file(mod)
        if path is not None and (mod == name or not _keyed_by_runs(path)):
            text = path.read_text("utf-8")
            todo.extend(_imports_in(mod, path.name == "__init__.py", root, text) - seen)
    # The engine's modules are left out: most of their code (the command line, the cache, the
    # progress bar) decides where files go, not what they contain. The parts that shape results
    # are hashed function by function instead (build.compute_code and build.render_code).
    # A module that only declares runs (KEYED_BY_RUNS) counts by its code other than its run
    # declarations (see _compute_source): what a computation read from a run is the run's
    # result, whose digest it records.
    return tuple(sorted(m for m in seen if _module_file(m) and not m.startswith(ENGINE)))


@cache
def _keyed_by_runs(path: Path) -> bool:
    """Whether the module declares ``KEYED_BY_RUNS = True``: it only declares frozen runs
    (``vitbook/runs.py``), so a computation that imports it depends on the runs it calls,
    whose keys it records when it computes, not on the code behind every run declared there."""
    return _module_flag(ast.parse(path.read_text(encoding="utf-8")), "KEYED_BY_RUNS")


def library_version(dist: str) -> str:
    """The installed version of distribution ``dist``, or ``"absent"``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@cache
def environment() -> dict[str, str]:
    """Everything outside the source that can change a result: recorded as the provenance of
    every frozen run and manifest entry (no key holds it; see :func:`environment_mismatch`)."""
    out = {dist: library_version(dist) for dist in VERSIONED}
    # the minor version: a bug-fix release of Python changes no number the book computes
    major, minor, _ = platform.python_version_tuple()
    out["python"] = f"{platform.python_implementation()} {major}.{minor}"
    out["threads"] = str(runtime.THREADS)
    out["device"] = runtime.DEVICE
    return out


def declared_inputs(name: str) -> tuple[Path, ...]:
    """The data files module ``name`` declares it reads: a module-level
    ``INPUTS = ("file.npz", ...)`` of string literals, paths relative to the module's folder."""
    path = _module_file(name)
    if path is None:
        return ()
    return tuple(path.parent / v for v in _inputs_in(path.read_text(encoding="utf-8")))


@cache  # by the text, as _imports_in
def _inputs_in(text: str) -> tuple[str, ...]:
    for node in ast.parse(text).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "INPUTS" for t in targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def file_digest(paths: tuple[Path, ...] | list[Path]) -> str:
    """A hash of the names and contents of ``paths`` (a missing file is an error)."""
    h = hashlib.sha256()
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"declared input {p} does not exist")
        h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


#: Decorators (``@<item>.draw``, ``@<item>.export``) whose functions shape files, not results.
DRAWING_DECORATORS = ("draw", "export")
#: Arguments of a registering decorator that shape files, not results (hashed by the item key).
DRAWING_KEYWORDS = ("size", "phone_size")


def _module_flag(tree: ast.Module, flag: str) -> bool:
    """Whether the module assigns ``flag = True`` at top level."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == flag for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and node.value.value is True
        ):
            return True
    return False


@cache
def _imported_names(root: str) -> frozenset[tuple[str, str]]:
    """``(module, name)`` for every ``from module import name`` in package ``root``'s files."""
    pkg = _module_file(root)
    found: set[tuple[str, str]] = set()
    if pkg is None:
        return frozenset()
    for path in pkg.parent.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.update((node.module, a.name) for a in node.names)
    return frozenset(found)


def _is_drawing(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in fn.decorator_list:
        if isinstance(dec, ast.Call):  # @<item>.export(parts=...)
            dec = dec.func
        if isinstance(dec, ast.Attribute) and dec.attr in DRAWING_DECORATORS:
            return True
    return False


def compute_source(name: str, drawing: bool = False) -> bytes:
    """The part of module ``name``'s source that can change what its computations return
    (with ``drawing``: what its files show too).

    The module's syntax tree, so that formatting, comments and docstrings do not count. Without
    ``drawing``, empty for a module that declares ``DRAWING_ONLY = True``, and without the
    bodies of its drawing functions: those decorated ``@<item>.draw`` or ``@<item>.export``,
    and, repeatedly, the private (``_name``) top-level functions that only drawing functions
    mention and that no other module imports; without the sizes given to ``@figure``. In a
    module that declares runs (``KEYED_BY_RUNS``), the declarations ``name = cached(...)`` and
    the private functions only they mention do not count either: a computation that calls a
    run records the digest of the result it read. Any other edit to the code changes it."""
    path = _module_file(name)
    # read on every call (parsing is cached by content): the build checks keys again after
    # computing, and a file saved meanwhile must show
    return _compute_source(name, path.read_text(encoding="utf-8"), drawing)


def _is_run_declaration(node: ast.stmt) -> bool:
    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
    func = value.func if isinstance(value, ast.Call) else None
    return (
        isinstance(func, ast.Name | ast.Attribute)
        and getattr(func, "id", getattr(func, "attr", None)) == "cached"
    )


@cache
def _compute_source(name: str, text: str, drawing_too: bool = False) -> bytes:
    tree = ast.parse(text)
    if _module_flag(tree, "DRAWING_ONLY") and not drawing_too:
        return b""
    if _module_flag(tree, "KEYED_BY_RUNS"):
        tree.body = [n for n in tree.body if not _is_run_declaration(n)]
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    drawing = set() if drawing_too else {id(f) for f in funcs if _is_drawing(f)}
    imported = {n for m, n in _imported_names(name.split(".")[0]) if m == name}

    def mentions(node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
        }

    changed = True
    while changed:
        changed = False
        used_elsewhere: set[str] = set()
        for node in tree.body:
            if id(node) not in drawing:
                used_elsewhere |= mentions(node)
        for f in funcs:
            if (
                id(f) not in drawing
                and f.name.startswith("_")
                and f.name not in used_elsewhere
                and f.name not in imported
                and not f.decorator_list  # a registered function is called by the engine
            ):
                drawing.add(id(f))
                changed = True
    # a figure's sizes (``@figure(size=..., phone_size=...)``) shape its files, not its data
    for f in funcs:
        for dec in f.decorator_list:
            if isinstance(dec, ast.Call) and not drawing_too:
                dec.keywords = [kw for kw in dec.keywords if kw.arg not in DRAWING_KEYWORDS]
        if id(f) in drawing:
            f.body = [ast.Pass()]
    _drop_docstrings(tree)
    # the syntax tree, not the text: reformatting, a comment or a docstring changes no result
    return ast.dump(tree, include_attributes=False).encode()


@cache  # read once a process: a file saved while a build runs must not re-key its runs
def code_of(obj: object) -> str:
    """A function's, class's or module's code as its syntax tree: comments, formatting and
    docstrings do not count, as in every key (:func:`compute_source`)."""
    import inspect
    import textwrap

    return _code_of_source(textwrap.dedent(inspect.getsource(obj)))


@cache  # by the text: a check asks for the same code once per key
def _code_of_source(source: str) -> str:
    tree = ast.parse(source)
    _drop_docstrings(tree)
    return ast.dump(tree, include_attributes=False)


def _drop_docstrings(tree: ast.AST) -> None:
    """Remove the docstrings of a module, its classes and functions (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]


def source_key(
    module: str, *extra: object, compute_only: bool = False, env: dict | None = None
) -> str:
    """A hash of ``module``'s import closure (each module by :func:`compute_source`, drawing
    code left out with ``compute_only``; with the files its modules declare in ``INPUTS``) and
    ``extra`` values. ``env`` is for the migration of old records only, whose keys held
    the :func:`environment` (see :func:`vitbook.engine.cache.migrate`)."""
    h = hashlib.sha256()
    for mod in closure(module):
        h.update(mod.encode() + b"\0")
        h.update(hashlib.sha256(compute_source(mod, drawing=not compute_only)).digest())
        inputs = declared_inputs(mod)
        if inputs:
            h.update(file_digest(inputs).encode())
    if env is not None:
        h.update(json.dumps(env, sort_keys=True).encode())
    h.update(json.dumps([repr(e) for e in extra]).encode())
    return h.hexdigest()[:20]


def install_command(dist: str, version: str) -> str:
    """The command that installs ``dist`` at ``version`` (a ``+cpu`` build of torch from
    PyTorch's CPU wheel index, which is where it is published)."""
    if dist in ("python", "threads", "device"):
        return f"use {dist} {version}"
    public, _, local = version.partition("+")
    if local == "cpu":
        return f"pip install {dist}=={public} --index-url https://download.pytorch.org/whl/{local}"
    return f"pip install {dist}=={version}"


def environment_mismatch(recorded: dict[str, set[str]], where: str) -> str | None:
    """One message for every library whose installed version is not the one ``recorded`` (by
    name, the versions the records name) in ``where``, with the commands that install
    what they need; None where they agree."""
    now = environment()
    wrong = {k: v for k, v in sorted(recorded.items()) if v - {now.get(k, "absent")}}
    if not wrong:
        return None
    lines = [f"error: the installed libraries are not those {where} were made with:"]
    for dist, versions in wrong.items():
        need = " or ".join(sorted(versions))
        lines.append(f"  {dist}: installed {now.get(dist, 'absent')}, the records need {need}")
    lines.append("install what they need (nothing was built, checked or trained):")
    lines += [f"  {install_command(d, max(v))}" for d, v in wrong.items()]
    lines.append(
        "a deliberate upgrade: `python -m vitbook verify --runs --new-environment`, then "
        "`python -m vitbook migrate --record-environment` (docs/building.md, 'Upgrading a "
        "library')"
    )
    return "\n".join(lines)
