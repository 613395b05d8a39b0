"""Swipes and rollback through HTTP: a superseded reply's table edits, state commits and story settlements are
taken back as new revisions, and a select (swiping back) writes them again (docs/roleplay.md)."""

from __future__ import annotations

import pytest

from tests.support.api import assert_envelope

from .roleplay_support import (
    CONV,
    memory,
    reply,
    reply_id,
    settled_turn,
    setup,
    turn,
    user_message_id,
    write_state_and_story,
)

# Transactional: the commit hooks' work (the table edits) is sent after each commit, as in production: run
# in-process on the embedded default, by the real Celery worker on PostgreSQL + Redis (the fixture below).
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


def _events(api, type: str) -> list[dict]:
    return api.get(f"{CONV}/events?type={type}&limit=200").json()["results"]


def swipe_story(api) -> None:
    setup(api)
    first = turn(api, "Where are we?", reply("harbour", "Ann"))
    write_state_and_story(api, first["turnId"], 1, "Ann reached the harbour.")
    before = memory(api)

    a = turn(api, "Go on.", reply("lighthouse", "Eli"))
    write_state_and_story(api, a["turnId"], 2, "Eli climbed the lighthouse.")
    after_a = memory(api)
    assert after_a != before and after_a["tables"][0][-1][2] == "lighthouse"

    # regenerate: A's writes are taken back before B's own apply
    b = turn(api, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    now = memory(api)
    assert (now["state"], now["story"]) == (before["state"], before["story"])
    table_id = api.get(f"{CONV}/tables").json()["tables"][0]["id"]
    versions = api.get(f"{CONV}/tables/{table_id}/versions").json()["results"]
    assert [v["cause"] for v in versions[:2]] == ["turn", "rollback"]  # back to before A, then B's own edit
    assert versions[1]["rows"] == before["tables"][0]
    assert now["tables"][0] == [*before["tables"][0], ["day 1", "night", "cellar", "Max"]]
    rolled = api.get(f"{CONV}/turns/{a['turnId']}").json()
    assert rolled["status"] == "superseded" and rolled["rollback"]["status"] == "ok", rolled["rollback"]
    assert set(rolled["rollback"]["kinds"]) >= {"tables", "state", "story"}
    assert rolled["rollback"]["byTurnId"] == b["turnId"] and rolled["rollback"]["cause"] == "regenerate"
    write_state_and_story(api, b["turnId"], 3, "Max hid in the cellar.")
    after_b = memory(api)
    assert after_b["tables"][0][-1][2:] == ["cellar", "Max"]
    assert after_b["story"]["worldFacts"] == {"trust": 3} and after_b["state"][1][0]["value"] == {"trust": 3}
    assert "Eli climbed the lighthouse." not in str(after_b["story"]["events"])

    # swipe back to A: B's writes undone, A's written again
    selected = api.post(f"{CONV}/turns/{a['turnId']}/select", {})
    assert selected.status_code == 200, selected.json()
    body = selected.json()
    assert body["changed"] and body["status"] == "committed" and body["rollback"]["status"] == "ok", body
    assert [d["turnId"] for d in body["displaced"]] == [b["turnId"]]
    assert memory(api) == after_a
    visible = [m for m in api.get(f"{CONV}/messages?limit=200").json()["results"] if not m["superseded"]]
    assert {m["turnId"] for m in visible} == {first["turnId"], a["turnId"]}

    # and forward again to B
    assert api.post(f"{CONV}/turns/{b['turnId']}/select", {}).status_code == 200
    assert memory(api) == after_b
    assert api.post(f"{CONV}/turns/{b['turnId']}/select", {}).json()["changed"] is False

    # history is kept: every step is a new revision, with its cause
    causes = [v["cause"] for v in api.get(f"{CONV}/tables/{table_id}/versions").json()["results"]]
    assert causes[:6] == ["reapply", "rollback", "reapply", "rollback", "turn", "rollback"], causes
    state_causes = [r["cause"] for r in api.get(f"{CONV}/state/revisions").json()["results"]]
    assert state_causes[:4] == ["reapply", "rollback", "reapply", "rollback"], state_causes
    for type in ("table.rolled_back", "state.rolled_back", "story.rolled_back", "table.reapplied", "story.reapplied"):
        assert _events(api, type), type
    assert _events(api, "turn.selected")


def test_regenerate_and_swipe_back(alice):
    swipe_story(alice)


def test_a_rollback_after_a_manual_edit_is_reported_and_not_forced(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    write_state_and_story(alice, a["turnId"], 2, "Eli climbed the lighthouse.")
    table = alice.get(f"{CONV}/tables").json()["tables"][0]
    manual = [["day 2", "dawn", "beach", "Operator"]]
    edited = alice.put(f"{CONV}/tables/{table['id']}", {"expectedVersion": table["version"], "rows": manual})
    assert edited.status_code == 200, edited.json()
    state = alice.get(f"{CONV}/state").json()
    later = {"scenarioId": "rp", "baseRevision": state["revision"], "text": "a note by hand"}
    assert alice.post(f"{CONV}/state/candidates", later).status_code == 201

    turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    rollback = alice.get(f"{CONV}/turns/{a['turnId']}").json()["rollback"]
    assert rollback["status"] == "conflict"
    assert rollback["kinds"]["tables"]["status"] == "conflict"
    assert rollback["kinds"]["state"]["status"] == "conflict"
    assert rollback["kinds"]["story"]["status"] == "rolled_back"  # nobody settled after A: undone
    # the manual edits stay; the new reply's edit applies on top of them
    rows = alice.get(f"{CONV}/tables").json()["tables"][0]["rows"]
    assert rows[0] == manual[0] and rows[-1][2:] == ["cellar", "Max"]
    assert alice.get(f"{CONV}/state").json()["text"] == "a note by hand"
    conflicts = _events(alice, "table.rollback_conflict")
    assert conflicts and conflicts[0]["turnId"] == a["turnId"]
    assert _events(alice, "state.rollback_conflict")


def test_editing_a_reply_rolls_its_writes_back_and_applies_the_edited_reply(alice):
    setup(alice)
    before = memory(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    write_state_and_story(alice, a["turnId"], 2, "Eli climbed the lighthouse.")
    response = alice.post(f"{CONV}/messages/{reply_id(alice, a['turnId'])}/edit", {"content": reply("attic", "Zoe")})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["turnId"] != a["turnId"] and body["status"] == "committed" and body["rollback"]["cause"] == "edit"
    settled_turn(alice, body["turnId"])
    now = memory(alice)
    assert now["tables"][0] == [["day 1", "night", "attic", "Zoe"]]
    assert now["state"] == before["state"] and now["story"] == before["story"]
    messages = alice.get(f"{CONV}/messages?limit=200").json()["results"]
    assert [m["content"] for m in messages if not m["superseded"]] == ["Go on.", reply("attic", "Zoe")]
    assert [m["id"] for m in messages if m["turnId"] == body["turnId"]] == body["messageIds"]
    # the edited message is no longer current
    stale = alice.post(f"{CONV}/messages/{reply_id(alice, a['turnId'])}/edit", {"content": "again"})
    assert_envelope(stale, 409, "message_superseded")


def test_editing_the_user_message_keeps_the_reply_and_reapplies_its_edits(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    response = alice.post(f"{CONV}/messages/{user_message_id(alice, a['turnId'])}/edit", {"content": "Go north."})
    assert response.status_code == 200, response.json()
    new = settled_turn(alice, response.json()["turnId"])
    assert new["round"] == a["round"]
    assert memory(alice)["tables"][0] == [["day 1", "night", "lighthouse", "Eli"]]
    table_id = alice.get(f"{CONV}/tables").json()["tables"][0]["id"]
    versions = alice.get(f"{CONV}/tables/{table_id}/versions").json()["results"]
    assert [v["cause"] for v in versions[:3]] == ["turn", "rollback", "turn"]


def test_an_edit_with_the_same_content_changes_nothing_and_answers_the_turns_two_messages(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    ids = [user_message_id(alice, a["turnId"]), reply_id(alice, a["turnId"])]
    for message, content in zip(ids, ["Go on.", reply("lighthouse", "Eli")], strict=True):
        same = alice.post(f"{CONV}/messages/{message}/edit", {"content": content})
        assert same.status_code == 200, same.json()
        body = same.json()
        assert (body["turnId"], body["changed"], body["rollback"]) == (a["turnId"], False, None)
        assert body["messageIds"] == ids


def test_deleting_a_reply_rolls_its_writes_back_and_keeps_the_user_message(alice):
    setup(alice)
    before = memory(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    write_state_and_story(alice, a["turnId"], 2, "Eli climbed the lighthouse.")
    response = alice.delete(f"{CONV}/messages/{reply_id(alice, a['turnId'])}")
    assert response.status_code == 200, response.json()
    assert response.json()["rollback"]["cause"] == "delete" and response.json()["status"] == "superseded"
    assert memory(alice) == {**before, "tables": [[], []]}  # the tables exist now, empty as before the reply
    messages = alice.get(f"{CONV}/messages?limit=200").json()["results"]
    assert [(m["role"], m["deleted"], m["superseded"]) for m in messages] == [
        ("user", False, False),
        ("assistant", True, True),
    ]
    assert_envelope(alice.post(f"{CONV}/turns/{a['turnId']}/select", {}), 409, "turn_not_selectable")


def test_a_user_message_whose_reply_was_deleted_cannot_be_edited_and_nothing_changes(alice):
    """Its turn has no reply left: an edit would bring the deleted one back (or leave a round without one)."""
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    user_id = user_message_id(alice, a["turnId"])
    assert alice.delete(f"{CONV}/messages/{reply_id(alice, a['turnId'])}").status_code == 200
    before = (alice.get(f"{CONV}/messages?limit=200").json(), alice.get(f"{CONV}/turns/{a['turnId']}").json())
    refused = alice.post(f"{CONV}/messages/{user_id}/edit", {"content": "Go north."})
    assert_envelope(refused, 409, "message_superseded")
    assert refused.json()["error"]["details"] == {"messageId": user_id, "turnId": a["turnId"]}
    after = (alice.get(f"{CONV}/messages?limit=200").json(), alice.get(f"{CONV}/turns/{a['turnId']}").json())
    assert after == before and after[1]["rollback"]["cause"] == "delete"  # the delete's record is kept


def test_a_regeneration_is_prompted_with_the_state_and_story_as_the_rollback_will_leave_them(alice):
    """Nothing derived from the reply being replaced reaches the prompt of its replacement (swipes are not canon)."""
    setup(alice)
    first = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    write_state_and_story(alice, first["turnId"], 1, "Eli lit the lamp.")
    second = turn(alice, "And then?", reply("stairs", "Eli"))
    write_state_and_story(alice, second["turnId"], 7, "Eli trusted the keeper.")
    prepared = alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "And then?",
                                             "replacesTurnId": second["turnId"]})  # fmt: skip
    assert prepared.status_code == 201, prepared.json()
    prompt, sources = prepared.json()["prompt"], {s["id"]: s for s in prepared.json()["sources"]}
    assert 'keeper: {"trust": 1}' in prompt and "Eli lit the lamp." in prompt, prompt  # the first reply's stay
    assert '"trust": 7' not in prompt and "Eli trusted the keeper." not in prompt, prompt
    assert sources["st"]["details"]["asBeforeReplacedReply"] is True
    plain = alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "Next."}).json()
    assert 'keeper: {"trust": 7}' in plain["prompt"] and "asBeforeReplacedReply" not in plain["sources"][0]["details"]


def test_deleting_the_user_message_removes_the_round(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    response = alice.delete(f"{CONV}/messages/{user_message_id(alice, a['turnId'])}")
    assert response.status_code == 200, response.json()
    assert len(response.json()["messageIds"]) == 2
    assert memory(alice)["tables"][0] == []
    messages = alice.get(f"{CONV}/messages?limit=200").json()["results"]
    assert all(m["deleted"] and m["superseded"] for m in messages)
    assert_envelope(alice.delete(f"{CONV}/messages/{user_message_id(alice, a['turnId'])}"), 409, "message_superseded")


def test_a_state_candidate_for_a_superseded_or_unknown_turn_is_refused(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    revision = alice.get(f"{CONV}/state").json()["revision"]
    body = {"scenarioId": "rp", "baseRevision": revision, "text": "x"}
    assert_envelope(alice.post(f"{CONV}/state/candidates", {**body, "turnId": a["turnId"]}), 409, "turn_superseded")
    error = assert_envelope(alice.post(f"{CONV}/state/candidates", {**body, "turnId": 999999}), 422)
    assert error["details"]["path"] == "turnId"
    assert_envelope(alice.post(f"{CONV}/state/candidates", {**body, "turnId": "1"}), 422)
    assert alice.get(f"{CONV}/state").json()["revision"] == revision


def test_bad_input_is_4xx_with_the_envelope_and_changes_nothing(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    message = reply_id(alice, a["turnId"])
    before = memory(alice)
    assert_envelope(alice.post(f"{CONV}/messages/{message}/edit", {"content": 5}), 400, "invalid_request")
    assert_envelope(alice.post(f"{CONV}/messages/{message}/edit", {}), 400, "invalid_request")
    assert_envelope(alice.post(f"{CONV}/messages/{message}/edit", {"content": "x", "role": "user"}), 400)
    assert_envelope(alice.post(f"{CONV}/turns/{a['turnId']}/select", {"force": True}), 400, "invalid_request")
    for body in ("[]", "null", '"x"'):  # any other body than {} (leaving it out is {})
        sent = alice.client.generic("POST", f"{CONV}/turns/{a['turnId']}/select", body, content_type="application/json")
        assert_envelope(sent, 400, "invalid_request")
    left_out = alice.client.generic("POST", f"{CONV}/turns/{a['turnId']}/select", "", content_type="application/json")
    assert left_out.status_code == 200 and left_out.json()["changed"] is False  # the current reply: nothing to do
    assert_envelope(alice.post(f"{CONV}/messages/999999/edit", {"content": "x"}), 404, "not_found")
    assert_envelope(alice.delete(f"{CONV}/messages/999999"), 404, "not_found")
    assert_envelope(alice.post(f"{CONV}/turns/999999/select", {}), 404, "not_found")
    prepared = alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "hm"}).json()
    assert_envelope(alice.post(f"{CONV}/turns/{prepared['turnId']}/select", {}), 409, "turn_not_selectable")
    assert memory(alice) == before
    assert alice.get(f"{CONV}/turns/{a['turnId']}").json()["status"] == "committed"


def test_another_product_gets_404_and_changes_nothing(alice, bob):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    b = turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    message = reply_id(alice, b["turnId"])
    after = memory(alice)
    assert_envelope(bob.post(f"{CONV}/turns/{a['turnId']}/select", {}), 404, "not_found")
    assert_envelope(bob.post(f"{CONV}/messages/{message}/edit", {"content": "x"}), 404, "not_found")
    assert_envelope(bob.delete(f"{CONV}/messages/{message}"), 404, "not_found")
    assert memory(alice) == after
    assert alice.get(f"{CONV}/turns/{b['turnId']}").json()["status"] == "committed"


def diary_scenario(api, *, rounds: int) -> None:
    """A diary every `rounds` rounds, recalled into the prompt."""
    scenario = {
        "id": "rp",
        "name": "Lighthouse",
        "memorySources": [{"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"}],
        "template": "{{compassMemory}}\nUser: {{userMessage}}",
        "diary": {"minRounds": rounds, "freeRoundsPerDiary": rounds},
    }
    assert api.post("/v1/scenarios", scenario).status_code == 201


def test_a_diary_covering_a_superseded_reply_is_rolled_back_rewritten_and_brought_back_by_a_select(alice):
    diary_scenario(alice, rounds=2)
    turn(alice, "Where are we?", "Ann reached the harbour.")
    a = turn(alice, "Go on.", "Eli climbed the lighthouse.")
    [first] = alice.get(f"{CONV}/diaries").json()["results"]
    assert "lighthouse" in first["summary"]
    # the regeneration's prompt: no diary of the round being regenerated (the rollback will take it back)
    asked = alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "Go on.", "replacesTurnId": a["turnId"]})
    assert "lighthouse" not in asked.json()["prompt"], asked.json()["prompt"]
    assert asked.json()["sources"][0]["details"]["asBeforeReplacedReply"] is True
    assert "lighthouse" in alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "Next."}).json()["prompt"]

    b = turn(alice, "Go on.", "Max hid in the cellar.", replacesTurnId=a["turnId"])
    assert _events(alice, "diary.rolled_back")[0]["turnId"] == a["turnId"]
    [rewritten] = alice.get(f"{CONV}/diaries").json()["results"]
    assert rewritten["id"] != first["id"] and "cellar" in rewritten["summary"]
    assert "lighthouse" not in rewritten["summary"]

    selected = alice.post(f"{CONV}/turns/{a['turnId']}/select", {}).json()
    assert selected["rollback"]["kinds"]["diaries"]["status"] == "reapplied", selected
    assert [d["id"] for d in alice.get(f"{CONV}/diaries").json()["results"]] == [first["id"]]
    assert selected["displaced"][0]["rollback"]["kinds"]["diaries"]["entryIds"] == [rewritten["id"]]
    assert b["turnId"] == selected["displaced"][0]["turnId"]


def test_the_console_timeline_shows_the_rollback(alice, admin_client):
    from django.urls import reverse

    from memories.models import Conversation

    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    write_state_and_story(alice, a["turnId"], 2, "Eli climbed the lighthouse.")
    turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    conversation = Conversation.objects.get(user_id="u1", conversation_id="c1")
    page = admin_client.get(reverse("console:conversation-timeline", args=[conversation.pk])).content.decode()
    assert 'class="mh-rollback mh-status-ok" title="regenerate">rolled_back</span>' in page
    assert page.count("rollback · turn:") == 2  # the table version and the state revision that undid turn A's


def test_an_edited_middle_round_is_summarised_again_with_the_rounds_after_it(alice):
    """The plan's bookmark is one round: the entries after the edited round go back too, and are planned again."""
    diary_scenario(alice, rounds=1)
    turns = [turn(alice, f"Round {n}.", f"Ann talks about topic{n}.") for n in (1, 2, 3)]
    diaries = lambda: alice.get(f"{CONV}/diaries").json()["results"]  # noqa: E731
    assert sorted((d["roundFrom"], d["roundTo"]) for d in diaries()) == [(1, 1), (2, 2), (3, 3)]
    later = sorted(d["id"] for d in diaries() if d["roundTo"] >= 2)
    edited = alice.post(
        f"{CONV}/messages/{reply_id(alice, turns[1]['turnId'])}/edit", {"content": "Ann talks about okapis."}
    )
    assert edited.status_code == 200, edited.json()
    assert sorted(edited.json()["rollback"]["kinds"]["diaries"]["entryIds"]) == later
    settled_turn(alice, edited.json()["turnId"])
    turn(alice, "Round 4.", "Ann talks about topic4.")
    covered = [r for d in diaries() for r in range(d["roundFrom"], d["roundTo"] + 1)]
    assert sorted(covered) == [1, 2, 3, 4], diaries()
    text = " ".join(d["summary"] for d in diaries())
    assert "okapis" in text and "topic2" not in text
