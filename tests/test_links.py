"""Every internal link and anchor in the built book resolves.

Walks every HTML file of the built site (``$VITBOOK_SITE`` or a fresh ``mkdocs build --strict``,
see tests/browser/sitebuild.py) and checks each ``href`` and ``src`` that points into the site:
the file exists, and a ``#fragment`` names an element on the target page. Links to the book's own
public URL (``site_url``) count as internal. A broken link fails with the page and link named.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).parent / "browser"))
import sitebuild  # noqa: E402

pytestmark = pytest.mark.slow

LINK_ATTRS = {
    ("a", "href"),
    ("link", "href"),
    ("img", "src"),
    ("script", "src"),
    ("source", "src"),
    ("iframe", "src"),
}
IGNORED_SCHEMES = ("mailto:", "javascript:", "data:", "tel:")
#: another copy of the book on its public host: an edition (``/0.1.0/``) or the latest text
OTHER_COPY = re.compile(r"^/(\d+\.\d+\.\d+|latest)/")


class Page(HTMLParser):
    """The ids (and <a name>) defined in a page, and the links it makes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            if (tag, name) in LINK_ATTRS:
                self.links.append(value)
            if name == "srcset":
                self.links += [part.strip().split()[0] for part in value.split(",") if part.strip()]


@cache
def parse(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p


@pytest.fixture(scope="module")
def site() -> Path:
    try:
        return sitebuild.built_site()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


def target_file(site: Path, path: str) -> Path | None:
    """The file a site-absolute URL path serves (directory URLs serve index.html)."""
    rel = unquote(path).lstrip("/")
    candidate = site / rel
    if path.endswith("/") or candidate.is_dir():
        candidate = candidate / "index.html"
    return candidate if candidate.is_file() else None


def check_site(site: Path) -> tuple[list[str], dict[str, int]]:
    """Return the broken links as 'page: link (why)' and counts of what was checked."""
    prefix = sitebuild.site_prefix()  # "/vitbook/": where the site lives on its public host
    own_host = urlsplit(sitebuild.mkdocs_config().get("site_url", "")).netloc
    broken: list[str] = []
    counts = {"links": 0, "fragments": 0, "fig": 0, "eq": 0, "notebook": 0}
    pages = sorted(site.rglob("*.html"))
    for page_path in pages:
        rel_page = page_path.relative_to(site).as_posix()
        # the URL the page is served at, as if the site lived at the root of a server
        base = "/" + rel_page
        page = parse(page_path)
        for link in page.links:
            link = link.strip()
            if not link or link.startswith(IGNORED_SCHEMES):
                continue
            parts = urlsplit(link)
            if parts.scheme in ("http", "https"):
                if parts.netloc != own_host or not parts.path.startswith(prefix):
                    continue  # a link to another site: not ours to check offline
                path = "/" + parts.path[len(prefix) :]
                if OTHER_COPY.match(path):
                    continue  # another edition, served beside this copy (vitbook.site.editions)
            elif parts.scheme or parts.netloc:
                continue
            elif link.startswith("/"):
                # absolute paths (the 404 page) assume the public prefix
                if not parts.path.startswith(prefix):
                    broken.append(f"{rel_page}: {link} (absolute path outside {prefix})")
                    continue
                path = "/" + parts.path[len(prefix) :]
            else:
                path = urlsplit(urljoin(base, link)).path
            counts["links"] += 1
            target = target_file(site, path) if parts.path or parts.scheme else page_path
            if target is None and path.startswith("/pdf/") and not (site / "pdf").is_dir():
                continue  # the PDF edition, printed by `nox -s pdf` after the site (test_pdf.py)
            if target is None:
                broken.append(f"{rel_page}: {link} (no file {unquote(path)})")
                continue
            counts["notebook"] += target.suffix == ".py"
            frag = unquote(parts.fragment)
            if frag and target.suffix == ".html":
                counts["fragments"] += 1
                counts["fig"] += frag.startswith("fig-")
                counts["eq"] += frag.startswith("eq-")
                if frag not in parse(target).ids:
                    where = target.relative_to(site).as_posix()
                    broken.append(f"{rel_page}: {link} (no id {frag!r} in {where})")
    return broken, counts


def test_every_internal_link_and_anchor_resolves(site: Path) -> None:
    broken, counts = check_site(site)
    print(
        f"\nchecked {counts['links']:,} internal links, {counts['fragments']:,} with anchors "
        f"({counts['fig']} figure, {counts['eq']} equation), {counts['notebook']} to notebook "
        f"sources"
    )
    assert not broken, f"{len(broken)} broken internal links:\n  " + "\n  ".join(sorted(broken))


def test_figure_and_equation_anchors_are_checked(site: Path) -> None:
    """The check above is not vacuous: figure and equation references exist and were checked."""
    _, counts = check_site(site)
    assert counts["fig"] > 0, "no link to a figure anchor (#fig-...) was found in the site"
    assert counts["eq"] > 0, "no link to an equation anchor (#eq-...) was found in the site"


def test_listing_lines_are_not_links(site: Path) -> None:
    """A listing's lines carry no link of their own (mkdocs.yml: ``anchor_linenums: false``).
    The book shows no line numbers; a link per line only made work on load: Material's instant
    navigation rewrites the address of every relative link of a page it opens (Ch 9: 511 line
    links out of 1,238)."""
    pages = [p for p in site.glob("[01][0-9]-*/index.html")]
    assert pages, "no chapter page in the built site"
    linked = [p.parent.name for p in pages if 'href="#__codelineno' in p.read_text()]
    assert not linked, f"listings with a link per line in: {', '.join(sorted(linked))}"


def test_pages_load_without_instant_navigation(site: Path) -> None:
    """Material's instant navigation stays off (mkdocs.yml): on every load it resolves and
    rewrites each link of the page, and a chapter links each printed number; a full load per
    chapter costs a phone less than that work on every load."""
    html = (site / "09-training" / "index.html").read_text(encoding="utf-8")
    config = json.loads(re.search(r'<script id="__config"[^>]*>(.*?)</script>', html, re.S)[1])
    assert "navigation.tracking" in config["features"], "no Material config read from the page"
    assert not [f for f in config["features"] if f.startswith("navigation.instant")]


def test_notebook_pages_and_their_sources_are_linked(site: Path) -> None:
    """Each notebook page exists, is in the nav, and its links resolve; its .py source ships."""
    notebooks = [
        url
        for _, url in sitebuild.nav_pages()
        if (sitebuild.ROOT / "docs" / (url.rstrip("/") + ".py")).exists()
    ]
    assert notebooks, "mkdocs.yml's nav lists no notebook page (docs/*.py)"
    for url in notebooks:
        page = site / url / "index.html"
        assert page.is_file(), f"notebook page /{url} was not built"
        source = site / url / (url.rstrip("/").rsplit("/", 1)[-1] + ".py")
        assert source.is_file(), f"the notebook's source {source.name} is not in the site"
        assert "jp-Cell" in page.read_text() or "jupyter" in page.read_text().lower(), (
            f"/{url} does not look like a rendered notebook"
        )


def test_checker_catches_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    """The checker itself: a tiny site with one good link, one missing page, one missing id."""
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="a/">ok</a> <a href="a/#here">ok</a> <a href="missing/">bad</a>'
        ' <a href="a/#nowhere">bad</a> <a href="#top" id="top">ok</a>'
        ' <img src="img.png"> <a href="https://example.org/x">external</a>'
    )
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">Here</h2>')
    broken, counts = check_site(tmp_path)
    assert sorted(broken) == [
        "index.html: a/#nowhere (no id 'nowhere' in a/index.html)",
        "index.html: img.png (no file /img.png)",
        "index.html: missing/ (no file /missing/)",
    ]
    assert counts["links"] == 6
