"""Editions (issue 26): a release is a tagged commit, published at its own path, that citations
name; each chapter says what changed since the last edition and which printed numbers moved.

The quick tests make small git repositories of their own (the book's version files, a chapter
page, a facts file) and check :mod:`vitbook.site.editions` against them: which copy a build
makes, the refusals (an untagged, dirty or inconsistent edition), ``prepare``, the history of a
chapter, the numbers that changed, the errata and the CITATION.cff a build serves. The slow
test follows the release steps locally on a copy of this checkout: two tagged editions built
with mike into a ``gh-pages`` branch, then served and opened in Chromium, where the version
selector lists both and switches between them, and each edition's cite box and changes note
name it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from vitbook.site import editions
from vitbook.site.editions import EditionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from test_citation import SCHEMA  # noqa: E402  (the CFF 1.2.0 rules this repository uses)

CONFIG = {
    "site_url": "https://example.org/book/",
    "extra": {"social": [{"icon": "fontawesome/brands/github", "link": "https://github.com/o/b"}]},
}
NOTEBOOK = (
    "# %%\nimport importlib.util\n\n"
    "EDITION = None  # this notebook's edition, written when one is released; None: none is yet\n"
)


def sh(root: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True,
        env={**os.environ, **(env or {})},
    ).stdout  # fmt: skip


def commit(root: Path, message: str) -> str:
    sh(root, "add", "-A")
    sh(root, "commit", "-q", "-m", message)
    return sh(root, "rev-parse", "HEAD").strip()


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch) -> Path:
    """A tiny book: the version files, one chapter page and module, a notebook, facts."""
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(name, "Test")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(name, "test@example.org")
    monkeypatch.delenv("MIKE_DOCS_VERSION", raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764806400")  # 2025-12-04
    r = tmp_path / "book"
    (r / "docs" / "notebooks").mkdir(parents=True)
    (r / "vitbook" / "figures").mkdir(parents=True)
    (r / "figures").mkdir()
    (r / "pyproject.toml").write_text('[project]\nname = "vitbook"\nversion = "0.1.0"\n')
    shutil.copyfile(ROOT / "CITATION.cff", r / "CITATION.cff")
    shutil.copyfile(ROOT / ".zenodo.json", r / ".zenodo.json")
    (r / "docs" / "notebooks" / "ch02-patches.py").write_text(NOTEBOOK)
    (r / "docs" / "02-patches.md").write_text("# 2. Patches\n\n{{ ch02.tokens }} tokens.\n")
    (r / "vitbook" / "figures" / "ch02_patches.py").write_text("X = 1\n")
    facts = {"ch02": {"tokens": {"text": "196", "value": 196}, "other": {"text": "1", "value": 1}}}
    (r / "figures" / "facts.json").write_text(json.dumps(facts))
    sh(r, "init", "-q", "-b", "main")
    commit(r, "The first text")
    return r


def test_a_plain_build_is_the_latest_text_and_says_so(repo):
    ed = editions.current(repo, CONFIG)
    assert ed.edition is None and ed.path is None and ed.previous is None
    assert ed.title == "Latest (not an edition)" and ed.url == "https://example.org/book/"
    assert ed.commit == sh(repo, "rev-parse", "HEAD").strip() and ed.ref == ed.commit
    assert ed.repo == "https://github.com/o/b" and ed.history


def test_an_edition_needs_its_tag_a_clean_tree_and_every_file_naming_it(repo, monkeypatch):
    monkeypatch.setenv("MIKE_DOCS_VERSION", "0.1.0")
    with pytest.raises(EditionError, match="the tag v0.1.0 does not point"):
        editions.current(repo, CONFIG)
    sh(repo, "tag", "v0.1.0")
    with pytest.raises(EditionError, match=r"installs None"):  # the notebook names no edition
        editions.current(repo, CONFIG)
    sh(repo, "tag", "-d", "v0.1.0")
    editions.prepare(repo, "0.1.0", dt.date(2026, 12, 4))
    commit(repo, "Edition 0.1.0")
    sh(repo, "tag", "v0.1.0")
    ed = editions.current(repo, CONFIG)
    assert ed.edition == "0.1.0" and ed.path == "0.1.0" and ed.ref == "v0.1.0"
    assert ed.url == "https://example.org/book/0.1.0/" and ed.title.startswith("Edition 0.1.0 (")
    (repo / "docs" / "02-patches.md").write_text("# changed, not committed\n")
    with pytest.raises(EditionError, match="uncommitted changes"):
        editions.current(repo, CONFIG)
    monkeypatch.setenv("MIKE_DOCS_VERSION", "soon")
    with pytest.raises(EditionError, match="an edition is X.Y.Z"):
        editions.current(repo, CONFIG)


def test_prepare_writes_the_version_everywhere_but_the_run_keys(repo):
    written = editions.prepare(repo, "0.2.0", dt.date(2026, 12, 24))
    names = {p.relative_to(repo).as_posix() for p in written}
    assert {"pyproject.toml", "CITATION.cff", ".zenodo.json"} <= names
    assert "docs/notebooks/ch02-patches.py" in names
    assert editions.version_mismatches(repo, "0.2.0") == []
    cff = yaml.safe_load((repo / "CITATION.cff").read_text())
    assert cff["version"] == "0.2.0" and str(cff["date-released"]) == "2026-12-24"
    assert cff["preferred-citation"]["edition"] == "0.2.0"
    jsonschema.validate(cff, SCHEMA)
    assert json.loads((repo / ".zenodo.json").read_text())["publication_date"] == "2026-12-24"
    nb = (repo / "docs" / "notebooks" / "ch02-patches.py").read_text()
    assert editions.notebook_edition(nb) == "0.2.0" and "# this notebook's edition" in nb
    assert editions.version_mismatches(repo, "0.3.0")  # and another version is refused


def test_the_latest_text_knows_the_last_edition_and_an_edition_the_one_before(repo, monkeypatch):
    editions.prepare(repo, "0.1.0", dt.date(2026, 12, 4))
    commit(repo, "Edition 0.1.0")
    sh(repo, "tag", "v0.1.0")
    (repo / "docs" / "02-patches.md").write_text("# 2. Patches\n\nMore.\n")
    commit(repo, "A sentence more")
    assert editions.current(repo, CONFIG).previous == "0.1.0"
    editions.prepare(repo, "0.2.0", dt.date(2026, 12, 24))
    commit(repo, "Edition 0.2.0")
    sh(repo, "tag", "v0.2.0")
    monkeypatch.setenv("MIKE_DOCS_VERSION", "0.2.0")
    ed = editions.current(repo, CONFIG)
    assert ed.previous == "0.1.0" and ed.editions == ("0.1.0", "0.2.0")
    monkeypatch.setenv("MIKE_DOCS_VERSION", "latest")
    ed = editions.current(repo, CONFIG)
    assert ed.previous == "0.2.0" and ed.url == "https://example.org/book/latest/"


def test_a_chapter_history_its_changed_numbers_and_the_errata(repo):
    editions.prepare(repo, "0.1.0", dt.date(2026, 12, 4))
    commit(repo, "Edition 0.1.0")
    sh(repo, "tag", "v0.1.0")
    facts = json.loads((repo / "figures" / "facts.json").read_text())
    facts["ch02"]["tokens"] = {"text": "197", "value": 197}
    facts["ch02"]["new"] = {"text": "5", "value": 5}
    (repo / "figures" / "facts.json").write_text(json.dumps(facts))
    (repo / "vitbook" / "figures" / "ch02_patches.py").write_text("X = 2\n")
    fix = commit(repo, "Ch 2: count the class token\n\nErratum: Chapter 2: 196 tokens were 197.")
    (repo / "README").write_text("elsewhere\n")
    commit(repo, "Not about Chapter 2")
    changes = editions.log(repo, "0.1.0", editions.chapter_paths(2, repo))
    assert [c.commit for c in changes] == [fix]
    assert changes[0].subject == "Ch 2: count the class token"
    assert changes[0].errata == ["Chapter 2: 196 tokens were 197."]
    old = editions.facts_at(repo, "0.1.0")
    moved = editions.changed_numbers(old, facts, ["ch02.tokens", "ch02.other", "ch02.new"])
    assert moved == [("ch02.tokens", "196", "197"), ("ch02.new", None, "5")]
    assert editions.facts_at(repo, "9.9.9") is None
    groups = editions.errata(repo, ["0.1.0"])
    assert [(g, [c.commit for c in cs]) for g, cs in groups] == [(None, [fix])]
    editions.prepare(repo, "0.2.0", dt.date(2026, 12, 24))
    commit(repo, "Edition 0.2.0")
    sh(repo, "tag", "v0.2.0")
    assert [g for g, _ in editions.errata(repo, ["0.1.0", "0.2.0"])] == ["0.2.0"]


def test_the_served_citation_cff_names_the_commit_date_and_address(repo, monkeypatch):
    editions.prepare(repo, "0.1.0", dt.date(2026, 12, 4))
    head = commit(repo, "Edition 0.1.0")
    sh(repo, "tag", "v0.1.0")
    monkeypatch.setenv("MIKE_DOCS_VERSION", "0.1.0")
    ed = editions.current(repo, CONFIG)
    cff = yaml.safe_load(editions.citation_cff(repo, ed))
    jsonschema.validate(cff, SCHEMA)
    assert cff["commit"] == head and cff["version"] == "0.1.0"
    assert cff["url"] == cff["preferred-citation"]["url"] == "https://example.org/book/0.1.0/"
    assert str(cff["date-released"]) == ed.date.isoformat()
    monkeypatch.setenv("MIKE_DOCS_VERSION", "latest")
    latest = yaml.safe_load(editions.citation_cff(repo, editions.current(repo, CONFIG)))
    assert "date-released" not in latest and "edition" not in latest["preferred-citation"]
    assert "not an edition" in latest["preferred-citation"]["notes"]


def test_the_repository_files_agree_on_the_book_version():
    """What ``prepare`` writes, the repository holds: one version in every file (the
    notebooks install no edition until one is released)."""
    version = editions.package_version(ROOT)
    problems = [p for p in editions.version_mismatches(ROOT, version) if "installs" not in p]
    assert problems == []
    released = editions.tags(ROOT)
    for nb in editions.notebook_sources(ROOT):
        installs = editions.notebook_edition(nb.read_text(encoding="utf-8"))
        # a notebook installs an edition that exists, or says none does (never a missing tag)
        assert installs is None or installs in released, (nb.name, installs, released)


def test_the_release_build_prints_the_size_of_the_wheel_and_the_sdist(tmp_path):
    """`editions.py release` (`nox -s edition -- X.Y.Z`) prints each file it builds for the
    release with its size: the wheel's is what a reader's `pip install` downloads."""
    import inspect

    wheel = tmp_path / "vitbook-0.2.0-py3-none-any.whl"
    wheel.write_bytes(b"x" * 1_234_567)
    assert editions.dist_size(wheel) == (
        "wheel vitbook-0.2.0-py3-none-any.whl: 1.23 MB (1,234,567 bytes)"
    )
    sdist = tmp_path / "vitbook-0.2.0.tar.gz"
    sdist.write_bytes(b"x" * 10)
    assert editions.dist_size(sdist) == "sdist vitbook-0.2.0.tar.gz: 0.00 MB (10 bytes)"
    source = inspect.getsource(editions.release)
    assert "print(dist_size(path)" in source and "build_dist(" in source


# --- the release steps, locally ---------------------------------------------------------------

SMALL = """INHERIT: mkdocs.yml
strict: false
nav:
  - Home: index.md
  - "2. From image to sequence: patches": 02-patches.md
  - Numbers:
      - Numbers: numbers/index.md
      - "Chapter 2": numbers/ch02.md
  - How to cite: citing.md
  - Errata: errata.md
exclude_docs: |
  /0[013-9]-*.md
  /10-*.md
  /numbers/ch0[013-9].md
  /numbers/ch10.md
  /notebooks/
  /lab-*
  /practice.*
  /building.md
  /glossary.md
  /notation.md
  /references.md
  /license.md
plugins:
  - search
  - macros:
      modules: [vitbook.site.macros]
      on_undefined: strict
      on_error_fail: true
      include_yaml: []
  - glightbox:
      auto_caption: false
      skip_classes: [vb-skip]
"""


def copy_checkout(dest: Path) -> None:
    """The files of this checkout (tracked and new, as git lists them) into ``dest``."""
    names = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
        capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    (dest / "node_modules").symlink_to((ROOT / "node_modules").resolve())
    if (ROOT / ".cache").is_dir():  # figures' WebP copies, fonts, typeset math: by content
        (dest / ".cache").symlink_to((ROOT / ".cache").resolve())


def deploy(root: Path, version: str, env: dict) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vitbook.site.editions", "deploy", version, "--config-file",
         "mkdocs-small.yml", "--no-strict", "--site-dir", str(root / "site")],
        cwd=root, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


@pytest.mark.slow
@pytest.mark.browser
def test_release_steps_publish_editions_beside_each_other(tmp_path, browser):
    """Two editions made with the release steps (prepare, commit, tag, deploy with mike), the
    second after a commit that corrects a number of Chapter 2: each is served under its own
    path, the version selector lists both and switches between them, the cite box names the
    edition, its commit and address, and the changes note gives the old and new value."""
    pytest.importorskip("mike")
    from vitbook.site.local import serve

    root = tmp_path / "book"
    root.mkdir()
    copy_checkout(root)
    (root / "mkdocs-small.yml").write_text(SMALL)
    env = {
        **os.environ, "NO_MKDOCS_2_WARNING": "1", "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "t@example.org", "PYTHONPATH": os.pathsep.join(
            [str(root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]),
    }  # fmt: skip
    env.pop("MIKE_DOCS_VERSION", None)

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, env=env, check=True,
                              capture_output=True, text=True).stdout  # fmt: skip

    def py(*args: str) -> None:
        subprocess.run([sys.executable, *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "The book")
    py("-m", "vitbook.site.editions", "prepare", "0.1.0", "--date", "2026-12-04")
    git("commit", "-q", "-am", "Edition 0.1.0")
    git("tag", "v0.1.0")
    deploy(root, "0.1.0", env)
    first = git("rev-parse", "HEAD").strip()

    facts = json.loads((root / "figures" / "facts.json").read_text())
    name = sorted(facts["ch02"])[0]
    old_text = facts["ch02"][name]["text"]
    facts["ch02"][name]["text"] = new_text = old_text + "0"
    (root / "figures" / "facts.json").write_text(json.dumps(facts, indent=1))
    (root / "docs" / "02-patches.md").write_text(
        (root / "docs" / "02-patches.md").read_text() + f"\nAnd {{{{ ch02.{name} }}}} again.\n"
    )
    git("commit", "-q", "-am", "Ch 2: a number corrected\n\nErratum: Chapter 2: a number was off.")
    py("-m", "vitbook.site.editions", "prepare", "0.2.0", "--date", "2026-12-24")
    git("commit", "-q", "-am", "Edition 0.2.0")
    git("tag", "v0.2.0")
    deploy(root, "0.2.0", env)
    second = git("rev-parse", "HEAD").strip()

    pages = tmp_path / "pages"
    pages.mkdir()
    archive = subprocess.run(["git", "archive", "gh-pages"], cwd=root, check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(pages)], input=archive, check=True)
    versions = json.loads((pages / "versions.json").read_text())
    assert [v["version"] for v in versions] == ["0.2.0", "0.1.0"]
    assert "0.2.0/" in (pages / "index.html").read_text()  # the root opens the newest edition
    date = editions._commit_date(root, "v0.2.0").isoformat()

    page = (pages / "0.2.0" / "02-patches" / "index.html").read_text()
    assert f"commit {second[:7]}" in page and f"edition 0.2.0 ({date}" in page
    assert "https://vitbook.github.io/vitbook/0.2.0/02-patches/" in page
    assert "Changes since edition 0.1.0" in page and "Ch 2: a number corrected" in page
    assert ": Edition 0.2.0</li>" not in page  # the release commit itself is not a change
    assert f"ch02.{name}" in page and f"{old_text}</td>" in page and f"{new_text}</td>" in page
    assert "a correction" in page
    old_page = (pages / "0.1.0" / "02-patches" / "index.html").read_text()
    assert f"commit {first[:7]}" in old_page and "first edition" in old_page
    errata = (pages / "0.2.0" / "errata" / "index.html").read_text()
    assert "Chapter 2: a number was off." in errata and "Corrected in edition 0.2.0" in errata
    cff = yaml.safe_load((pages / "0.2.0" / "CITATION.cff").read_text())
    assert cff["commit"] == second and cff["url"].endswith("/0.2.0/")

    with serve(pages) as base:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        try:
            page.goto(base + "0.2.0/02-patches/", wait_until="load", timeout=120000)
            selector = page.locator(".md-version")
            selector.wait_for(timeout=30000)
            assert "Edition 0.2.0" in page.locator(".md-version__current").inner_text()
            titles = page.locator(".md-version__link").all_inner_texts()
            assert any("0.2.0" in t for t in titles) and any("0.1.0" in t for t in titles)
            page.locator(".md-version").hover()  # opens the list
            page.locator(".md-version__link", has_text="0.1.0").click()
            page.wait_for_url("**/0.1.0/**", timeout=30000, wait_until="commit")
            page.wait_for_load_state("load")
            assert "/0.1.0/02-patches/" in page.url
            box = page.locator(".admonition.quote").first
            box.scroll_into_view_if_needed()  # a block far down is laid out only near the screen
            assert f"commit {first[:7]}" in box.inner_text()
        finally:
            context.close()
