"""The conversation timeline in a real browser: rounds in order, superseded messages struck through, links."""

from __future__ import annotations

import pytest

from tests.console.inspector_data import seed_conversation


@pytest.fixture
def story(transactional_db):
    return seed_conversation()


def test_the_timeline_shows_the_rounds_and_links_each_item_to_its_page(admin_page, live_server, story, shot):
    page = admin_page
    page.goto(f"{live_server.url}/admin/console/turns/{story.turns[0].pk}/")
    page.click("#timeline-link")
    page.wait_for_selector("#timeline")

    rounds = page.locator("section.mh-round").evaluate_all("els => els.map(e => +e.dataset.round)")
    assert rounds == [0, 1, 2, 3]
    kinds = lambda n: page.locator(f"#round-{n} .mh-item").evaluate_all("els => els.map(e => e.dataset.kind)")  # noqa: E731
    assert {"message", "turn", "table", "document", "state"} <= set(kinds(1))
    assert {"message", "turn", "table", "diary", "story"} <= set(kinds(2))
    # round 3 was regenerated: the first reply and its user message are struck through, the new ones are not
    assert page.locator("#round-3 .mh-item-message s").count() == 2
    assert page.locator("#round-3 .mh-item-message a:not(.mh-superseded)").count() == 2
    assert page.locator("#round-3 .mh-turn-link").count() == 2
    assert page.evaluate("window.__xss") is None
    shot(page, "conversation-timeline")

    page.click("#round-2 .mh-turn-link")  # each item links to its page
    page.wait_for_selector(f"#turn-inspector[data-turn='{story.turns[1].pk}']")
    page.go_back()
    page.click("#round-2 .mh-item-diary a")
    assert "Rounds 1–2" in page.locator("#diary-artefact h2").inner_text()
    assert page.locator("#diary-summary").inner_text().strip()
