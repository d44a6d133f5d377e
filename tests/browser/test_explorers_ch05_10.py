"""The explorers of Chapters 5-10 in headless Chromium: they mount, answer mouse, tap and keys,
and their numbers equal the book's Python (vitbook.calc, the book's attention, torch).

Each test opens the chapter page in a fresh context, records console errors and every request,
and asserts at the end that there were no errors and no request left the local server.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch
from explorer_helpers import Transfers, scroll_to_the_end

from vitbook.calc import macs, param_breakdown
from vitbook.engine.explorer import ExplorerData, decode, read
from vitbook.model import PRESETS, ViTConfig, scaled_dot_product

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CH05 = "05-self-attention/"
CH08 = "08-whole-model/"


#: A phone: 390 CSS pixels wide, touch.
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}


def assert_dark_theme_repaints(page, element) -> None:
    """Switching the page to the dark theme changes the explorer's pixels."""
    light = element.screenshot()
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    page.wait_for_timeout(100)
    assert element.screenshot() != light


@contextmanager
def opened(browser, base_url: str, url: str, **context_args):
    """A page on ``url`` with its explorers mounted; fails on console errors or foreign
    requests when the block ends."""
    args = {"viewport": {"width": 1280, "height": 900}, "color_scheme": "light",
            "service_workers": "block"} | context_args  # fmt: skip
    context = browser.new_context(**args)
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.goto(base_url + url, wait_until="load", timeout=30000)
    try:
        yield page
        assert not errors, "console errors:\n" + "\n".join(errors)
        foreign = [r for r in requests if not r.startswith(base_url) and not r.startswith("data:")]
        assert not foreign, f"requests left the site: {foreign}"
    finally:
        context.close()


def live(page, key: str):
    root = page.locator(f'.vb-explorer[data-explorer="{key}"]')
    root.scroll_into_view_if_needed()
    page.wait_for_selector(f'.vb-explorer--live[data-explorer="{key}"]', timeout=15000)
    return root


def assert_fits(page, root) -> None:
    """Nothing in the explorer reaches past the right edge of a phone's screen."""
    width = page.evaluate("document.documentElement.clientWidth")
    right = root.evaluate(
        "r => Math.max(...[r, ...r.querySelectorAll('*')]"
        ".map(e => e.getBoundingClientRect().right))"
    )
    assert right <= width + 1, f"the explorer is {right} px wide on a {width} px screen"


def say(root) -> str:
    return root.locator(".vb-live").inner_text()


MODULE_JS = """async ([key, cfgs]) => {
    const root = document.querySelector(`.vb-explorer[data-explorer="${key}"]`);
    const base = new URL('javascripts/explorers/', document.baseURI).href;
    const core = await import(base + 'core.js');
    const data = await core.loadExplorerData(root.dataset.src);
    const mod = await import(base + key.replace('/', '-') + '.js');
    return FN;
}"""


def run_module(page, key: str, body: str, arg):
    # the page's base URI may be the chapter's folder: resolve from the site root instead
    js = MODULE_JS.replace(
        "new URL('javascripts/explorers/', document.baseURI).href",
        "new URL('javascripts/explorers/', new URL(root.dataset.src.replace(/figures\\/.*$/, ''), "
        "document.baseURI)).href",
    ).replace("FN", body)
    return page.evaluate(js, [key, arg])


# ---------------------------------------------------------------------------- ch08 calculator


def python_costs(fields: dict) -> dict:
    """What the page must show for ``fields``: vitbook.calc, or the model's refusal."""
    try:
        cfg = ViTConfig(**fields)
    except ValueError as exc:
        return {"refused": str(exc)}
    out = {
        "tokens": str(cfg.seq_len),
        "pairs": str(cfg.seq_len**2),
        "params": {k: str(v) for k, v in param_breakdown(cfg).items()},
        "macs": {k: str(v) for k, v in macs(cfg).items()},
        "macs_no_attn": {k: str(v) for k, v in macs(cfg, attn_matmuls=False).items()},
    }
    try:
        ref = dataclasses.replace(cfg, image_size=224)
    except ValueError:
        out["ratios"] = None
        return out
    out["ratios"] = {
        "tokens": cfg.seq_len / ref.seq_len,
        "pairs": (cfg.seq_len / ref.seq_len) ** 2,
        "params": param_breakdown(cfg)["total"] / param_breakdown(ref)["total"],
        "macs": macs(cfg)["total"] / macs(ref)["total"],
        "macs_no_attn": macs(cfg, attn_matmuls=False)["total"]
        / macs(ref, attn_matmuls=False)["total"],
    }
    return out


def sweep_configs() -> list[dict]:
    fields = ("image_size", "patch_size", "in_chans", "dim", "depth", "heads", "mlp_ratio",
              "num_classes", "pos_embed", "qkv_bias")  # fmt: skip
    cfgs = []
    for cfg in PRESETS.values():
        for size in (224, 384, 512):
            c = dataclasses.replace(cfg, image_size=cfg.image_size)  # the preset itself
            d = {f: getattr(c, f) for f in fields}
            d["image_size"] = size
            cfgs.append(d)
    rng = random.Random(15)
    for _ in range(200):
        P = rng.choice([1, 2, 4, 7, 8, 14, 16, 32, rng.randint(1, 64)])
        heads = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, rng.randint(1, 24)])
        dim = heads * rng.randint(1, 160) + (rng.random() < 0.15) * rng.randint(1, heads)
        side = P * rng.randint(1, 64) + (rng.random() < 0.2) * rng.randint(1, P)
        cfgs.append({
            "image_size": side, "patch_size": P, "in_chans": rng.choice([1, 3, 4]),
            "dim": dim, "depth": rng.randint(0, 48), "heads": heads,
            "mlp_ratio": rng.choice([1.0, 2.0, 2.5, 3.0, 4.0, 4.5, 8.0 / 3.0]),
            "num_classes": rng.choice([0, 2, 10, 100, 1000, 21843]),
            "pos_embed": rng.choice(["learned", "none"]), "qkv_bias": rng.random() < 0.7,
            "representation_size": rng.choice([0, 0, 0, rng.randint(1, 1024)]),
        })  # fmt: skip
    return cfgs


def test_cost_calculator_equals_vitbook_calc_on_every_preset_and_200_random_configs(
    browser, base_url
):
    cfgs = sweep_configs()
    with opened(browser, base_url, CH08) as page:
        live(page, "ch08/cost-calculator")
        got = run_module(
            page, "ch08/cost-calculator", "cfgs.map((c) => mod.costsAsText(c, data.meta))", cfgs
        )
    refused = exact = 0
    big = 0
    for cfg, js in zip(cfgs, got, strict=True):
        want = python_costs(cfg)
        if "refused" in want:
            assert js.get("refused") == want["refused"], cfg
            refused += 1
            continue
        assert "refused" not in js, (cfg, js["refused"])
        for k in ("tokens", "pairs"):
            assert js[k] == want[k], (cfg, k)
        for group in ("params", "macs", "macs_no_attn"):
            assert js[group] == want[group], (cfg, group)
            big += max(int(v) for v in want[group].values()) >= 2**53
        if want["ratios"] is None:
            assert "ratios" not in js, cfg
        else:
            for k, v in want["ratios"].items():
                assert math.isclose(js["ratios"][k], v, rel_tol=1e-12), (cfg, k)
        exact += 1
    assert refused >= 10 and exact >= 150  # the sweep covers both outcomes
    print(f"\n{exact} configs equal exactly, {refused} refused alike, {big} counts above 2^53")


def canvas_png(locator) -> bytes:
    return locator.screenshot()


def test_cost_calculator_ui_by_mouse_keyboard_and_refusal(browser, base_url):
    with opened(browser, base_url, CH08) as page:
        root = live(page, "ch08/cost-calculator")
        cfg = PRESETS["vit-l/16"]
        root.locator("select").select_option("vit-l/16")
        text = root.locator(".vb2-summary").inner_text()
        assert f"{param_breakdown(cfg)['total']:,}" in text
        assert f"{macs(cfg)['total']:,}" in text
        before = canvas_png(root.locator("canvas"))
        size = root.locator('input[data-field="image_size"]')
        size.fill("384")
        big = dataclasses.replace(cfg, image_size=384)
        assert f"{macs(big)['total']:,}" in root.locator(".vb2-summary").inner_text()
        assert "384 px" in say(root)
        size.fill("383")
        with pytest.raises(ValueError) as exc:
            dataclasses.replace(cfg, image_size=383)
        assert root.locator(".vb2-refusal").inner_text() == str(exc.value)
        assert str(exc.value) in say(root)
        size.fill("224")
        # hover a bar segment: the live line names a component; keys walk the segments
        bars = root.locator("canvas")
        box = bars.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 12)
        assert "parameters:" in say(root)
        after = canvas_png(bars)
        assert after != before
        bars.focus()
        page.keyboard.press("ArrowRight")
        assert "patch embedding" in say(root)
        # the dark theme repaints the canvas
        light = canvas_png(bars)
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
        page.wait_for_timeout(100)
        assert canvas_png(bars) != light


def test_cost_calculator_by_tap_at_phone_width(browser, base_url):
    with opened(browser, base_url, CH08, viewport={"width": 390, "height": 844},
                has_touch=True, is_mobile=True) as page:  # fmt: skip
        root = live(page, "ch08/cost-calculator")
        assert_fits(page, root)
        bars = root.locator("canvas")
        box = bars.bounding_box()
        bars.tap(position={"x": box["width"] * 0.6, "y": 12})
        assert "parameters:" in say(root)


# ---------------------------------------------------------------------------- ch05 calculator


def python_attention(x, meta, scale=True):
    x = torch.tensor(x, dtype=torch.float64)
    wq, wk, wv = (torch.tensor(meta[k], dtype=torch.float64) for k in ("w_q", "w_k", "w_v"))
    out, weights = scaled_dot_product(x @ wq, x @ wk, x @ wv, scale=scale)
    return out.numpy(), weights.numpy()


def read_matrix(root, name: str) -> np.ndarray:
    cells = root.locator(f'table[data-m="{name}"] td').evaluate_all(
        "tds => tds.map(td => [+td.dataset.i, +td.dataset.j, +td.dataset.value])"
    )
    n, m = max(c[0] for c in cells) + 1, max(c[1] for c in cells) + 1
    out = np.zeros((n, m))
    for i, j, v in cells:
        out[i, j] = v
    return out


def test_attention_calculator_equals_the_books_attention_on_random_inputs(browser, base_url):
    meta = decode((ROOT / "figures/ch05/attention-calculator.explorer.bin").read_bytes()).meta
    rng = np.random.default_rng(5)
    with opened(browser, base_url, CH05) as page:
        root = live(page, "ch05/attention-calculator")
        out, weights = python_attention(meta["x"], meta)
        np.testing.assert_allclose(read_matrix(root, "O"), out, atol=1e-6)
        for trial in range(3):
            x = np.round(rng.uniform(-3, 3, size=(4, 4)), 3)
            for i in range(4):
                for j in range(4):
                    root.locator(f'table[data-m="X"] input[data-i="{i}"][data-j="{j}"]').fill(
                        repr(float(x[i, j]))
                    )
            scale = trial != 1
            if not scale:
                root.locator("button.vb2-scale").click()
            out, weights = python_attention(x, meta, scale)
            np.testing.assert_allclose(read_matrix(root, "A"), weights, atol=1e-6)
            np.testing.assert_allclose(read_matrix(root, "O"), out, atol=1e-6)
            if not scale:
                root.locator("button.vb2-scale").click()
        # the worked example mode: q, K, V typed in
        root.locator('button[data-mode="worked"]').click()
        q = rng.uniform(-2, 2, size=(1, 4)).round(3)
        k = rng.uniform(-2, 2, size=(3, 4)).round(3)
        v = rng.uniform(-2, 2, size=(3, 2)).round(3)
        for name, m in (("q", q), ("K", k), ("V", v)):
            for (i, j), val in np.ndenumerate(m):
                root.locator(f'table[data-m="{name}"] input[data-i="{i}"][data-j="{j}"]').fill(
                    repr(float(val))
                )
        o, w = scaled_dot_product(*(torch.tensor(a) for a in (q, k, v)))
        np.testing.assert_allclose(read_matrix(root, "A"), w.numpy(), atol=1e-6)
        np.testing.assert_allclose(read_matrix(root, "O"), o.numpy(), atol=1e-6)


def test_attention_calculator_hover_keyboard_and_tap(browser, base_url):
    with opened(browser, base_url, CH05) as page:
        root = live(page, "ch05/attention-calculator")
        cell = root.locator('table[data-m="A"] td[data-i="1"][data-j="2"]')
        before = cell.screenshot()
        cell.hover()
        assert "exp(" in say(root)
        # the inputs of A[1, 2] are row 1 of the scaled scores: exactly four cells light up
        assert root.locator('table[data-m="Sd"] td.vb2-hit').count() == 4
        assert root.locator(".vb2-hit").count() == 4
        root.locator('table[data-m="O"] td[data-i="0"][data-j="0"]').focus()
        page.keyboard.press("ArrowDown")
        assert say(root).startswith("O[p1, 1]")
        # O[p1, 1] comes from row p1 of A and column 1 of V
        assert root.locator('table[data-m="A"] td.vb2-hit').count() == 4
        assert root.locator('table[data-m="V"] td.vb2-hit').count() == 4
        root.locator('table[data-m="X"] input[data-i="1"][data-j="2"]').fill("3")
        assert cell.screenshot() != before
        assert "set to 3" in say(root)
    with opened(browser, base_url, CH05, viewport={"width": 390, "height": 844},
                has_touch=True, is_mobile=True) as page:  # fmt: skip
        root = live(page, "ch05/attention-calculator")
        assert_fits(page, root)
        root.locator('table[data-m="S"] td[data-i="0"][data-j="3"]').tap()
        assert say(root).startswith("q(CLS) · k(p3)")


# ---------------------------------------------------------------------------- ch06 heads


def test_heads_follow_the_pointer_and_keys_with_the_chapters_distances(browser, base_url):
    from vitbook.figures.ch06_multi_head import GRID, PATCH, QUERY, face_tokens, hand_set_heads

    tokens, _ = face_tokens()
    with torch.no_grad():
        _, weights = hand_set_heads()(tokens[None], return_weights=True)  # (1, 4, 196, 196)
    ys, xs = np.divmod(np.arange(GRID * GRID), GRID)
    centres = np.stack([ys, xs], -1) * PATCH

    def distances(q: int) -> list[float]:
        d = np.linalg.norm(centres - centres[q], axis=-1)
        return [float((weights[0, h, q].numpy() * d).sum()) for h in range(weights.shape[1])]

    def said(root) -> list[float]:
        text = say(root)
        return [float(t.split(" px")[0].split()[-1]) for t in text.split(": ", 1)[1].split(",")]

    with opened(browser, base_url, "06-multi-head-attention/") as page:
        root = live(page, "ch06/heads")
        cv = root.locator("canvas")
        before = cv.screenshot()
        box = cv.bounding_box()
        cols = 4  # at 1280 px the four maps sit side by side
        side = (box["width"] - 30) / cols
        page.mouse.move(box["x"] + side * 0.02, box["y"] + 17 + side * 0.02)  # patch 0 of map 0
        assert root.get_attribute("data-query") == "0"
        np.testing.assert_allclose(said(root), distances(0), atol=0.06)
        assert cv.screenshot() != before
        cv.focus()
        page.keyboard.press("Enter")
        assert root.get_attribute("data-query") == str(QUERY)
        np.testing.assert_allclose(said(root), distances(QUERY), atol=0.06)
        page.keyboard.press("ArrowRight")
        assert root.get_attribute("data-query") == str(QUERY + 1)
        np.testing.assert_allclose(said(root), distances(QUERY + 1), atol=0.06)
        page.keyboard.press("ArrowDown")
        assert root.get_attribute("data-query") == str(QUERY + 1 + GRID)
        assert_dark_theme_repaints(page, cv)
    with opened(browser, base_url, "06-multi-head-attention/", **PHONE) as page:
        root = live(page, "ch06/heads")
        assert_fits(page, root)
        cv = root.locator("canvas")
        cv.tap(position={"x": 5, "y": 21})
        assert root.get_attribute("data-query") == "0"


# ---------------------------------------------------------------------------- ch09 digits

CH09 = "09-training/"


def tinyvit8_from_export():
    """The chapter's TinyViT8 rebuilt in torch from the page's own data file."""
    from vitbook.model import VisionTransformer, preset

    data = decode((ROOT / "figures/ch09/draw-a-digit.explorer.bin").read_bytes())
    model = VisionTransformer(cfg=preset("tinyvit8")).eval()
    state = {k[2:]: torch.from_numpy(v.copy()) for k, v in data.arrays.items() if k[:2] == "w:"}
    model.load_state_dict(state, strict=True)
    return model, data


def test_draw_a_digit_equals_torch_on_50_test_digits(browser, base_url):
    model, data = tinyvit8_from_export()
    images = torch.from_numpy(data.arrays["images"].copy())
    assert len(images) >= 50
    with torch.no_grad():
        want = model(images[:50]).numpy()
    got = []
    with opened(browser, base_url, CH09) as page:
        root = live(page, "ch09/draw-a-digit")
        load = root.locator("button.vb2-load")
        for i in range(50):
            load.click()
            assert root.get_attribute("data-test") == str(i)
            got.append(page.evaluate("r => JSON.parse(r.dataset.logits)", root.element_handle()))
        label = int(data.arrays["labels"][49])
        assert f"labelled {label}" in say(root)
    got = np.array(got)
    err = np.abs(got - want).max()
    print(f"\nlargest |JS - torch| logit difference over 50 digits: {err:.2e}")
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_draw_a_digit_by_mouse_keys_and_tap(browser, base_url):
    with opened(browser, base_url, CH09) as page:
        root = live(page, "ch09/draw-a-digit")
        board = root.locator("canvas.vb2-board")
        maps = root.locator("canvas.vb2-maps")
        before_board, before_maps = board.screenshot(), maps.screenshot()
        box = board.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.1)
        page.mouse.down()
        for k in range(8):
            page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * (0.1 + k / 9))
        page.mouse.up()
        assert "The model says" in say(root)
        assert board.screenshot() != before_board
        assert maps.screenshot() != before_maps
        logits = root.get_attribute("data-logits")
        board.focus()
        page.keyboard.press("ArrowRight")  # the cursor starts where the stroke ended
        cell = say(root).split(":")[0]
        assert re.fullmatch(r"Row \d, column \d", cell), say(root)
        page.keyboard.press("Space")
        assert say(root).startswith(cell + " o")
        assert root.get_attribute("data-logits") != logits
        root.get_by_role("button", name="clear").click()
        assert "Cleared." in say(root)
        assert_dark_theme_repaints(page, maps)
    with opened(browser, base_url, CH09, **PHONE) as page:
        root = live(page, "ch09/draw-a-digit")
        assert_fits(page, root)
        board = root.locator("canvas.vb2-board")
        box = board.bounding_box()
        board.tap(position={"x": box["width"] * 0.5, "y": box["height"] * 0.5})
        assert "The model says" in say(root)


# ---------------------------------------------------------------------------- navigation


def test_explorers_mount_after_following_a_link_and_on_a_page_change(browser, base_url):
    """Both ways a page can change: a link followed (a full load: the book does not use
    Material's instant navigation), and a page change announced through document$ on the same
    document (what instant navigation would do)."""
    with opened(browser, base_url, CH05) as page:
        live(page, "ch05/attention-calculator")
        page.locator('nav a[href$="08-whole-model/"]').first.click()
        page.wait_for_url("**/08-whole-model/**")
        root = live(page, "ch08/cost-calculator")
        assert root.locator(".vb2-calc").count() == 1
        # a page change on the same document: the explorer is unmounted and mounted again once
        page.evaluate("window.document$.next(document)")
        page.wait_for_timeout(500)
        root = live(page, "ch08/cost-calculator")
        assert root.locator(".vb2-calc").count() == 1
        root.locator('input[data-field="image_size"]').fill("384")
        assert "384 px" in say(root)


def test_the_pages_vit_forward_equals_torch_on_a_perturbed_tinyvit8(browser, base_url):
    """vit.js on weights far from initialisation (no training needed): logits, the rollout of
    vitbook.analysis and GELU (exact erf) equal torch's."""
    from vitbook.analysis import attention_rollout
    from vitbook.figures.ch09_explore import config_meta, weight_arrays
    from vitbook.model import VisionTransformer, preset

    torch.manual_seed(0)
    model = VisionTransformer(cfg=preset("tinyvit8")).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
        x = torch.rand(6, 1, 8, 8)
        out = model.forward_intermediates(x)
    roll = attention_rollout(list(out["attn"]))[:, 0].numpy()
    weights = {k[2:]: v.ravel().tolist() for k, v in weight_arrays(model).items()}
    xs = np.linspace(-12, 12, 2401)
    with opened(browser, base_url, CH09) as page:
        got = page.evaluate(
            """async ([w, cfg, images, xs]) => {
                const vit = await import(location.origin + '/javascripts/explorers/vit.js');
                const runs = images.map((im) => vit.forward(w, cfg, im));
                return {logits: runs.map((r) => r.logits),
                        roll: runs.map((r) => Array.from(vit.rollout(r.attn, r.T, r.heads, 0.5)
                                                          .slice(0, r.T))),
                        gelu: xs.map(vit.gelu)};
            }""",
            [weights, config_meta(model), x.reshape(6, -1).tolist(), xs.tolist()],
        )
    np.testing.assert_allclose(got["logits"], out["logits"].numpy(), atol=1e-4)
    np.testing.assert_allclose(got["roll"], roll, atol=1e-6)
    gelu = torch.nn.functional.gelu(torch.tensor(xs, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got["gelu"], gelu, atol=1e-12)


# ---------------------------------------------------------------------------- ch07 GELU / ReLU

CH07 = "07-encoder-block/"


def torch_gelu_relu(x: float) -> dict[str, float]:
    """GELU (exact erf), ReLU and both slopes at x, by torch and autograd, in float64."""
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    g = torch.nn.functional.gelu(t)
    (dg,) = torch.autograd.grad(g, t)
    t2 = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    r = torch.relu(t2)
    (dr,) = torch.autograd.grad(r, t2)
    return {"x": x, "gelu": g.item(), "relu": r.item(), "dgelu": dg.item(), "drelu": dr.item()}


def gelu_minimum() -> float:
    """Where GELU's slope Φ(x) + x φ(x) crosses zero, by bisection on [-2, 0] in float64."""
    lo, hi = -2.0, 0.0

    def slope(x: float) -> float:
        return torch_gelu_relu(x)["dgelu"]

    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


GELU_TEXT = re.compile(
    r"x = (?P<x>\S+): GELU (?P<gelu>\S+), ReLU (?P<relu>\S+); "
    r"slopes GELU′ (?P<dgelu>\S+), ReLU′ (?P<drelu>[^\s(]+)"
)


def read_gelu(root) -> dict[str, float]:
    m = GELU_TEXT.search(say(root))
    assert m, say(root)
    return {k: float(v.replace("−", "-")) for k, v in m.groupdict().items()}


def assert_gelu_equals_torch(shown: dict[str, float]) -> None:
    """Every printed number (4 decimals) is torch's at the printed x, to the printed precision
    (the x printed is itself rounded: the slope of each curve bounds what that moves)."""
    want = torch_gelu_relu(shown["x"])
    dx = 5e-5  # the printed x is within half a unit of its last digit of the grid's x
    for k, slope in (("gelu", 1.13), ("relu", 1.0), ("dgelu", 0.5), ("drelu", 0.0)):
        assert abs(shown[k] - want[k]) <= 5e-5 + slope * dx + 1e-7, (k, shown, want)


def test_gelu_relu_hover_keys_and_tap_read_torchs_values(browser, base_url):
    with opened(browser, base_url, CH07) as page:
        root = live(page, "ch07/gelu-relu")
        cv = root.locator("canvas")
        before = cv.screenshot()
        box = cv.bounding_box()
        xs = []
        for share in (0.15, 0.3, 0.45):  # left panel (values), left to right
            page.mouse.move(box["x"] + box["width"] * share, box["y"] + box["height"] * 0.5)
            shown = read_gelu(root)
            assert_gelu_equals_torch(shown)
            xs.append(shown["x"])
        assert xs == sorted(xs) and len(set(xs)) == 3
        assert cv.screenshot() != before
        # Enter jumps to GELU's minimum, a computed fact: bisection on torch's slope here
        cv.focus()
        page.keyboard.press("Enter")
        text = say(root)
        assert "GELU's minimum" in text
        xmin = gelu_minimum()
        ymin = torch_gelu_relu(xmin)["gelu"]
        assert f"x = {xmin:.4f}, GELU = {ymin:.4f})" in text, (text, xmin, ymin)
        at_min = read_gelu(root)
        assert_gelu_equals_torch(at_min)
        page.keyboard.press("ArrowRight")
        right = read_gelu(root)
        assert right["x"] > at_min["x"] and "minimum" not in say(root)
        assert_gelu_equals_torch(right)
        page.keyboard.press("End")
        end = read_gelu(root)
        assert end["drelu"] == 1.0 and end["relu"] == end["x"]
        assert_dark_theme_repaints(page, cv)
    with opened(browser, base_url, CH07, **PHONE) as page:
        root = live(page, "ch07/gelu-relu")
        assert_fits(page, root)
        cv = root.locator("canvas")
        box = cv.bounding_box()
        cv.tap(position={"x": box["width"] * 0.2, "y": box["height"] * 0.25})
        assert_gelu_equals_torch(read_gelu(root))


# ---------------------------------------------------------------------------- ch10 attention

CH10 = "10-inside-a-trained-vit/"
ATTX = "ch10/attention-explorer"


@pytest.fixture(scope="module")
def attx():
    """The explorer's data, its main file's arrays and every image's maps from the parts (as
    one array per name, the images along the first axis), and the float attention it was made
    from."""
    from vitbook.figures.ch10_explore import explorer_attention, sent_maps

    data = read(ROOT / "figures/ch10/attention-explorer.explorer.bin")
    return ExplorerData(data.meta, data.arrays | sent_maps(data)), explorer_attention()


def maps_shown(page, img: int, grid: bool = False) -> None:
    """Wait until the view draws image ``img``'s maps (downloaded when it is first picked)."""
    view = ".vb2-attx-grid" if grid else ".vb2-attx"
    page.wait_for_selector(
        f'{view}[data-image="{img}"][data-row]:not([data-loading])', timeout=15000
    )


def sent_row(data, img: int, layer: int, mode: str, head: int, q: int) -> np.ndarray:
    """The row the page must show, from the data file's uint8 steps of each row's largest
    patch weight and its class-token weight (vitbook.figures.ch10_explore.dequantise)."""
    from vitbook.figures.ch10_explore import dequantise

    a = data.arrays
    if mode in ("rollout", "mean"):
        return dequantise(a[mode], a[f"{mode}_top"], a[f"{mode}_cls"])[img, layer, q]
    sent = dequantise(a["attn"][img, layer], a["attn_top"][img, layer], a["attn_cls"][img, layer])
    return sent[head, q]


def model_row(exact, img: int, layer: int, mode: str, head: int, q: int) -> np.ndarray:
    if mode == "rollout":
        return exact["rollout"][img, layer, q]
    a = exact["attn"][img, layer]
    return a[:, q].mean(0) if mode == "mean" else a[head, q]


def shown(view) -> dict:
    d = view.evaluate("e => ({...e.dataset})")
    ints = {k: int(d[v]) for k, v in (("img", "image"), ("layer", "layer"), ("head", "head"))}
    return ints | {"mode": d["mode"], "q": int(d["query"]), "row": np.array(json.loads(d["row"]))}


def assert_row_is_the_models(view, data, exact) -> dict:
    s = shown(view)
    key = (s["img"], s["layer"], s["mode"], s["head"], s["q"])
    np.testing.assert_allclose(s["row"], sent_row(data, *key), atol=1e-12)
    # the patches within half a step of the row's largest patch weight (the top of its colour
    # bar), the class token's weight to float32
    exact_row = model_row(exact, *key)
    half = exact_row[1:].max() / (2 * data.meta["levels"]) * (1 + 1e-6)
    assert np.abs(s["row"][1:] - exact_row[1:]).max() <= half
    assert abs(s["row"][0] - exact_row[0]) <= 1e-6
    assert abs(s["row"].sum() - 1) <= len(exact_row) * half + 1e-6
    return s


def assert_words_match(root, s, data) -> None:
    """The live words give the class token's weight, the largest patch weight and the colour
    bar's range of the row shown, to the printed 3 decimals."""
    row = s["row"]
    text = say(root)
    assert f"Image {s['img'] + 1}" in text
    assert f"puts {row[0]:.3f} on the class token" in text, text
    assert f"at most {row[1:].max():.3f} on patch" in text, text
    assert f"Colour bar 0.000 to {row[1:].max():.3f}." in text, text


def test_attention_explorer_by_mouse_picker_switches_and_keys(browser, base_url, attx):
    data, exact = attx
    m = data.meta
    gh, gw = m["grid"]
    L = m["depth"]
    with opened(browser, base_url, CH10) as page:
        root = live(page, ATTX)
        maps_shown(page, 0)
        view = root.locator(".vb2-attx")
        cv = root.locator("canvas.vb2-attx-canvas")
        # the static figure gives way; the first view is image 1's mean over heads, last layer
        assert not root.locator(".vb-figure img").first.is_visible()
        s = assert_row_is_the_models(view, data, exact)
        assert (s["img"], s["layer"], s["mode"]) == (0, L - 1, "mean")
        box = cv.bounding_box()
        side = (box["width"] - 12) / 2  # the image, a 12 px gap, the map
        height = root.bounding_box()["height"]
        before, words = cv.screenshot(), say(root)
        for r, c in ((0, 0), (2, 5), (gh - 1, gw - 1), (5, 1)):
            page.mouse.move(box["x"] + (c + 0.5) * side / gw, box["y"] + 18 + (r + 0.5) * side / gh)
            s = assert_row_is_the_models(view, data, exact)
            assert s["q"] == 1 + r * gw + c
            assert_words_match(root, s, data)
            assert root.bounding_box()["height"] == height  # nothing moves while hovering
        assert cv.screenshot() != before and say(root) != words
        # hovering the map picks the same patch as hovering the image
        page.mouse.move(box["x"] + side + 12 + 2.5 * side / gw, box["y"] + 18 + 0.5 * side / gh)
        assert shown(view)["q"] == 1 + 2
        # the picker: label and prediction of each image are the model's
        for k in (5, 11):
            root.locator(f'button[data-image="{k}"]').click()
            maps_shown(page, k)
            s = assert_row_is_the_models(view, data, exact)
            assert s["img"] == k
            label, pred = m["classes"][m["labels"][k]], m["classes"][m["preds"][k]]
            title = root.locator(".vb2-attx-title").inner_text()
            assert f"labelled {label}, the model says {pred}" in title
            assert root.locator(f'button[data-image="{k}"]').get_attribute("aria-pressed") == "true"
            assert root.bounding_box()["height"] == height
        # layer and head, then rollout, then the class token's row
        root.get_by_label("layer").select_option("0")
        root.get_by_label("head").select_option("2")
        s = assert_row_is_the_models(view, data, exact)
        assert (s["layer"], s["mode"], s["head"]) == (0, "head", 2)
        assert "layer 1, head 3" in say(root)
        root.locator("button.vb2-attx-rollout").click()
        s = assert_row_is_the_models(view, data, exact)
        assert s["mode"] == "rollout" and "rollout through layer 1" in say(root)
        root.get_by_label("layer").select_option(str(L - 1))
        s = assert_row_is_the_models(view, data, exact)
        assert_words_match(root, s, data)
        root.locator("button.vb2-attx-cls").click()
        s = assert_row_is_the_models(view, data, exact)
        assert s["q"] == 0 and "The class token's row" in say(root)
        # the class token's rollout row is the static figure's map of this image
        np.testing.assert_allclose(
            s["row"][1:], exact["rollout"][s["img"], L - 1, 0, 1:], atol=1 / (2 * m["levels"])
        )
        # keys: Enter leaves the class token's row, arrows move the patch
        cv.focus()
        page.keyboard.press("Enter")
        q = shown(view)["q"]
        assert q > 0
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowDown")
        s = assert_row_is_the_models(view, data, exact)
        r0, c0 = divmod(q - 1, gw)
        assert s["q"] == 1 + min(r0 + 1, gh - 1) * gw + min(c0 + 1, gw - 1)
        assert_words_match(root, s, data)
        assert_dark_theme_repaints(page, cv)


def test_attention_explorer_by_tap_at_phone_width(browser, base_url, attx):
    data, exact = attx
    gh, gw = data.meta["grid"]
    with opened(browser, base_url, CH10, **PHONE) as page:
        root = live(page, ATTX)
        maps_shown(page, 0)
        assert_fits(page, root)
        view = root.locator(".vb2-attx")
        cv = root.locator("canvas.vb2-attx-canvas")
        box = cv.bounding_box()
        side = (box["width"] - 12) / 2
        height = root.bounding_box()["height"]
        before = cv.screenshot()
        for r, c in ((1, 6), (7, 0)):
            cv.tap(position={"x": (c + 0.5) * side / gw, "y": 18 + (r + 0.5) * side / gh})
            s = assert_row_is_the_models(view, data, exact)
            assert s["q"] == 1 + r * gw + c
            assert_words_match(root, s, data)
            assert root.bounding_box()["height"] == height
        assert cv.screenshot() != before
        root.locator('button[data-image="3"]').tap()
        maps_shown(page, 3)
        assert shown(view)["img"] == 3
        assert_fits(page, root)


def test_heads_second_tab_shows_every_layer_and_head_of_the_trained_model(browser, base_url, attx):
    data, exact = attx
    m = data.meta
    gh, gw = m["grid"]
    L, H = m["depth"], m["heads"]

    def per_layer(text: str) -> np.ndarray:
        """(L, H, 2): weight on the patch and attention distance, as the words give them."""
        tail = text.split(f"heads 1 to {H}: ", 1)[1].rstrip(".")
        return np.array([[[float(x) for x in v.removesuffix(" px").split()]
                          for v in part.split(": ", 1)[1].split(", ")]
                         for part in tail.split("; ")])  # fmt: skip

    def distances(q: int) -> np.ndarray:
        """(L, H): vitbook.analysis.mean_attention_distance of query q's rows as sent (every
        other query a zero row, which the function counts as zero: scaled back by N)."""
        from vitbook.analysis import mean_attention_distance
        from vitbook.figures.ch10_explore import dequantise

        a = data.arrays
        sent = dequantise(a["attn"][0], a["attn_top"][0], a["attn_cls"][0])  # (L, H, T, T)
        only = np.zeros_like(sent)
        only[:, :, q] = sent[:, :, q]
        return np.stack([mean_attention_distance(torch.from_numpy(a), m["grid"], m["patch"]).numpy()
                         for a in only]) * (gh * gw)  # fmt: skip

    for viewport in ({"width": 1280, "height": 900}, {"width": 390, "height": 844}):
        extra = {"has_touch": True, "is_mobile": True} if viewport["width"] == 390 else {}
        with opened(browser, base_url, "06-multi-head-attention/", viewport=viewport,
                    **extra) as page:  # fmt: skip
            root = live(page, "ch06/heads")
            tab = root.get_by_role("tab", name="trained model (Chapters 9, 10)")
            if extra:
                tab.tap()
            else:
                tab.click()
            page.wait_for_selector(".vb2-attx-grid canvas.vb2-attx-canvas", timeout=15000)
            maps_shown(page, 0, grid=True)
            assert tab.get_attribute("aria-selected") == "true"
            assert not root.locator(".vb2-heads").is_visible()
            assert_fits(page, root)
            view = root.locator(".vb2-attx")
            cv = root.locator("canvas.vb2-attx-canvas")
            box = cv.bounding_box()
            img = min(2 * min(math.floor((box["width"] - 52 - 6 * (H - 1)) / H), 150), 200)
            r, c = 3, 6
            if extra:
                cv.tap(position={"x": (c + 0.5) * img / gw, "y": (r + 0.5) * img / gh})
            else:
                page.mouse.move(box["x"] + (c + 0.5) * img / gw, box["y"] + (r + 0.5) * img / gh)
            s = assert_row_is_the_models(view, data, exact)
            q = 1 + r * gw + c
            assert s["q"] == q
            got = per_layer(say(root))
            rows = [[sent_row(data, 0, ly, "head", hd, q) for hd in range(H)] for ly in range(L)]
            np.testing.assert_allclose(got[..., 0], [[r[q] for r in lr] for lr in rows], atol=5e-4)
            np.testing.assert_allclose(got[..., 1], distances(q), atol=0.05 + 1e-9)
            height = root.bounding_box()["height"]
            for r2, c2 in ((0, 0), (gh - 1, 2)):  # another patch: new numbers, nothing moves
                spot = {"x": (c2 + 0.5) * img / gw, "y": (r2 + 0.5) * img / gh}
                if extra:
                    cv.tap(position=spot)
                else:
                    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
                assert shown(view)["q"] == 1 + r2 * gw + c2
                assert root.bounding_box()["height"] == height
            page.mouse.move(box["x"] + (c + 0.5) * img / gw, box["y"] + (r + 0.5) * img / gh)
            if extra:
                cv.tap(position={"x": (c + 0.5) * img / gw, "y": (r + 0.5) * img / gh})
            if not extra:
                before = cv.screenshot()
                cv.focus()
                page.keyboard.press("ArrowLeft")
                assert shown(view)["q"] == q - 1
                page.keyboard.press("Enter")
                assert shown(view)["q"] == 0 and "the class token's row" in say(root)
                assert cv.screenshot() != before
                tab.focus()  # back to the first tab with the arrow keys (tablist pattern)
                page.keyboard.press("ArrowLeft")
                first = root.get_by_role("tab", name="four hand-set heads")
                assert first.get_attribute("aria-selected") == "true"
                assert first.evaluate("el => el === document.activeElement")
                assert tab.get_attribute("tabindex") == "-1"
                assert root.locator(".vb2-heads").is_visible()
                assert "Query patch" in say(root)


#: A request for one image's maps: the part of the explorer data named in meta.maps.
MAPS_FILE = re.compile(r"/ch10/attention-explorer\.(image-\d+)\.explorer\.bin$")
READ_TO_THE_END_BYTES = 600 * 1024


def test_attention_explorer_downloads_an_images_maps_when_it_is_picked(browser, base_url, attx):
    """On a phone, as a reader's browser lays the page out (``browser.raw``), Chapter 10 read
    to its end transfers at most 600 KB in all, explorer data included, and of the images'
    maps only the first image's, which the first view shows. Picking image 5 downloads its
    maps once (picked again, it is drawn from what was kept), and the drawing changes."""
    data, _ = attx
    maps = data.meta["maps"]
    context = browser.raw.new_context(**PHONE, service_workers="block")
    page = context.new_page()
    transfers = Transfers(page)
    wanted: list[str] = []  # the maps files asked for, in order
    page.on("request", lambda r: wanted.extend(MAPS_FILE.findall(r.url)))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(base_url + CH10, wait_until="load", timeout=30000)
        scroll_to_the_end(page, transfers)
        print(f"\n/{CH10} read to the end at 390 px: {transfers.total:,} bytes")
        assert transfers.total <= READ_TO_THE_END_BYTES, (
            f"{transfers.total:,} bytes read to the end; largest: {transfers.largest()}"
        )
        assert wanted == [maps[0]]
        root = page.locator(f'.vb-explorer[data-explorer="{ATTX}"]')
        root.scroll_into_view_if_needed()
        view = root.locator(".vb2-attx")
        cv = root.locator("canvas.vb2-attx-canvas")
        maps_shown(page, 0)
        before = cv.screenshot()
        root.locator('button[data-image="4"]').tap()
        maps_shown(page, 4)
        assert wanted == [maps[0], maps[4]]
        assert cv.screenshot() != before
        assert "Image 5" in say(root)
        for k in (0, 4):  # both kept: shown again without a download
            root.locator(f'button[data-image="{k}"]').tap()
            assert view.get_attribute("data-image") == str(k)  # at once
            maps_shown(page, k)
        assert wanted == [maps[0], maps[4]]
        assert not errors, errors
    finally:
        context.close()


def test_attention_explorer_says_while_maps_download_and_when_they_fail(browser, base_url, attx):
    """While an image's maps download, the view keeps the drawing it has and its live region
    says what it waits for; a download that fails is said (the first image's leaves a
    placeholder), and picking the image again tries again."""
    data, exact = attx
    maps = data.meta["maps"]
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    first = f"**/ch10/attention-explorer.{maps[0]}.explorer.bin"
    fifth = f"**/ch10/attention-explorer.{maps[4]}.explorer.bin"
    try:
        page.route(first, lambda route: route.abort())
        page.goto(base_url + CH10, wait_until="load", timeout=30000)
        root = live(page, ATTX)
        view = root.locator(".vb2-attx")
        live_words = root.locator(".vb-live").filter(has_text="did not download")
        live_words.wait_for(state="attached", timeout=15000)
        assert "pick image 1 again" in say(root), say(root)
        assert view.get_attribute("data-row") is None  # no map drawn from no data
        page.unroute(first)
        root.locator('button[data-image="0"]').click()
        maps_shown(page, 0)
        assert_row_is_the_models(view, data, exact)
        # image 5's maps held on their way, then refused
        held = []
        page.route(fifth, lambda route: held.append(route))
        row = view.get_attribute("data-row")
        root.locator('button[data-image="4"]').click()
        page.wait_for_selector('.vb2-attx[data-loading="4"]')
        assert "Loading the attention maps of image 5" in say(root), say(root)
        assert root.locator('button[data-image="4"]').get_attribute("aria-busy") == "true"
        assert (view.get_attribute("data-image"), view.get_attribute("data-row")) == ("0", row)
        for _ in range(100):
            if held:
                break
            page.wait_for_timeout(50)
        held[0].abort()
        page.wait_for_selector(".vb2-attx:not([data-loading])")
        words = say(root)
        assert "did not download" in words and "pick image 5 again to retry" in words, words
        assert (view.get_attribute("data-image"), view.get_attribute("data-row")) == ("0", row)
        page.unroute(fifth)
        root.locator('button[data-image="4"]').click()
        maps_shown(page, 4)
        assert_row_is_the_models(view, data, exact)
        assert not errors, errors
    finally:
        context.close()
