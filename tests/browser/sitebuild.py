"""The built site, shared by the browser tests and the link checker.

``built_site()`` returns a folder holding the book built with ``mkdocs build --strict``: the
folder named by ``$VITBOOK_SITE`` if set (CI builds once and points the tests at it), otherwise a
fresh build into a temporary folder, made once per test session. That build is the one
execution of the notebooks in a test run (``tests/test_notebooks.py`` reads their outputs from
its pages): it starts from an empty mkdocs-jupyter cache, so the notebooks run against the code
as it is, and it runs with the network switched off when a network namespace can be made
(``offline_prefix()``), so ``tests/test_offline.py`` checks this same build instead of making
another. ``serve()`` serves a folder on
127.0.0.1 from a thread. ``nav_pages()`` lists the site's pages from ``mkdocs.yml``'s nav, so
tests can be parametrized before anything is built.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from filelock import FileLock

from vitbook.site.local import serve  # noqa: F401  (the tests serve the site with this)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
MAX_PAGE_BYTES = 3 * 1024 * 1024


class _Loader(yaml.SafeLoader):
    """Reads mkdocs.yml, ignoring its ``!!python/name`` tags."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@functools.cache
def mkdocs_config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)


def site_prefix() -> str:
    """The path part of ``site_url`` (``/vitbook/``): absolute links start with it."""
    path = urlsplit(mkdocs_config().get("site_url", "/")).path or "/"
    return path if path.endswith("/") else path + "/"


def page_url(src: str) -> str:
    """The site-relative URL of a docs source file: ``02-patches.md`` -> ``02-patches/``."""
    stem = re.sub(r"\.(md|py|ipynb)$", "", src)
    if stem == "index":
        return ""
    return (stem.removesuffix("/index") if stem.endswith("/index") else stem) + "/"


def _walk(nav: object) -> Iterator[tuple[str, str]]:
    if isinstance(nav, str):
        yield nav, nav
    elif isinstance(nav, list):
        for entry in nav:
            yield from _walk(entry)
    elif isinstance(nav, dict):
        for title, value in nav.items():
            if isinstance(value, str):
                yield title, value
            else:
                yield from _walk(value)


def nav_pages() -> list[tuple[str, str]]:
    """``(title, url)`` for every page in the nav (external links left out)."""
    pages = []
    for title, src in _walk(mkdocs_config().get("nav", [])):
        if "://" in src:
            continue
        pages.append((title, page_url(src)))
    return pages


def sitemap_pages(site: Path) -> list[str]:
    """Site-relative URLs listed in the built ``sitemap.xml``."""
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    prefix = site_prefix()
    urls = []
    for loc in ET.parse(site / "sitemap.xml").getroot().findall("s:url/s:loc", ns):
        path = urlsplit(loc.text.strip()).path
        urls.append(path[len(prefix) :] if path.startswith(prefix) else path.lstrip("/"))
    return urls


def rotation(items: list, combos: list) -> list[tuple]:
    """``(item, combo)`` pairs a run checks: every item in every combination when
    ``$VITBOOK_ROTATION`` is ``all`` (the weekly run, .github/workflows/verify.yml); otherwise
    each item once, item ``i`` in combination ``(i + commit) % len(combos)``, so that every run
    checks every item and consecutive commits go through every combination of each in turn."""
    from vitbook.engine.cli import commit_index

    if os.environ.get("VITBOOK_ROTATION") == "all":
        return [(item, combo) for item in items for combo in combos]
    k = commit_index()
    return [(item, combos[(i + k) % len(combos)]) for i, item in enumerate(items)]


_BUILT: dict[str, Path] = {}
#: True once this session's own build (not ``$VITBOOK_SITE``) ran without a network.
BUILT_OFFLINE: dict[str, bool] = {}
#: Run "$@" in a new network namespace whose only interface is loopback (Jupyter talks to the
#: notebooks' kernel over 127.0.0.1; loopback reaches no other machine).
OFFLINE = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "offline"]
#: mkdocs-jupyter's cache of executed notebooks (its default ``cache_dir``, under the root).
NOTEBOOK_CACHE = ROOT / ".cache" / "mkdocs-jupyter"


@functools.cache
def offline_prefix() -> tuple[list[str] | None, str]:
    """``(prefix, "")``: a command prefix that runs a command with no network, as root a plain
    network namespace, otherwise one inside a user namespace (``unshare -r``); or
    ``(None, why)`` when neither can be made here."""
    missing = [tool for tool in ("unshare", "ip") if shutil.which(tool) is None]
    if missing:
        return None, f"{', '.join(missing)} not found: install util-linux and iproute2"
    errors = []
    for prefix in (OFFLINE, [OFFLINE[0], "-r", *OFFLINE[1:]]):
        proc = subprocess.run([*prefix, "true"], capture_output=True, text=True)
        if proc.returncode == 0:
            return prefix, ""
        errors.append(f"{' '.join(prefix[:3])}: {proc.stderr.strip()}")
    return None, (
        "cannot create a network namespace (`unshare -n` needs root or CAP_SYS_ADMIN; "
        "`unshare -rn` needs unprivileged user namespaces): " + "; ".join(errors)
    )


def build_site(
    dest: Path, *, env: dict[str, str] | None = None, prefix: list[str] | None = None
) -> subprocess.CompletedProcess:
    """``mkdocs build --strict -d dest`` from the repository root (optionally under ``prefix``)."""
    cmd = [*(prefix or []), sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(dest)]
    full_env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})}
    # the timeout only catches a hang (a kernel that never returns); it is not a time budget
    return subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=3600)


def _build_once(dest: Path) -> dict:
    """Build the book into ``dest`` from a fresh notebook cache, offline where it can be:
    ``{"ok", "offline", "tail"}`` (the tail of the build's output when it failed)."""
    shutil.rmtree(NOTEBOOK_CACHE, ignore_errors=True)  # execute the notebooks afresh
    prefix, _ = offline_prefix()
    proc = build_site(dest, prefix=prefix)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    return {"ok": proc.returncode == 0, "code": proc.returncode, "offline": prefix is not None,
            "tail": tail}  # fmt: skip


def _shared_build() -> tuple[Path, dict]:
    """The site of this test run. With pytest-xdist the workers share one build: the first to
    ask builds it under a lock in a folder named by the run's id, the others wait and read its
    outcome; a run without workers builds into a fresh temporary folder."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        dest = Path(tempfile.mkdtemp(prefix="vitbook-site-"))
        return dest, _build_once(dest)
    shared = Path(tempfile.gettempdir()) / f"vitbook-site-{run}"
    shared.mkdir(exist_ok=True)
    outcome = shared / "outcome.json"
    with FileLock(shared / "build.lock"):
        if not outcome.is_file():
            outcome.write_text(json.dumps(_build_once(shared / "site")))
    return shared / "site", json.loads(outcome.read_text())


def built_site() -> Path:
    """The built book: ``$VITBOOK_SITE``, or a fresh strict build made once per test run."""
    given = os.environ.get("VITBOOK_SITE")
    if given and "site" not in _BUILT:
        site = Path(given)
        if not (site / "index.html").is_file():
            raise RuntimeError(
                f"VITBOOK_SITE={given} holds no index.html: build the site there "
                f"with `mkdocs build --strict -d {given}`"
            )
        return site
    if "site" not in _BUILT:
        dest, outcome = _shared_build()
        BUILT_OFFLINE["site"] = outcome["offline"]
        if not outcome["ok"]:
            raise RuntimeError(
                f"mkdocs build --strict failed (exit {outcome['code']}):\n{outcome['tail']}"
            )
        _BUILT["site"] = dest
        # the link checker, collected in the same session, reuses this build
        os.environ["VITBOOK_SITE"] = str(dest)
    return _BUILT["site"]
