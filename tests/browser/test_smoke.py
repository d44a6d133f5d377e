"""A smoke test of the built site for the pull-request workflow (``-m smoke``): the home page and
two chapters open in Chromium with no console error, every image decodes, the math is typeset
and the theme toggle works. The whole browser suite (every page) runs in `nox -s tests`."""

from __future__ import annotations

import pytest
from test_pages import visit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.smoke]

SMOKE = ["", "02-patches/", "09-training/"]


@pytest.mark.parametrize("url", SMOKE, ids=lambda u: u.rstrip("/") or "home")
def test_a_page_opens_cleanly(browser, base_url, artifacts, url) -> None:
    v = visit(browser, base_url, url, artifacts)
    assert v.status == 200, f"/{url}: HTTP {v.status}"
    assert not v.console_errors, f"/{url}: console errors {v.console_errors[:3]}"
    # the dark variant a light page hides has no file yet (reader.js fills it on a switch)
    shown = [i for i in v.light_images if i["display"] != "none" and not i["replaced"]]
    broken = [i["src"] for i in shown if not (i["complete"] and i["width"] > 0)]
    assert not broken, f"/{url}: images that did not decode: {broken[:3]}"
    if url:
        assert v.math.get("typeset") and not v.math.get("pending"), f"/{url}: math not typeset"
    assert (v.scheme_before, v.scheme_after) == ("default", "slate"), "the toggle did not work"
