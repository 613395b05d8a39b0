"""The turn inspector in a real browser: from the admin's turn list to what the model saw and what followed."""

from __future__ import annotations

import pytest

from tests.browser.support import SCREENSHOTS
from tests.console.inspector_data import TEMPLATE, seed_conversation


@pytest.fixture
def story(transactional_db):
    return seed_conversation()


def test_the_inspector_highlights_each_variable_span_of_the_exact_prompt(admin_page, live_server, story, shot):
    page, turn = admin_page, story.turns[1]  # round 2: state, table update + a refused call, diary, story
    page.goto(f"{live_server.url}/admin/memories/turn/")
    page.click(f"a.mh-inspect[data-turn='{turn.pk}']")  # one click from the list
    page.wait_for_selector("#turn-inspector")

    marks = page.locator("#prompt-text mark.mh-var")
    names = marks.evaluate_all("els => els.map(e => e.dataset.variable)")
    assert names == ["jsonMemory", "memoryTable", "compassMemory", "conversationState", "story", "userMessage"]
    assert TEMPLATE.count("{{") == len(names)
    # Each highlighted value is exactly the stored prompt's characters at its recorded offsets, and the
    # literal text plus the values (labels left out) is the stored prompt itself.
    spans = marks.evaluate_all(
        "els => els.map(e => [+e.dataset.start, +e.dataset.end, e.querySelector('.mh-value').textContent])"
    )
    for start, end, text in spans:
        assert turn.prompt[start:end] == text
    shown = page.eval_on_selector(
        "#prompt-text",
        "el => [...el.children].map(c => c.classList.contains('mh-var') ? c.querySelector('.mh-value').textContent"
        " : c.textContent).join('')",
    )
    assert shown == turn.prompt
    assert page.locator("mark[data-variable=memoryTable] .mh-label").inner_text() == "memoryTable"
    assert "旧灯塔" in page.locator("mark[data-variable=memoryTable] .mh-value").inner_text()

    # referenced and unreferenced side by side, each with its source's status and revision/version
    assert page.locator("#unreferenced .mh-variable").evaluate_all("els => els.map(e => e.dataset.variable)") == [
        "preferences"
    ]
    assert page.locator("#referenced .mh-variable[data-variable=conversationState]").inner_text().count("revision 1")
    # what happened next: the table update, the refused call with its reason, the diary written
    assert page.locator("#memory-write-status").inner_text() == "done"
    assert "row 7 does not exist" in page.locator("#skipped-edits").inner_text()
    assert "summary_and_diary" in page.locator("#aftermath").inner_text()
    assert "story version 1" in page.locator("#aftermath").inner_text()
    # compare with the previous turn
    assert set(page.locator("#changed-variables").inner_text().split(", ")) >= {"jsonMemory", "userMessage"}
    # user content is text, never markup
    assert page.evaluate("window.__xss") is None
    assert '<img src=x onerror="window.__xss=1">' in page.locator("#user-message").inner_text()
    shot(page, "turn-inspector-full")
    # the README's picture: the first screen (header, the highlighted prompt), not the whole long page
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SCREENSHOTS / "turn-inspector.png"))


def test_the_inspector_of_another_products_turn_is_not_found(admin_page, live_server, story):
    other = seed_conversation("other-app")
    response = admin_page.goto(f"{live_server.url}/admin/console/turns/{other.turns[0].pk}/?product={story.product.pk}")
    assert response.status == 404


def test_from_the_dashboard_to_what_the_model_saw_and_what_followed_in_two_clicks(admin_page, live_server, story):
    page, newest = admin_page, story.turns[-1]
    page.goto(f"{live_server.url}/admin/?product={story.product.pk}")
    page.click("#figures-turns a.figure")  # 1: turns of the last 24 h of this runtime
    page.click(f"a.mh-inspect[data-turn='{newest.pk}']")  # 2: the turn's inspector
    page.wait_for_selector(f"#turn-inspector[data-turn='{newest.pk}']")
    assert page.locator("#prompt-text mark.mh-var").count() == 6
    assert page.locator("#memory-write-status").inner_text() == "done"
    # a regenerated turn links the turn it replaced (whose reply the timeline strikes through)
    assert page.locator(f"#turn-inspector a[href$='/admin/console/turns/{story.turns[2].pk}/']").count() >= 1


def test_the_inspector_in_simplified_chinese(admin_page, live_server, story, shot):
    page = admin_page
    page.goto(f"{live_server.url}/admin/console/turns/{story.turns[1].pk}/")
    with page.expect_navigation():
        page.select_option("#language-switcher select", "zh-hans")  # the admin header's switcher
    assert page.locator("#prompt h2").inner_text() == "模型看到的内容"
    assert page.locator("#compare h2").inner_text() == "与上一轮比较"
    assert page.locator("#prompt-text mark.mh-var").count() == 6
    shot(page, "turn-inspector-zh")


def test_the_turn_lists_inspector_column_is_visible_at_1400_px_in_both_languages(admin_page, live_server, story):
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": 900})
    for language in ("en", "zh-hans"):
        if language != "en":
            with page.expect_navigation():
                page.select_option("#language-switcher select", language)
        page.goto(f"{live_server.url}/admin/memories/turn/")
        link = page.locator(f"a.mh-inspect[data-turn='{story.turns[0].pk}']")
        box = link.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1400, (language, box)
        assert page.evaluate("document.scrollingElement.scrollLeft") == 0
    # in Chinese the columns, the link and the turn states are Chinese (the id is "ID" in both)
    headers = page.locator("#result_list thead th").evaluate_all("els => els.map(e => e.innerText.trim())")
    english = [h for h in headers if h and h != "ID" and h.isascii()]
    assert english == [], headers
    assert link.inner_text() == "检查"
    filters = page.locator("#changelist-filter summary").all_inner_texts()
    assert filters and all(not f.isascii() for f in filters), filters
    statuses = page.locator("#result_list td.field-status").all_inner_texts()
    assert statuses and all(not s.isascii() for s in statuses), statuses
