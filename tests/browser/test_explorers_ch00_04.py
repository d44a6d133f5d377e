"""The explorers of Chapters 0-4 in headless Chromium, on the built site.

Each explorer must mount on a direct load and again on a page change (document$); hover, tap
(at phone width, with touch) and the keyboard must each change what is drawn and what the live
region says; the numbers it prints for a patch must be the Python values; the face model run in
JavaScript must match torch; nothing may log an error or leave the local server; and the dark
theme must draw with the dark palette.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from explorer_helpers import (
    canvas_png,
    focus_canvas_by_tab,
    live_text,
    open_explorer,
    pixels_of_colour,
    point,
    shown_values,
    wait_mounted,
)

from vitbook.engine import verify
from vitbook.plot import THEMES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: explorer id -> the page that places it
EXPLORERS = {
    "ch00/forward-pass": "00-see-it-in-action/",
    "ch00/your-image": "00-see-it-in-action/",
    "ch02/patch-size": "02-patches/",
    "ch03/pca-embedding": "03-patch-embedding/",
    "ch04/position-similarity": "04-cls-and-position/",
}
IDS = list(EXPLORERS)
#: two points (fractions of the canvas) over different cells of every explorer's main picture
A, B = (0.05, 0.08), (0.24, 0.45)


def _checks(visit, base_url) -> None:
    assert visit.errors == [], f"console errors: {visit.errors}"
    assert visit.foreign_requests(base_url) == [], "requests left the local server"


@pytest.mark.parametrize("explorer", IDS)
def test_mounts_on_direct_load_and_again_on_a_page_change(browser, base_url, explorer):
    page_url = EXPLORERS[explorer]
    visit = open_explorer(browser, base_url, page_url, explorer)
    try:
        page = visit.page
        assert page.locator(f"{visit.root} canvas").count() == 1
        # leave for another page and come back by a link, as a reader does
        other = "01-why-transformers/" if page_url != "01-why-transformers/" else ""
        page.goto(base_url + other, wait_until="load")
        page.goto(base_url + page_url, wait_until="load")
        wait_mounted(visit)
        # a page change announced on the same document (Material's document$, which instant
        # navigation would emit): the explorer is unmounted and mounted once again, not twice
        page.evaluate("window.document$.next(document)")
        page.wait_for_timeout(500)
        wait_mounted(visit)
        assert page.locator(f"{visit.root} canvas").count() == 1, "mounted twice"
        assert page.locator(f"{visit.root} .vb-ui").count() == 1
        _checks(visit, base_url)
    finally:
        visit.close()


@pytest.mark.parametrize("explorer", IDS)
def test_hover_and_keyboard_change_the_drawing_and_the_words(browser, base_url, explorer):
    visit = open_explorer(browser, base_url, EXPLORERS[explorer], explorer)
    try:
        page = visit.page
        page.mouse.move(*point(visit, *A))
        before = canvas_png(visit), live_text(visit)
        page.mouse.move(*point(visit, *B))
        after = canvas_png(visit), live_text(visit)
        assert after[0] != before[0], "hover did not change the canvas"
        assert after[1] != before[1], "hover did not change the live text"
        # keyboard: Tab reaches the canvas, which shows a focus ring; arrows move; Enter acts
        focus_canvas_by_tab(visit)
        assert page.evaluate("document.activeElement.tagName") == "CANVAS"
        ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert ring not in ("none", ""), "no visible focus ring"
        for key in ("ArrowRight", "ArrowDown", "Enter", " "):
            before = canvas_png(visit), live_text(visit)
            page.keyboard.press(key)
            after = canvas_png(visit), live_text(visit)
            assert after[0] != before[0], f"{key} did not change the canvas"
            assert after[1] != before[1], f"{key} did not change the live text"
        assert page.eval_on_selector(visit.root, "e => e.querySelector('.vb-live')"
                                     ".getAttribute('aria-live')") == "polite"  # fmt: skip
        _checks(visit, base_url)
    finally:
        visit.close()


@pytest.mark.parametrize("explorer", IDS)
def test_tap_at_phone_width_changes_the_drawing_and_the_words(browser, base_url, explorer):
    visit = open_explorer(browser, base_url, EXPLORERS[explorer], explorer, width=390, touch=True)
    try:
        page = visit.page
        box = page.locator(f"{visit.root} canvas").bounding_box()
        assert box["width"] <= 390
        page.touchscreen.tap(*point(visit, *A))
        before = canvas_png(visit), live_text(visit)
        height = page.locator(visit.root).bounding_box()["height"]
        page.touchscreen.tap(*point(visit, *B))
        after = canvas_png(visit), live_text(visit)
        assert after[0] != before[0] and after[1] != before[1]
        # the layout does not move when the selection changes
        assert page.locator(visit.root).bounding_box()["height"] == height
        _checks(visit, base_url)
    finally:
        visit.close()


@pytest.mark.parametrize("explorer", IDS)
def test_dark_theme_draws_with_the_dark_palette(browser, base_url, explorer):
    visit = open_explorer(browser, base_url, EXPLORERS[explorer], explorer)
    try:
        page = visit.page
        light_bg = pixels_of_colour(visit, THEMES["light"]["bg"])
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
        page.wait_for_timeout(200)
        dark_bg = pixels_of_colour(visit, THEMES["dark"]["bg"])
        assert dark_bg > 0, "no pixel of the dark page colour after switching to dark"
        assert pixels_of_colour(visit, THEMES["light"]["bg"]) < light_bg
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'default')")
        page.wait_for_timeout(200)
        assert pixels_of_colour(visit, THEMES["light"]["bg"]) == light_bg
        _checks(visit, base_url)
    finally:
        visit.close()


def test_layout_holds_still_while_the_selection_moves(browser, base_url):
    from vitbook.figures.ch00_explore import STAGES

    visit = open_explorer(browser, base_url, EXPLORERS["ch00/forward-pass"], "ch00/forward-pass")
    try:
        page = visit.page
        heights = {round(page.locator(visit.root).bounding_box()["height"], 1)}
        for _ in STAGES[1:]:
            page.locator(f"{visit.root} button", has_text="next").click()
            heights.add(round(page.locator(visit.root).bounding_box()["height"], 1))
        assert len(heights) == 1, f"the explorer changed height between stages: {heights}"
    finally:
        visit.close()


# --- the numbers shown are the Python values ---------------------------------------------------


def close(shown, want, whole) -> None:
    """The page shows the committed build's numbers; this process computed ``want`` on its own
    CPU: verify.py's rule for explorer data, scaled by the array ``whole`` they come from."""
    scale = float(np.abs(np.asarray(whole)).max()) or 1.0
    rtol = verify.VALUE_RTOL
    np.testing.assert_allclose(shown, want, rtol=rtol, atol=rtol * scale)


def test_forward_pass_shows_the_models_numbers(browser, base_url):
    from vitbook.figures.ch00_explore import STAGES, forward_stages
    from vitbook.figures.ch00_see_it import CHOSEN

    d = forward_stages()
    visit = open_explorer(browser, base_url, EXPLORERS["ch00/forward-pass"], "ch00/forward-pass")
    try:
        page = visit.page
        assert f"patch {CHOSEN}" in live_text(visit)
        for kind, key, _ in STAGES[1:]:
            page.locator(f"{visit.root} button", has_text="next").click()
            shown = shown_values(visit)
            if kind == "tokens":
                close(shown, d["tokens"][key][CHOSEN + 1], d["tokens"][key])
            elif kind == "logits":
                close(shown, d["logits"], d["logits"])
        # the keyboard moves the selection by one patch: the row of the next patch is shown
        page.locator(f"{visit.root} canvas").focus()
        page.keyboard.press("ArrowRight")
        for _ in range(len(STAGES) - 2):
            page.locator(f"{visit.root} button", has_text="previous").click()
        assert f"patch {CHOSEN + 1}" in live_text(visit)
        close(shown_values(visit), d["tokens"]["with_cls"][CHOSEN + 2], d["tokens"]["with_cls"])
    finally:
        visit.close()


def test_patch_size_shows_the_flattened_values_and_counts(browser, base_url):
    from vitbook.data.face import face_tensor
    from vitbook.figures.ch02_explore import FIRST_VALUES, patch_sizes
    from vitbook.figures.ch02_patches import IMAGE, token_table
    from vitbook.patches import patchify

    visit = open_explorer(browser, base_url, EXPLORERS["ch02/patch-size"], "ch02/patch-size")
    try:
        page = visit.page
        table = token_table(IMAGE)
        for p in patch_sizes():
            page.locator(f"{visit.root} button", has_text=f"P = {p}").first.click()
            page.locator(f"{visit.root} canvas").focus()
            for key in ("Home", "ArrowRight", "ArrowRight", "ArrowDown"):
                page.keyboard.press(key)
            g = IMAGE // p
            index = g + 2
            want = patchify(face_tensor(IMAGE), p)[0][index][:FIRST_VALUES].numpy()
            np.testing.assert_allclose(shown_values(visit), want, rtol=1e-6)
            words = live_text(visit)
            assert f"patch {index} " in words
            assert f"{table[p]['tokens']:,} tokens" in words
            assert f"{table[p]['entries']:,} attention entries" in words
    finally:
        visit.close()


def test_pca_embedding_shows_the_scores_and_error(browser, base_url):
    from vitbook.figures.ch03_explore import quantized_basis, rebuild
    from vitbook.figures.ch03_patch_embedding import CHOSEN

    b = quantized_basis()
    visit = open_explorer(browser, base_url, EXPLORERS["ch03/pca-embedding"], "ch03/pca-embedding")
    try:
        page = visit.page
        slider = page.locator(f'{visit.root} input[type="range"]')
        for k in (1, 8, 30):
            slider.fill(str(k))
            scores, _, err = rebuild(b, CHOSEN, k)
            np.testing.assert_allclose(shown_values(visit), scores, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(shown_values(visit, ".vb-error"), [err], rtol=1e-5)
            assert f"patch {CHOSEN} " in live_text(visit) and f"r = {k}:" in live_text(visit)
    finally:
        visit.close()


def test_position_similarity_shows_the_sincos_values(browser, base_url):
    from vitbook.analysis import cosine_similarity_map, sincos_2d

    ex = "ch04/position-similarity"
    visit = open_explorer(browser, base_url, EXPLORERS[ex], ex)
    try:
        page = visit.page
        tables = page.evaluate(
            """async (src) => {
                const base = document.querySelector('script[src*="explorers/index.js"]').src;
                const core = await import(new URL('core.js', base));
                return (await core.loadExplorerData(src)).meta.tables;
            }""",
            page.get_attribute(visit.root, "data-src"),
        )
        for k, t in enumerate(tables):
            if not t["name"].startswith("2D sin-cos"):
                continue
            page.locator(f"{visit.root} button").nth(k).click()
            page.locator(f"{visit.root} canvas").focus()
            for key in ("Home", "ArrowDown", "ArrowRight"):  # row 1, column 1
                page.keyboard.press(key)
            gh, gw = t["grid"]
            sim = cosine_similarity_map(sincos_2d(gh, gw, t["dim"]), (gh, gw), num_prefix_tokens=0)
            row = sim[1, 1].double().numpy()
            want = [row[1, 2], row[2, 1], row.min()]
            np.testing.assert_allclose(shown_values(visit), want, rtol=1e-5, atol=1e-6)
    finally:
        visit.close()


# --- your image: the JavaScript forward pass against torch ------------------------------------

FORWARD_JS = """async ([src, pixels]) => {
    const base = document.querySelector('script[src*="explorers/index.js"]').src;
    const core = await import(new URL('core.js', base));
    const mod = await import(new URL('ch00-your-image.js', base));
    const data = await core.loadExplorerData(src);
    const out = mod.forward(data.meta, data.arrays, Float32Array.from(pixels));
    const arr = (a) => Array.from(a);
    return {patches: arr(out.patches), with_pos: arr(out.with_pos),
            blocks: out.blocks.map(arr), attn: out.attn.map(arr), encoded: arr(out.encoded),
            logits: arr(out.logits)};
}"""


def _generated_image() -> np.ndarray:
    """A second image: smooth colour waves plus seeded noise, (3, 224, 224) in [0, 1]."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:224, 0:224] / 224.0
    waves = np.stack([np.sin(6 * x + 2 * y), np.cos(4 * y - 3 * x), np.sin(9 * x * y)])
    img = 0.5 + 0.35 * waves + 0.1 * rng.standard_normal((3, 224, 224))
    return np.clip(img, 0, 1).astype(np.float32)


@pytest.mark.parametrize("which", ["face", "generated"])
def test_your_image_forward_pass_in_javascript_matches_torch(browser, base_url, which):
    from vitbook.data.face import face_tensor
    from vitbook.figures.ch00_see_it import run_face_model

    model, _, _ = run_face_model()
    x = face_tensor(224) if which == "face" else torch.from_numpy(_generated_image())[None]
    with torch.no_grad():
        ref = model.forward_intermediates(x.float(), attn=True)
    ex = "ch00/your-image"
    visit = open_explorer(browser, base_url, EXPLORERS[ex], ex)
    try:
        src = visit.page.get_attribute(visit.root, "data-src")
        got = visit.page.evaluate(FORWARD_JS, [src, x[0].numpy().ravel().tolist()])
    finally:
        visit.close()
    tol = {"rtol": 0, "atol": 1e-4}
    np.testing.assert_allclose(np.reshape(got["patches"], (49, 8)), ref["patches"][0], **tol)
    np.testing.assert_allclose(np.reshape(got["with_pos"], (50, 8)), ref["with_pos"][0], **tol)
    for layer in range(len(ref["blocks"])):
        np.testing.assert_allclose(
            np.reshape(got["blocks"][layer], (50, 8)), ref["blocks"][layer][0], **tol
        )
        np.testing.assert_allclose(
            np.reshape(got["attn"][layer], (2, 50, 50)), ref["attn"][layer][0], **tol
        )
    np.testing.assert_allclose(np.reshape(got["encoded"], (50, 8)), ref["encoded"][0], **tol)
    np.testing.assert_allclose(got["logits"], ref["logits"][0], **tol)


def test_your_image_runs_on_a_chosen_file(browser, base_url, tmp_path):
    from PIL import Image

    path = tmp_path / "waves.png"
    img = (_generated_image().transpose(1, 2, 0) * 255).round().astype(np.uint8)
    Image.fromarray(img).resize((300, 200)).save(path)
    ex = "ch00/your-image"
    visit = open_explorer(browser, base_url, EXPLORERS[ex], ex)
    try:
        page = visit.page
        before = canvas_png(visit), shown_values(visit, ".vb-logits")
        page.set_input_files(f"{visit.root} input[type=file]", str(path))
        page.wait_for_function(
            "sel => document.querySelector(sel + ' .vb-live').textContent.startsWith('waves.png')",
            arg=visit.root,
        )
        assert canvas_png(visit) != before[0]
        assert not np.allclose(shown_values(visit, ".vb-logits"), before[1])
        assert all("waves.png" not in u for u in visit.requests), "the image left the page"
        _checks(visit, base_url)
    finally:
        visit.close()


@pytest.mark.parametrize("page_url", sorted(set(EXPLORERS.values())))
def test_pages_with_explorers_stay_within_the_page_weight_budget(browser, base_url, page_url):
    import sitebuild

    explorer = next(k for k, v in EXPLORERS.items() if v == page_url)
    visit = open_explorer(browser, base_url, page_url, explorer)
    try:
        page = visit.page
        for _ in range(60):  # scroll through, so lazy images load too
            page.mouse.wheel(0, 900)
            page.wait_for_timeout(30)
        page.wait_for_load_state("networkidle")
        total = page.evaluate(
            """() => performance.getEntriesByType('navigation')
                .concat(performance.getEntriesByType('resource'))
                .reduce((s, e) => s + (e.transferSize || e.encodedBodySize || 0), 0)"""
        )
        assert 0 < total <= sitebuild.MAX_PAGE_BYTES, f"{page_url} weighs {total:,} bytes"
    finally:
        visit.close()
