"""The graded quizzes in Chromium: answer by mouse, keyboard and tap; feedback and the
explanation appear after an attempt; answers survive a reload; the
reset button clears them; every typed question takes its answer with a unit, rejects its
traps, and treats an empty box as no answer yet; no console errors and no foreign requests."""

from __future__ import annotations

import pytest
import quizspec
import sitebuild

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHAPTERS = [url for _, url in sitebuild.nav_pages() if url[:2].isdigit()]


def new_page(browser, **args):
    ctx = browser.new_context(
        **({"viewport": {"width": 1280, "height": 900}, "service_workers": "block"} | args)
    )
    page = ctx.new_page()
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.requests = []
    ctx.on("request", lambda r: page.requests.append(r.url))
    return ctx, page


def check_clean(page, base_url):
    assert not page.errors, page.errors
    foreign = [u for u in page.requests if not u.startswith(base_url) and not u.startswith("data:")]
    assert not foreign, foreign


@pytest.mark.parametrize("url", CHAPTERS)
def test_every_chapter_quiz_is_graded(browser, base_url, url):
    ctx, page = new_page(browser)
    try:
        page.goto(base_url + url, wait_until="load")
        page.wait_for_selector(".vb2-quiz-form", timeout=15000)
        n_blocks = page.locator("article details.question").count()
        assert page.locator(".vb2-quiz-form").count() == n_blocks >= 5
        assert page.locator(".vb2-quiz-explanation:not([hidden])").count() == 0
        check_clean(page, base_url)
    finally:
        ctx.close()


def test_answer_feedback_persistence_and_reset(browser, base_url):
    url = base_url + "05-self-attention/"
    ctx, page = new_page(browser)
    try:
        page.goto(url, wait_until="load")
        first = page.locator("details.vb2-quiz").nth(0)
        first.scroll_into_view_if_needed()
        # a wrong answer by mouse: feedback, the right option marked, the explanation shown
        first.locator(".vb2-quiz-option").nth(1).click()
        first.get_by_role("button", name="Check").click()
        assert first.locator(".vb2-quiz-feedback").inner_text().startswith("Not quite")
        assert first.locator(".vb2-is-right").count() == 1
        assert first.locator(".vb2-quiz-explanation").is_visible()
        # a right answer by keyboard on question 2
        second = page.locator("details.vb2-quiz").nth(1)
        second.locator("input[type=radio]").nth(0).focus()
        page.keyboard.press("ArrowDown")  # moves to option 2, the right one
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        assert second.locator(".vb2-quiz-feedback").inner_text() == "Right."
        assert "1 of 5 right, 2 answered" in page.locator(".vb2-quiz-score").inner_text()
        # kept across a reload
        page.reload(wait_until="load")
        page.wait_for_selector(".vb2-quiz-form")
        assert "1 of 5 right, 2 answered" in page.locator(".vb2-quiz-score").inner_text()
        assert page.locator(".vb2-quiz-explanation:not([hidden])").count() == 2
        # reset
        page.get_by_role("button", name="Reset my answers").click()
        assert page.locator(".vb2-quiz-explanation:not([hidden])").count() == 0
        assert "0 of 5 right, 0 answered" in page.locator(".vb2-quiz-score").inner_text()
        check_clean(page, base_url)
    finally:
        ctx.close()


def test_typed_number_and_tap_at_phone_width(browser, base_url):
    ctx, page = new_page(browser, viewport={"width": 390, "height": 844}, has_touch=True,
                         is_mobile=True)  # fmt: skip
    try:
        page.goto(base_url + "02-patches/", wait_until="load")
        first = page.locator("details.vb2-quiz").nth(0)
        first.scroll_into_view_if_needed()
        box = first.locator(".vb2-quiz-input")
        box.tap()
        box.fill("12")
        first.get_by_role("button", name="Check").tap()
        assert first.locator(".vb2-quiz-feedback").inner_text().startswith("Not quite")
        expected = first.locator(".vb2-quiz-feedback").inner_text().split("answer is ")[1]
        box.fill(expected.rstrip("."))
        first.get_by_role("button", name="Check").tap()
        assert first.locator(".vb2-quiz-feedback").inner_text() == "Right."
        third = page.locator("details.vb2-quiz").nth(2)
        third.locator(".vb2-quiz-option").nth(2).tap()
        third.get_by_role("button", name="Check").tap()
        assert third.locator(".vb2-quiz-feedback").inner_text() == "Right."
        check_clean(page, base_url)
    finally:
        ctx.close()


@pytest.mark.parametrize(
    "q", quizspec.typed_questions(), ids=lambda q: f"{q['chapter'][:2]}-q{q['title'].split('.')[0]}"
)
def test_typed_question_in_the_page(browser, base_url, q):
    """Empty: asked for an answer, nothing revealed, nothing counted. A trap: "Not quite",
    with the answer and the explanation. The answer with its unit: "Right"."""
    ctx, page = new_page(browser)
    try:
        page.goto(base_url + sitebuild.page_url(q["chapter"] + ".md"), wait_until="load")
        page.wait_for_selector(".vb2-quiz-form", timeout=15000)
        n = int(q["title"].split(".")[0])
        block = page.locator("details.vb2-quiz").nth(n - 1)
        assert block.locator("summary").inner_text().startswith(f"{n}.")
        block.scroll_into_view_if_needed()
        box, check = block.locator(".vb2-quiz-input"), block.get_by_role("button", name="Check")
        feedback, explanation = (
            block.locator(".vb2-quiz-feedback"),
            block.locator(".vb2-quiz-explanation"),
        )
        score = page.locator(".vb2-quiz-score")
        before = score.inner_text()
        check.click()
        assert feedback.inner_text() == "Type your answer first."
        assert not explanation.is_visible()
        assert score.inner_text() == before and " 0 answered" in before
        box.fill(quizspec.traps(q)[0])
        check.click()
        answer = q["spec"]
        assert feedback.inner_text() == f"Not quite: the answer is {answer}."
        assert explanation.is_visible()
        box.fill(f"{answer.replace(',', '')} {q['units']}")
        check.click()
        assert feedback.inner_text() == "Right."
        assert "1 of" in score.inner_text() and "1 answered" in score.inner_text()
        check_clean(page, base_url)
    finally:
        ctx.close()
