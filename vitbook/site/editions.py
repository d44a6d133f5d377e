"""Editions: a release of the book that a citation can point at, and what changed between two.

An **edition** is a commit tagged ``vX.Y.Z`` whose files name that version (``pyproject.toml``,
``CITATION.cff``, ``.zenodo.json`` and the notebooks' install cell, all written by
``python -m vitbook.site.editions prepare X.Y.Z``). It is published at its own path beside the
latest text, with mike (``python -m vitbook.site.editions deploy X.Y.Z``), which keeps every
version in the ``gh-pages`` branch under ``<version>/`` with a ``versions.json`` that Material's
version selector reads. The build of the commit on ``main`` is published as ``latest``: it says it
is not an edition.

Which copy a build makes is read from ``MIKE_DOCS_VERSION`` (set by mike and by ``deploy``):

* ``X.Y.Z``: the edition; the build fails unless ``vX.Y.Z`` tags the commit being built, the tree
  is clean and every file names that version;
* ``latest``: the latest text, served under ``latest/``;
* unset: a plain ``mkdocs build`` (a preview, the tests), the latest text at the site's root.

From the history (tags and commits, ``git``) a build also knows the edition before it, so each
chapter can say what changed since (:func:`changes`) and which printed numbers moved
(:func:`changed_numbers`, from the two editions' ``figures/facts.json``), and the errata page can
list the corrections between editions (commits with an ``Erratum:`` trailer, :func:`errata`).
A checkout without history (a shallow clone) says so instead of guessing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
TAG_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
LATEST = "latest"
#: the line of each notebook's install cell that names its edition (``prepare`` writes it)
EDITION_LINE = re.compile(r"^EDITION = (None|\"\d+\.\d+\.\d+\")[^\n]*$", re.M)
#: the line that names the commit a published copy was built from (the site's build writes it)
COMMIT_LINE = re.compile(r"^COMMIT = (None|\"[0-9a-f]{40}\")[^\n]*$", re.M)
#: PyPI's Linux torch is the CUDA build; the book's numbers come from the CPU build, here
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


class EditionError(RuntimeError):
    """The build cannot be the edition it was asked to be (no tag, a dirty tree, files that
    name another version)."""


def git(root: Path, *args: str) -> str | None:
    """``git args`` in ``root``: its output, or None when git or the history is not there."""
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def vkey(version: str) -> tuple[int, int, int]:
    m = VERSION_RE.match(version)
    if not m:
        raise ValueError(f"{version!r} is not a version X.Y.Z")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def package_version(root: Path = ROOT) -> str:
    """The version in ``pyproject.toml``: the edition this text is, or will be (a project
    without one, such as a test's scratch site, gets the installed package's)."""
    path = Path(root) / "pyproject.toml"
    if not path.is_file():
        from importlib import metadata

        try:
            return metadata.version("vitbook")
        except metadata.PackageNotFoundError:
            return "0.0.0"
    return tomllib.loads(path.read_text())["project"]["version"]


def tags(root: Path, ref: str = "HEAD") -> list[str]:
    """The editions (tags ``vX.Y.Z``) in the history of ``ref``, oldest first, as ``X.Y.Z``."""
    out = git(root, "tag", "--merged", ref, "--list", "v*")
    found = [t.strip()[1:] for t in (out or "").splitlines() if TAG_RE.match(t.strip())]
    return sorted(found, key=vkey)


def repo_url(config: dict[str, Any]) -> str:
    """The repository's web address, from the GitHub link of ``extra.social`` in mkdocs.yml."""
    for item in config.get("extra", {}).get("social", []) or []:
        if "github" in str(item.get("icon", "")):
            return str(item.get("link", "")).rstrip("/")
    return ""


@dataclass(frozen=True)
class Edition:
    """Which copy of the book a build makes, and the editions around it."""

    version: str  # the package's version (pyproject.toml)
    edition: str | None  # "0.2.0" when this build is that edition, else None
    path: str | None  # where the copy is served under the site: "0.2.0", "latest", or None
    commit: str  # the commit built ("" without git)
    date: dt.date  # an edition's: its tagged commit's date; the latest: the last commit's
    previous: str | None  # the newest edition before this text, "X.Y.Z"
    editions: tuple[str, ...] = ()  # every edition in the history, oldest first
    history: bool = True  # False in a checkout without history (a shallow clone)
    site_url: str = ""  # the site's root, without a version ("https://.../vitbook/")
    repo: str = ""

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def url(self) -> str:
        """The root of this copy: the edition's own address, or the latest text's."""
        return self.site_url + (f"{self.path}/" if self.path else "")

    def url_of(self, version: str) -> str:
        return f"{self.site_url}{version}/"

    @property
    def title(self) -> str:
        """What the version selector and the cover call this copy."""
        if self.edition:
            return f"Edition {self.edition} ({self.date.isoformat()})"
        return "Latest (not an edition)"

    @property
    def ref(self) -> str:
        """What a link into the repository should point at: the tag, or the commit."""
        return f"v{self.edition}" if self.edition else (self.commit or "main")

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "edition": self.edition,
            "path": self.path,
            "commit": self.commit,
            "short": self.short,
            "date": self.date.isoformat(),
            "previous": self.previous,
            "editions": list(self.editions),
            "url": self.url,
            "title": self.title,
            "ref": self.ref,
            "repo": self.repo,
            "site": self.site_url,
        }


def _commit_date(root: Path, ref: str) -> dt.date | None:
    out = git(root, "log", "-1", "--format=%ct", ref)
    if not out or not out.strip():
        return None
    return dt.datetime.fromtimestamp(int(out.strip()), dt.UTC).date()


def current(root: Path = ROOT, config: dict[str, Any] | None = None) -> Edition:
    """The copy this build makes (see the module's docstring); raises :class:`EditionError`
    when an edition is asked for that this commit is not."""
    from vitbook.site.config import book_date, mkdocs_config

    root = Path(root)
    config = config if config is not None else mkdocs_config(root)
    # the site's root: a versioned build's hook moves site_url under the version, and keeps
    # the root in extra.site_root
    root_url = (config.get("extra") or {}).get("site_root") or config.get("site_url") or ""
    site_url = root_url.rstrip("/") + "/"
    asked = os.environ.get("MIKE_DOCS_VERSION") or None
    version = package_version(root)
    commit = (git(root, "rev-parse", "HEAD") or "").strip()
    shallow = (git(root, "rev-parse", "--is-shallow-repository") or "").strip() == "true"
    all_tags = tags(root) if commit else []
    if asked and asked != LATEST and not VERSION_RE.match(asked):
        raise EditionError(f"MIKE_DOCS_VERSION={asked!r}: an edition is X.Y.Z, or {LATEST!r}")
    if asked and asked != LATEST:
        check_edition(root, asked)
        previous = max((t for t in all_tags if vkey(t) < vkey(asked)), key=vkey, default=None)
        date = _commit_date(root, f"v{asked}") or book_date(root)
        return Edition(version, asked, asked, commit, date, previous, tuple(all_tags),
                       not shallow, site_url, repo_url(config))  # fmt: skip
    previous = all_tags[-1] if all_tags else None
    return Edition(version, None, asked, commit, book_date(root), previous, tuple(all_tags),
                   not shallow, site_url, repo_url(config))  # fmt: skip


def check_edition(root: Path, version: str) -> None:
    """Fail unless the commit being built is edition ``version``: tagged ``v<version>``, a clean
    tree, and every file that names the book's version naming this one."""
    head = (git(root, "rev-parse", "HEAD") or "").strip()
    tagged = (git(root, "rev-parse", f"v{version}^{{commit}}") or "").strip()
    if not head or tagged != head:
        raise EditionError(
            f"edition {version}: the tag v{version} does not point at the commit being built "
            f"({head[:7] or 'no git'}): tag it (git tag v{version}) or build 'latest'"
        )
    dirty = git(root, "status", "--porcelain", "--untracked-files=no")
    if dirty:
        raise EditionError(f"edition {version}: the tree has uncommitted changes:\n{dirty}")
    problems = version_mismatches(root, version)
    if problems:
        raise EditionError(
            f"edition {version}: "
            + "; ".join(problems)
            + f" (run `python -m vitbook.site.editions prepare {version}` before tagging)"
        )


def version_mismatches(root: Path, version: str) -> list[str]:
    """Which files do not name ``version`` as the book's (empty when all do)."""
    import yaml

    root = Path(root)
    out = []
    if package_version(root) != version:
        out.append(f"pyproject.toml says {package_version(root)}")
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    if str(cff.get("version")) != version:
        out.append(f"CITATION.cff says {cff.get('version')}")
    zen = json.loads((root / ".zenodo.json").read_text())
    if zen.get("version") != version:
        out.append(f".zenodo.json says {zen.get('version')}")
    for nb in notebook_sources(root):
        if notebook_edition(nb.read_text(encoding="utf-8")) != version:
            out.append(f"{nb.relative_to(root)} installs {notebook_edition(nb.read_text())}")
    return out


# --- the notebooks' install cell ---------------------------------------------------------------


def notebook_sources(root: Path = ROOT) -> list[Path]:
    docs = Path(root) / "docs"
    found = [*docs.glob("lab-*.py"), docs / "practice.py", *docs.glob("notebooks/ch*.py")]
    return sorted(p for p in found if p.is_file())


def notebook_edition(text: str) -> str | None:
    """The edition a notebook's install cell installs (None: no edition released yet)."""
    m = EDITION_LINE.search(text)
    if not m:
        raise ValueError("the notebook has no `EDITION = ...` line in its install cell")
    return None if m.group(1) == "None" else m.group(1).strip('"')


def set_notebook_edition(text: str, version: str | None) -> str:
    value = "None" if version is None else f'"{version}"'
    return EDITION_LINE.sub(
        lambda m: f"EDITION = {value}" + m.group(0)[len(f"EDITION = {m.group(1)}") :], text, 1
    )


def wheel_url(repo: str, version: str) -> str:
    """The wheel a release attaches, which an edition's notebooks install."""
    return f"{repo}/releases/download/v{version}/vitbook-{version}-py3-none-any.whl"


def notebook_commit(text: str) -> str | None:
    """The commit a published copy of a notebook installs the package from (None: the
    repository's own copy, which cannot name the commit it is part of)."""
    m = COMMIT_LINE.search(text)
    if not m:
        raise ValueError("the notebook has no `COMMIT = ...` line in its install cell")
    return None if m.group(1) == "None" else m.group(1).strip('"')


def set_notebook_commit(text: str, commit: str | None) -> str:
    value = "None" if not commit else f'"{commit}"'
    return COMMIT_LINE.sub(
        lambda m: f"COMMIT = {value}" + m.group(0)[len(f"COMMIT = {m.group(1)}") :], text, 1
    )


#: The first code cell of every notebook (``python -m vitbook.site.notebooks`` writes it into
#: each source; ``prepare`` sets its EDITION, the site's build its COMMIT).
INSTALL_CELL = f"""\
# Install the book's package unless it is installed (on Colab or a fresh machine): the edition
# this notebook belongs to, or else the commit the book's site built this copy from. A torch
# that is already installed is kept; where there is none, torch 2.13.0's CPU build comes first.
# The book's numbers were computed with that torch: with another, their last digits can differ.
import importlib.util
import os
import subprocess
import sys

EDITION = None  # this notebook's edition, written when one is released; None: none is yet
COMMIT = None  # the commit of this copy, written by the site's build
REPO = "https://github.com/vitbook/vitbook"
if importlib.util.find_spec("vitbook") is None:
    SOURCE = os.environ.get("VITBOOK_SOURCE")  # another copy of the repository: git+URL
    if EDITION is not None and SOURCE is None:
        WHEEL = f"{{REPO}}/releases/download/v{{EDITION}}/vitbook-{{EDITION}}-py3-none-any.whl"
        PACKAGE = f"vitbook @ {{WHEEL}}"
    elif EDITION is not None or COMMIT is not None:
        REF = f"v{{EDITION}}" if EDITION is not None else COMMIT
        PACKAGE = f"vitbook @ {{SOURCE or 'git+' + REPO}}@{{REF}}"
    else:
        raise RuntimeError(
            "This copy names no edition and no commit of the book: download the notebook from "
            f"its page of the book (or open it in Colab from there), or git clone {{REPO}}, "
            "then pip install -e ./vitbook"
        )
    PIP = [sys.executable, "-m", "pip", "install", "-q"]
    if importlib.util.find_spec("torch") is None:
        INDEX = os.environ.get("VITBOOK_TORCH_INDEX", "{TORCH_CPU_INDEX}")
        subprocess.run([*PIP, "torch==2.13.0", *(["--index-url", INDEX] if INDEX else [])],
                       check=True)
    subprocess.run([*PIP, PACKAGE], check=True)
"""


def install_cell(edition: str | None = None, commit: str | None = None) -> str:
    """The install cell naming ``edition`` and ``commit``."""
    return set_notebook_commit(set_notebook_edition(INSTALL_CELL, edition), commit)


def first_code_cell(text: str) -> tuple[int, int]:
    """Where the install cell's code is in a jupytext percent script: (start, end) offsets of
    the text between the first bare ``# %%`` line and the next cell marker."""
    m = re.search(r"(?m)^# %%\n", text)
    if not m:
        raise ValueError("no code cell")
    nxt = re.compile(r"(?m)^# %%").search(text, m.end())
    end = nxt.start() if nxt else len(text)
    return m.end(), end


def with_install_cell(text: str) -> str:
    """``text`` (a notebook's percent script) with its install cell as INSTALL_CELL has it,
    keeping the EDITION it names (and its COMMIT)."""
    start, end = first_code_cell(text)
    cell = text[start:end]
    edition, commit = notebook_edition(cell), _commit_or_none(cell)
    return text[:start] + install_cell(edition, commit) + "\n" + text[end:]


def _commit_or_none(cell: str) -> str | None:
    try:
        return notebook_commit(cell)
    except ValueError:
        return None


def colab_blob(ed: Edition | dict[str, Any], src_path: str) -> str:
    """Where "Open in Colab" opens a notebook page's ``.ipynb``, after ``blob/`` on GitHub: an
    edition's twin at its tag (its cell names the edition); the latest text's published copy in
    the ``gh-pages`` branch, whose cell names the commit it was built from (the twin on
    ``main`` cannot name its own commit). ``src_path``: the page's source, ``notebooks/x.py``."""
    d = ed.as_dict() if isinstance(ed, Edition) else ed
    stem = src_path.removesuffix(".py")
    if d.get("edition"):
        return f"{d['ref']}/docs/{stem}.ipynb"
    return f"gh-pages/{d.get('path') or LATEST}/{stem}/{stem.rsplit('/', 1)[-1]}.ipynb"


# --- what changed between two editions -------------------------------------------------------


@dataclass
class Change:
    """One commit that touched a chapter."""

    commit: str
    date: str
    subject: str
    errata: list[str] = field(default_factory=list)  # its ``Erratum:`` trailers


_SEP, _END = "\x1f", "\x1e"


def log(root: Path, since: str | None, paths: list[str], until: str = "HEAD") -> list[Change]:
    """The commits after edition ``since`` (all of them if None) up to ``until`` that touched
    ``paths`` (every file if empty), newest first."""
    rng = f"v{since}..{until}" if since else until
    fmt = f"%H{_SEP}%cs{_SEP}%s{_SEP}%(trailers:key=Erratum,valueonly,separator=%x1d){_END}"
    out = git(root, "log", "--no-merges", f"--format={fmt}", rng, "--", *paths)
    changes = []
    for rec in (out or "").split(_END):
        rec = rec.strip("\n")
        if not rec:
            continue
        commit, date, subject, trailers = (rec.split(_SEP) + [""] * 4)[:4]
        errata = [t.strip() for t in trailers.split("\x1d") if t.strip()]
        changes.append(Change(commit, date, subject, errata))
    return changes


def release_commits(root: Path, versions: list[str]) -> set[str]:
    """The commits the edition tags point at (``prepare``'s commits: versions, not changes)."""
    out = set()
    for v in versions:
        sha = (git(root, "rev-parse", f"v{v}^{{commit}}") or "").strip()
        if sha:
            out.add(sha)
    return out


def chapter_paths(n: int, root: Path = ROOT) -> list[str]:
    """The files a chapter's text and numbers come from: its page, its figure modules, its
    notebook."""
    root = Path(root)
    found = [
        *sorted((root / "docs").glob(f"{n:02d}-*.md")),
        *sorted((root / "vitbook" / "figures").glob(f"ch{n:02d}_*.py")),
        *sorted((root / "docs" / "notebooks").glob(f"ch{n:02d}-*.py")),
    ]
    return [p.relative_to(root).as_posix() for p in found]


def facts_at(root: Path, version: str) -> dict[str, dict[str, Any]] | None:
    """``figures/facts.json`` as edition ``version`` printed it (None when unknown here)."""
    out = git(root, "show", f"v{version}:figures/facts.json")
    if out is None:
        return None
    try:
        return json.loads(out)
    except ValueError:
        return None


def changed_numbers(
    old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], names: list[str]
) -> list[tuple[str, str | None, str | None]]:
    """``(name, old text, new text)`` for each fact in ``names`` (``ch02.tokens_p16``) whose
    printed text differs between the two ``facts.json`` (None: not printed by that edition)."""
    out = []
    for name in names:
        chapter, _, fact = name.partition(".")
        a = old.get(chapter, {}).get(fact, {}).get("text")
        b = new.get(chapter, {}).get(fact, {}).get("text")
        if a != b:
            out.append((name, a, b))
    return out


def errata(
    root: Path, editions: list[str], until: str = "HEAD"
) -> list[tuple[str | None, list[Change]]]:
    """The corrections in the history, grouped by the edition that first carried them:
    ``[(edition or None for "not yet released", [commits with Erratum: trailers]), ...]``,
    the newest first."""
    bounds = [None, *editions]
    groups: list[tuple[str | None, list[Change]]] = []
    for since, upto in zip(bounds, [*editions, None], strict=True):
        end = f"v{upto}" if upto else until
        found = [c for c in log(root, since, [], until=end) if c.errata]
        if found:
            groups.append((upto, found))
    return list(reversed(groups))


# --- CITATION.cff -----------------------------------------------------------------------------


def citation_cff(root: Path, ed: Edition) -> str:
    """``CITATION.cff`` as this edition's site serves it: the repository's file with the
    commit, the date and the edition's own address filled in (a file cannot name the commit it
    is part of, so the tagged file has the version and date, and the build adds the rest)."""
    import yaml

    data = yaml.safe_load((Path(root) / "CITATION.cff").read_text())
    if ed.commit:
        data["commit"] = ed.commit
    data["url"] = ed.url
    pref = data.get("preferred-citation", {})
    pref["url"] = ed.url
    if ed.edition:
        data["date-released"] = ed.date.isoformat()
        pref["edition"] = ed.edition
        pref["year"] = ed.date.year
    else:
        data.pop("date-released", None)
        pref.pop("edition", None)
        pref["notes"] = (
            f"The latest text, not an edition: built from commit {ed.short} on "
            f"{ed.date.isoformat()}. Cite an edition for a reference that does not change."
        )
    head = "# How to cite this copy of the book, written by its build (vitbook/site/editions.py)\n"
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


# --- prepare and deploy -----------------------------------------------------------------------


def prepare(root: Path, version: str, date: dt.date) -> list[Path]:
    """Write ``version`` into every file that names the book's version, before tagging it.

    (``vitbook/__init__.py`` keeps its ``__version__``: that module is part of every frozen
    run's key, and a new version string there would retrain every run.)"""
    import yaml

    vkey(version)
    root = Path(root)
    written = []
    py = root / "pyproject.toml"
    text = py.read_text()
    new = re.sub(r'(?m)^version = "[^"]+"$', f'version = "{version}"', text, count=1)
    written += _write(py, text, new)
    cff_path = root / "CITATION.cff"
    text = cff_path.read_text()
    cff = yaml.safe_load(text)
    new = re.sub(r"(?m)^version: .*$", f"version: {version}", text, count=1)
    line = f"date-released: {date.isoformat()}"
    new = (
        re.sub(r"(?m)^date-released: .*$", line, new, count=1)
        if "date-released" in cff
        else new.replace(f"version: {version}\n", f"version: {version}\n{line}\n", 1)
    )
    new = re.sub(r"(?m)^  edition: .*$", f"  edition: {version}", new, count=1)
    new = re.sub(r"(?m)^  year: .*$", f"  year: {date.year}", new, count=1)
    written += _write(cff_path, text, new)
    zen_path = root / ".zenodo.json"
    text = zen_path.read_text()
    new = re.sub(r'"version": "[^"]*"', f'"version": "{version}"', text, count=1)
    if '"publication_date"' in new:
        new = re.sub(r'"publication_date": "[^"]*"', f'"publication_date": "{date}"', new, count=1)
    else:
        new = new.replace(
            f'"version": "{version}",',
            f'"version": "{version}",\n  "publication_date": "{date}",',
            1,
        )
    written += _write(zen_path, text, new)
    from vitbook.site import notebooks

    for nb in notebook_sources(root):
        text = nb.read_text(encoding="utf-8")
        written += _write(nb, text, set_notebook_edition(text, version))
        twin = nb.with_suffix(".ipynb")  # the .ipynb Colab opens, kept in step
        if twin.exists():
            written += _write(twin, twin.read_text(encoding="utf-8"), notebooks.twin_text(nb))
    return written


def _write(path: Path, old: str, new: str) -> list[Path]:
    if new == old:
        return []
    path.write_text(new, encoding="utf-8")
    return [path]


def deploy(
    root: Path,
    version: str,
    *,
    branch: str = "gh-pages",
    config_file: str = "mkdocs.yml",
    pdf: bool = False,
    site_dir: Path | None = None,
    strict: bool = True,
) -> Edition:
    """Build this commit as ``version`` (an edition X.Y.Z, or ``latest``) and commit it to
    ``branch`` under ``<version>/`` with mike, which also updates the ``versions.json`` that
    the version selector reads; ``latest`` becomes the address the site's root redirects to
    (and so does the first edition, while there is no ``latest``). With ``pdf``, the printed
    edition is made inside the copy (``pdf/``) before it is committed. Nothing is pushed."""
    from mike import commands

    root = Path(root)
    if not (git(root, "config", "user.name") or "").strip():  # a CI runner has no identity
        os.environ.setdefault("GIT_COMMITTER_NAME", "vitbook editions")
        os.environ.setdefault("GIT_COMMITTER_EMAIL", "editions@vitbook.invalid")
    os.environ["MIKE_DOCS_VERSION"] = version
    ed = current(root)  # checks an edition before anything is built
    site_dir = Path(site_dir or root / "site")
    cfg = {"site_dir": str(site_dir), "use_directory_urls": True}
    here = Path.cwd()
    os.chdir(root)  # mike's git commands run in the working directory
    try:
        with commands.deploy(
            cfg, version, ed.title, [], update_aliases=True, branch=branch,
            message=f"{ed.title}: commit {ed.short}",
        ):  # fmt: skip
            env = dict(os.environ, NO_MKDOCS_2_WARNING="1", MIKE_DOCS_VERSION=version)
            if pdf:  # its chapters link the PDFs printed beside them (macros.pdf_edition)
                env["VITBOOK_PDF"] = "1"
            cmd = [sys.executable, "-m", "mkdocs", "build", "--clean", "-f", config_file, "-d",
                   str(site_dir)] + (["--strict"] if strict else [])  # fmt: skip
            subprocess.run(cmd, cwd=root, env=env, check=True)
            if pdf:
                subprocess.run(
                    [sys.executable, "-m", "vitbook.site.pdf", str(site_dir)],
                    cwd=root, env=env, check=True,
                )  # fmt: skip
        versions = commands.list_versions(branch)
        has_latest = any(str(v.version) == LATEST for v in versions)
        if version == LATEST or not has_latest:
            commands.set_default(version, branch=branch, message=f"The site's root opens {version}")
    finally:
        os.chdir(here)
    return ed


def build_dist(root: Path, dist: Path) -> list[Path]:
    """The wheel and the sdist of the package as this checkout has it (its files that git
    tracks or would track, so nothing ignored and no build leftovers), into ``dist``. Built
    from a copy, with the setuptools already installed: no build isolation, no download."""
    import shutil
    import tempfile

    dist.mkdir(parents=True, exist_ok=True)
    listed = git(root, "ls-files", "-co", "--exclude-standard", "-z") or ""
    keep = ("vitbook/", "pyproject.toml", "README.md", "LICENSE", "setup.cfg", "MANIFEST.in")
    with tempfile.TemporaryDirectory(prefix="vitbook-dist-") as tmp:
        for name in filter(None, listed.split("\0")):
            src = Path(root) / name
            if name.startswith(keep) and src.is_file():
                (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, Path(tmp) / name)
        return _build(Path(tmp), dist)


def dist_size(path: Path) -> str:
    """What the release build prints of a file it attaches: its kind, name and size."""
    kind = {".whl": "wheel", ".gz": "sdist"}.get(path.suffix, "file")
    size = path.stat().st_size
    return f"{kind} {path.name}: {size / 1e6:.2f} MB ({size:,} bytes)"


def _build(src: Path, dist: Path) -> list[Path]:
    code = (
        "import sys; from setuptools import build_meta as b; d = sys.argv[1]; "
        "w = b.build_wheel(d); s = b.build_sdist(d); print('\\nDIST', w, s)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(dist.resolve())],
        cwd=src, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    names = re.findall(r"^DIST (\S+) (\S+)$", out, re.M)[-1]
    return [dist / name for name in names]


def release_notes(root: Path, ed: Edition) -> str:
    """What the release of an edition says: where to read it, what it carries, its
    corrections."""
    lines = [
        f"{ed.title} of *Vision Transformers, Computed*, built from commit {ed.commit}.",
        "",
        f"Read it at {ed.url} (it will not change); the latest text is at {ed.url_of(LATEST)}.",
        "",
        "Attached: the PDF of the whole book and of each chapter, the `vitbook` package as a "
        "wheel (which this edition's notebooks install) and as source, and CITATION.cff.",
    ]
    fixed = [c for group, cs in errata(root, list(ed.editions)) if group == ed.edition for c in cs]
    if fixed:
        lines += ["", f"Corrections since edition {ed.previous}:", ""]
        lines += [f"- {text} ({c.commit[:7]})" for c in fixed for text in c.errata]
    return "\n".join(lines) + "\n"


def release(root: Path, version: str, dist: Path, *, branch: str = "gh-pages") -> Edition:
    """``deploy`` with the PDF; for an edition, also its wheel, sdist, PDFs, CITATION.cff and
    release notes into ``dist`` (what the release workflow attaches)."""
    import shutil

    site = Path(root) / "site"
    ed = deploy(root, version, branch=branch, pdf=True, site_dir=site)
    if ed.edition:
        dist.mkdir(parents=True, exist_ok=True)
        for path in build_dist(Path(root), dist):
            print(dist_size(path), flush=True)
        for pdf in sorted((site / "pdf").glob("*.pdf")):
            shutil.copyfile(pdf, dist / pdf.name)
        shutil.copyfile(site / "CITATION.cff", dist / "CITATION.cff")
        (dist / "notes.md").write_text(release_notes(Path(root), ed), encoding="utf-8")
    return ed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vitbook.site.editions", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "prepare", help="write VERSION into every file that names the book's version"
    )
    p.add_argument("version")
    p.add_argument("--date", type=dt.date.fromisoformat, default=dt.date.today())
    d = sub.add_parser(
        "deploy", help="build this commit as VERSION (X.Y.Z or latest) into gh-pages"
    )
    d.add_argument("version")
    d.add_argument("--branch", default="gh-pages")
    d.add_argument("--config-file", default="mkdocs.yml")
    d.add_argument("--pdf", action="store_true", help="print the PDF edition into the copy")
    d.add_argument("--site-dir", type=Path)
    d.add_argument("--no-strict", action="store_true")
    r = sub.add_parser("release", help="deploy with the PDF; an edition's files into --dist")
    r.add_argument("version")
    r.add_argument("--dist", type=Path, default=Path("dist"))
    r.add_argument("--branch", default="gh-pages")
    s = sub.add_parser("show", help="print what this build would be")
    s.add_argument("--json", action="store_true")
    c = sub.add_parser(
        "check", help="fail unless the files name VERSION and HEAD is tagged vVERSION"
    )
    c.add_argument("version")
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            for path in prepare(ROOT, args.version, args.date):
                print(f"wrote {path.relative_to(ROOT)}")
        elif args.command == "deploy":
            ed = deploy(
                ROOT,
                args.version,
                branch=args.branch,
                config_file=args.config_file,
                pdf=args.pdf,
                site_dir=args.site_dir,
                strict=not args.no_strict,
            )
            print(f"{ed.title} ({ed.short}) committed to {args.branch} under {args.version}/")
        elif args.command == "release":
            ed = release(ROOT, args.version, args.dist, branch=args.branch)
            print(f"{ed.title} ({ed.short}) committed to {args.branch} under {args.version}/")
        elif args.command == "check":
            check_edition(ROOT, args.version)
            print(f"edition {args.version}: tagged, clean, every file names it")
        else:
            ed = current(ROOT)
            print(json.dumps(ed.as_dict(), indent=1) if args.json else f"{ed.title}: {ed.url}")
    except EditionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
