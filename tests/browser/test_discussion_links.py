"""Every chapter ends with a "Discuss this chapter" link beside "Report a problem": a plain link
to the repository's GitHub Discussions category (``extra.discussions`` in mkdocs.yml), built from
the repository address the site already links; other pages have none."""

from __future__ import annotations

from pathlib import Path

import pytest
import sitebuild

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def page_links(html: str) -> str:
    """The "About this page" links at the end of a page."""
    return html.split('aria-label="About this page"')[1].split("</nav>")[0]


def test_every_chapter_ends_with_its_discussion_link(site):
    extra = sitebuild.mkdocs_config()["extra"]
    repo = next(s["link"] for s in extra["social"] if "github" in s["icon"])
    want = f"{repo}/discussions/categories/{extra['discussions']}"
    chapters = sorted((ROOT / "docs").glob("[0-9][0-9]-*.md"))
    assert len(chapters) == 11
    for md in chapters:
        links = page_links((site / md.stem / "index.html").read_text())
        assert f'href="{want}"' in links and "Discuss this chapter" in links, md.name
        assert "Report a problem" in links, md.name
    for other in ("glossary", "syllabus", "instructors", "practice"):
        links = page_links((site / other / "index.html").read_text())
        assert "Report a problem" in links and "Discuss this chapter" not in links, other
