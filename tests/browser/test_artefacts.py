"""Readable artefacts in a real browser: a memory table's diff between versions and a JSON memory diff."""

from __future__ import annotations

import pytest

from tests.console.inspector_data import XSS, seed_conversation


@pytest.fixture
def story(transactional_db):
    return seed_conversation()


def test_a_table_diff_shows_the_changed_cell_from_the_turn_that_changed_it(admin_page, live_server, story, shot):
    page = admin_page
    page.goto(f"{live_server.url}/admin/console/turns/{story.turns[1].pk}/")
    page.click("#table-edits a.mh-table-link")  # the table this turn wrote: v2 → v3
    page.wait_for_selector("#table-diff")

    assert "v3" in page.locator("#table-artefact h2").inner_text()
    assert "compared with v2" in page.locator("#table-artefact h2").inner_text()
    changed = page.locator("#table-diff td.mh-changed")
    assert changed.count() == 1
    assert changed.locator("del").inner_text() == "夜" and changed.locator("ins").inner_text() == "深夜"
    assert page.locator("#diff-summary").inner_text() == "0 added, 0 removed, 1 changed"
    shot(page, "table-diff")

    page.select_option("#version-picker select[name=from]", "1")  # compare with the empty first version
    page.click("#version-picker input[type=submit]")
    page.wait_for_selector("#table-diff tr.mh-added")
    assert page.locator("#table-diff tr.mh-added").count() == 1


def test_a_json_memory_diff_marks_removed_and_added_lines_and_escapes_them(admin_page, live_server, story, shot):
    page = admin_page
    page.goto(f"{live_server.url}/admin/console/conversations/{story.conversation.pk}/timeline/")
    page.click("#round-1 .mh-item-document a")
    page.wait_for_selector("#revision-artefact[data-kind=document]")

    removed = page.locator(".mh-line-removed").all_inner_texts()
    added = page.locator(".mh-line-added").all_inner_texts()
    assert any('"calm"' in line for line in removed) and any("港口" in line for line in removed)
    assert any(XSS.replace('"', '\\"') in line for line in added)
    assert page.evaluate("window.__xss") is None
    shot(page, "json-memory-diff")
