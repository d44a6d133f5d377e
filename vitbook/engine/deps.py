"""What a computation depends on: the source of its module and of every module it imports.

The cache key of a figure is a hash over these sources (found by reading ``import``
statements, transitively, inside the project's own package), the figure's parameters
and the versions of the numerical libraries. Editing a module therefore invalidates
exactly the figures that can see it, and nothing else.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
from functools import cache
from pathlib import Path

#: Libraries whose version changes numbers or pixels; part of every key.
ENGINE = "vitbook.engine"
VERSIONED = ("torch", "numpy", "matplotlib", "scikit-learn", "scikit-image", "scipy")


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
    # The engine itself is left out: it decides where files go, not what they contain.
    # What it does to the bytes is versioned by render.RENDER_VERSION, part of every key.
    return tuple(sorted(m for m in seen if _module_file(m) and not m.startswith(ENGINE)))


@cache
def versions() -> dict[str, str]:
    out = {}
    for dist in VERSIONED:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def source_key(module: str, *extra: object) -> str:
    """A hash of ``module``'s import closure, library versions and ``extra`` values."""
    h = hashlib.sha256()
    for mod in closure(module):
        h.update(mod.encode() + b"\0")
        h.update(hashlib.sha256(_module_file(mod).read_bytes()).digest())
    h.update(json.dumps(versions(), sort_keys=True).encode())
    h.update(json.dumps([repr(e) for e in extra]).encode())
    return h.hexdigest()[:20]
