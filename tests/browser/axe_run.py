"""axe-core (from ``node_modules``, pinned in ``package.json``) run on pages of the built site.

``audit(browser, url, theme, width)`` opens a page in a fresh context (the colour scheme given
as the reader's system preference, which Material's palette follows on a first visit), injects
axe-core from the local ``node_modules`` (nothing downloaded) and returns the violations of the
WCAG 2.0-2.2 A and AA rules (2.2 adds target-size: a tap target at least 24 px), and of
``td-has-header`` (every data cell has a header; axe counts it experimental, Lighthouse audits
it), each with its impact and the selectors of the elements at fault.
"""

from __future__ import annotations

from pathlib import Path

import sitebuild

AXE = sitebuild.ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
SERIOUS = {"serious", "critical"}
THEMES = {"light": "light", "dark": "dark"}
WIDTHS = (390, 1280)

RUN_JS = """async (tags) => {
    const r = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                      rules: {'td-has-header': {enabled: true}},
                                      resultTypes: ['violations']});
    return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => n.target.join(' '))}));
}"""


def rotation(pages: list[tuple[str, str]]) -> list[tuple[str, str, str, int]]:
    """The audits of this run, ``(title, url, theme, width)``: each page in one combination of
    theme and width that rotates with the commit, every combination in the weekly run
    (``sitebuild.rotation``)."""
    combos = [(t, w) for t in THEMES for w in WIDTHS]
    return [(title, url, *combo) for (title, url), combo in sitebuild.rotation(pages, combos)]


def axe_source() -> str:
    if not AXE.is_file():
        raise RuntimeError(f"{AXE} is missing: run `npm ci` (axe-core is pinned in package.json)")
    return AXE.read_text(encoding="utf-8")


def settle(page) -> None:
    """Bring the page to the state a reader who scrolled through it sees: every explorer
    mounted (each mounts when it comes near the screen) and every block of the text rendered
    (docs/javascripts/reader.js renders what the browser skipped on load, while idle)."""
    roots = page.locator(".vb-explorer[data-explorer]")
    for i in range(roots.count()):
        roots.nth(i).scroll_into_view_if_needed()
        try:
            page.wait_for_function(
                "e => e.classList.contains('vb-explorer--live')",
                arg=roots.nth(i).element_handle(),
                timeout=15000,
            )
        except Exception:  # noqa: BLE001 - axe audits the static figure that stayed
            pass
    page.evaluate("window.scrollTo(0, 0)")
    try:
        page.wait_for_function(
            "document.documentElement.dataset.vbRendered === 'true'", timeout=15000
        )
    except Exception:  # noqa: BLE001 - axe runs on what is there
        pass


def audit(browser, base_url: str, url: str, theme: str, width: int) -> list[dict]:
    context = browser.new_context(
        viewport={"width": width, "height": 900},
        color_scheme=THEMES[theme],
        service_workers="block",
    )
    page = context.new_page()
    try:
        page.goto(base_url + url, wait_until="load", timeout=30000)
        try:
            page.wait_for_load_state("networkidle", timeout=5000)
        except Exception:  # noqa: BLE001 - axe runs on what is there
            pass
        settle(page)
        scheme = page.evaluate("document.body.dataset.mdColorScheme")
        want = "slate" if theme == "dark" else "default"
        if scheme != want:
            raise AssertionError(f"/{url}: the page opened in {scheme!r}, not {want!r}")
        page.add_script_tag(content=axe_source())
        return page.evaluate(RUN_JS, TAGS)
    finally:
        context.close()


def serious(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in SERIOUS]


def count(violations: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in serious(violations):
        out[v["id"]] = out.get(v["id"], 0) + len(v["nodes"])
    return out


def main(site: Path) -> None:  # pragma: no cover - a measurement, run by hand
    """Print serious/critical counts per rule over every page, both themes, both widths."""
    from vitbook.site.local import chromium

    totals: dict[str, int] = {}
    with sitebuild.serve(site) as base, chromium() as b:
        for _, url in sitebuild.nav_pages():
            for theme in THEMES:
                for width in WIDTHS:
                    c = count(audit(b, base, url, theme, width))
                    for k, n in c.items():
                        totals[k] = totals.get(k, 0) + n
                    if c:
                        print(f"/{url} {theme} {width}: {c}", flush=True)
    print("TOTAL", sum(totals.values()), totals)


if __name__ == "__main__":  # pragma: no cover
    import sys

    main(Path(sys.argv[1]))
