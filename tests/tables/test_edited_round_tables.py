"""Editing the user message of an earlier round keeps its reply, and so the reply's table edits: where the edit's
rollback of the old turn conflicts (a later round wrote the table), those edits are still in the table and the
new turn does not apply them a second time (docs/roleplay.md "Editing and deleting messages", docs/tables.md)."""

from __future__ import annotations

import pytest

from tests.memories.roleplay_support import CONV, settled_turn, user_message_id
from tests.tables.test_regenerated_tables import complete, edit, prepare, rounds, rows

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


def edit_message(api, message_id: int, content: str) -> dict:
    response = api.post(f"{CONV}/messages/{message_id}/edit", {"content": content})
    assert response.status_code == 200, response.json()
    return settled_turn(api, response.json()["turnId"]) | {"rollback": response.json()["rollback"]}


def table_events(api, turn_id: int) -> list[dict]:
    events = api.get(f"{CONV}/events?limit=200").json()["results"]
    return [e for e in events if e["turnId"] == turn_id and e["type"].startswith("table.")]


def test_editing_an_earlier_user_message_does_not_duplicate_its_rows(alice):
    t1, _ = rounds(alice, edit('insertRow(0, {0: "r1"})'), edit('insertRow(0, {0: "r2"}) insertRow(1, {0: "u2"})'))
    new = edit_message(alice, user_message_id(alice, t1), "u1 typo fixed")
    assert new["rollback"]["kinds"]["tables"]["status"] == "conflict"  # round 2 wrote T after round 1
    assert rows(alice) == [[["r1"], ["r2"]], [["u2"]]]
    (event,) = table_events(alice, new["turnId"])
    assert event["type"] == "table.unchanged" and event["details"]["applied"] == []
    assert [(s["source"], s["tableName"]) for s in event["details"]["skipped"]] == [('insertRow(0, {0: "r1"})', "T")]
    assert "still in the table" in event["details"]["skipped"][0]["reason"]

    # again: the reply's row is still the first turn's, kept through both edits
    newer = edit_message(alice, user_message_id(alice, new["turnId"]), "u1 fixed twice")
    assert rows(alice) == [[["r1"], ["r2"]], [["u2"]]]
    assert [e["type"] for e in table_events(alice, newer["turnId"])] == ["table.unchanged"]

    # swiping back to the first wording changes no table: the rows are that reply's already
    assert alice.post(f"{CONV}/turns/{t1}/select", {}).status_code == 200
    assert rows(alice) == [[["r1"], ["r2"]], [["u2"]]]
    # and the next round sees them with the indices they have
    assert "0,r1\n1,r2\n" in prepare(alice, "u3")["variables"]["memoryTable"]


def test_a_table_the_rollback_restored_gets_the_reply_edits_again(alice):
    """Only the tables that kept the old turn's edits are skipped: U, written by round 1 only, is rolled back and
    written again by the new turn."""
    t1, _ = rounds(alice, edit('insertRow(0, {0: "r1"}) insertRow(1, {0: "u1"})'), edit('insertRow(0, {0: "r2"})'))
    new = edit_message(alice, user_message_id(alice, t1), "u1 typo fixed")
    kinds = new["rollback"]["kinds"]["tables"]
    assert [c["name"] for c in kinds["conflicts"]] == ["T"] and [t["name"] for t in kinds["tables"]] == ["U"]
    assert rows(alice) == [[["r1"], ["r2"]], [["u1"]]]
    (event,) = table_events(alice, new["turnId"])
    assert event["type"] == "table.updated"
    assert [a["tableName"] for a in event["details"]["applied"]] == ["U"]
    assert [s["tableName"] for s in event["details"]["skipped"]] == ["T"]


def test_editing_an_earlier_reply_applies_the_new_reply_on_top_of_the_kept_edits(alice):
    """A changed reply is a regeneration's case (docs/roleplay.md, conflicts): its edits apply on top."""
    t1, _ = rounds(alice, edit('insertRow(0, {0: "r1"})'), edit('insertRow(0, {0: "r2"})'))
    reply = next(
        m["id"]
        for m in alice.get(f"{CONV}/messages?limit=200").json()["results"]
        if m["turnId"] == t1 and m["role"] == "assistant"
    )
    edit_message(alice, reply, edit('updateRow(0, 0, {0: "r1b"})'))
    assert rows(alice) == [[["r1b"], ["r2"]], []]


def test_a_newest_round_user_message_edit_still_rolls_back_and_reapplies(alice):
    _, t2 = rounds(alice, edit('insertRow(0, {0: "r1"})'), edit('insertRow(0, {0: "r2"})'))
    new = edit_message(alice, user_message_id(alice, t2), "u2 fixed")
    assert new["rollback"]["kinds"]["tables"]["status"] == "rolled_back"
    assert rows(alice) == [[["r1"], ["r2"]], []]
    assert [e["type"] for e in table_events(alice, new["turnId"])] == ["table.updated"]
    complete(alice, prepare(alice, "u3")["turnId"], edit("deleteRow(0, 1)"))
    assert rows(alice) == [[["r1"]], []]
