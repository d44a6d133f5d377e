"""What a computation depends on: the source of its module and of every module it imports.

The cache key of a figure is a hash over these sources (found by reading ``import``
statements, transitively, inside the project's own package), the data files those modules
declare (a module-level ``INPUTS`` list, see :func:`declared_inputs`), the figure's
parameters and the environment that can change a number or a pixel (:func:`environment`:
library versions, the Python version, the thread count and the device). Editing a module
therefore invalidates exactly the figures that can see it, and nothing else.
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
#: Libraries whose version changes numbers or pixels; part of every key. (Pillow: the PNG
#: palette quantisation and the face's resize; threadpoolctl: how the threads are pinned.)
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


def _imports(name: str, path: Path, root: str) -> set[str]:
    """Modules of package ``root`` that module ``name`` imports (absolute or relative)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
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
    return {m for m in found if (m == root or m.startswith(root + ".")) and _module_file(m)}


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
        if path is not None:
            todo.extend(_imports(mod, path, root) - seen)
    # The engine's modules are left out: most of their code (the command line, the cache, the
    # progress bar) decides where files go, not what they contain. The parts that shape results
    # are hashed function by function instead (build.compute_code and build.render_code).
    return tuple(sorted(m for m in seen if _module_file(m) and not m.startswith(ENGINE)))


def library_version(dist: str) -> str:
    """The installed version of distribution ``dist``, or ``"absent"``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@cache
def environment() -> dict[str, str]:
    """Everything outside the source that can change a result; part of every key."""
    out = {dist: library_version(dist) for dist in VERSIONED}
    out["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    out["threads"] = str(runtime.THREADS)
    out["device"] = runtime.DEVICE
    return out


def declared_inputs(name: str) -> tuple[Path, ...]:
    """The data files module ``name`` declares it reads: a module-level
    ``INPUTS = ("file.npz", ...)`` of string literals, paths relative to the module's folder."""
    path = _module_file(name)
    if path is None:
        return ()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "INPUTS" for t in targets):
            value = ast.literal_eval(node.value)
            return tuple(path.parent / v for v in value)
    return ()


def file_digest(paths: tuple[Path, ...] | list[Path]) -> str:
    """A hash of the names and contents of ``paths`` (a missing file is an error)."""
    h = hashlib.sha256()
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"declared input {p} does not exist")
        h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def source_key(module: str, *extra: object) -> str:
    """A hash of ``module``'s import closure (with the files its modules declare in ``INPUTS``),
    the :func:`environment` and ``extra`` values."""
    h = hashlib.sha256()
    for mod in closure(module):
        h.update(mod.encode() + b"\0")
        h.update(hashlib.sha256(_module_file(mod).read_bytes()).digest())
        inputs = declared_inputs(mod)
        if inputs:
            h.update(file_digest(inputs).encode())
    h.update(json.dumps(environment(), sort_keys=True).encode())
    h.update(json.dumps([repr(e) for e in extra]).encode())
    return h.hexdigest()[:20]
