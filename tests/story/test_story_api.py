"""Story snapshots through HTTP (issue 11 §3): settlements, anchors, versions, replay, tenancy, the prompt."""

from __future__ import annotations

import pytest

from memories.models import Event
from memories.story.models import StoryVersion
from tests.support.api import assert_envelope

from .support import CONV, SETTLE, STORY, settle, settlement, story_scenario, turn

pytestmark = pytest.mark.django_db

EMPTY = {"version": 0, "anchorMessageId": None, "worldFacts": {}, "events": [], "narrative": {}}


@pytest.fixture
def api(alice):
    story_scenario(alice)
    return alice


def test_a_story_never_settled_is_version_0_and_empty(api):
    assert api.get(STORY).json() == EMPTY
    assert api.get(f"{STORY}/versions").json() == {"results": [], "next": None}


def test_a_settlement_on_a_committed_reply_makes_the_next_version(api):
    first = turn(api)
    body = settlement(
        0,
        first["assistantMessageId"],
        setFacts={"weather": "storm", "door": {"open": True}},
        appendEvents=[{"text": "The door creaked open."}, {"text": "Wind howled in."}],
        narrative={"act": 1, "tension": "rising"},
    )
    response = settle(api, body)
    assert response.status_code == 201, response.json()
    story = response.json()
    anchor = first["assistantMessageId"]
    assert story == {
        "version": 1,
        "anchorMessageId": anchor,
        "worldFacts": {"weather": "storm", "door": {"open": True}},
        "events": [
            {"id": "ev-1", "text": "The door creaked open.", "round": 1, "messageId": anchor},
            {"id": "ev-2", "text": "Wind howled in.", "round": 1, "messageId": anchor},
        ],
        "narrative": {"act": 1, "tension": "rising"},
    }
    assert api.get(STORY).json() == story
    event = Event.objects.get(type="story.settled")
    assert event.turn_id == first["turnId"] and event.details["appendedEvents"] == ["ev-1", "ev-2"]

    second = turn(api, "I step inside.", "Inside, a fire burns.")
    story = settle(
        api, settlement(1, second["assistantMessageId"], setFacts={"fire": "lit"}, unsetFacts=["weather"])
    ).json()
    assert story["version"] == 2 and story["worldFacts"] == {"door": {"open": True}, "fire": "lit"}
    assert story["narrative"] == {"act": 1, "tension": "rising"}  # omitted: kept
    assert [e["id"] for e in story["events"]] == ["ev-1", "ev-2"]
    versions = api.get(f"{STORY}/versions").json()["results"]
    assert [(v["version"], v["cause"], v["rolledBack"]) for v in versions] == [
        (2, "settlement", False),
        (1, "settlement", False),
    ]
    assert versions[0]["changes"]["unsetFacts"] == ["weather"]


def test_a_stale_expected_version_is_409_revision_conflict(api):
    first, second = turn(api), turn(api, "next", "reply two")
    settle(api, settlement(0, first["assistantMessageId"]))
    error = assert_envelope(settle(api, settlement(0, second["assistantMessageId"])), 409, "revision_conflict")
    assert error["details"] == {"currentRevision": 1, "currentVersion": 1}


def anchor_error(api, body: dict) -> dict:
    error = assert_envelope(settle(api, body), 409, "anchor_conflict")
    return error["details"]


def test_an_anchor_not_later_than_the_current_one_is_refused(api):
    first, second = turn(api), turn(api, "next", "reply two")
    settle(api, settlement(0, second["assistantMessageId"]))
    details = anchor_error(api, settlement(1, first["assistantMessageId"]))
    assert details["reason"] == "not_later" and details["currentAnchorMessageId"] == second["assistantMessageId"]
    assert anchor_error(api, settlement(1, second["assistantMessageId"]))["reason"] == "not_later"  # the same one


def test_later_is_by_round_so_the_rounds_after_an_edited_one_can_be_settled_again(api):
    """An edited middle round's reply has the newest id but comes before the rounds after it (docs/story.md)."""
    replies = [turn(api, f"u{n}", f"a{n}")["assistantMessageId"] for n in (1, 2, 3)]
    for version, anchor in enumerate(replies):
        assert (
            settle(api, settlement(version, anchor, appendEvents=[{"text": f"event {version + 1}"}])).status_code == 201
        )
    edited = api.post(f"{CONV}/messages/{replies[1]}/edit", {"content": "a2 edited"})
    assert edited.status_code == 200, edited.json()
    version = api.get(STORY).json()["version"]
    messages = api.get(f"{CONV}/messages", data={"limit": 200}).json()["results"]
    new_reply = next(m["id"] for m in messages if m["content"] == "a2 edited")
    assert new_reply > replies[2]
    assert settle(api, settlement(version, new_reply, appendEvents=[{"text": "event 2 (edited)"}])).status_code == 201
    again = settle(api, settlement(version + 1, replies[2], appendEvents=[{"text": "event 3 again"}]))
    assert again.status_code == 201, again.json()
    assert [e["text"] for e in api.get(STORY).json()["events"]] == ["event 1", "event 2 (edited)", "event 3 again"]
    assert anchor_error(api, settlement(version + 2, new_reply))["reason"] == "not_later"  # round 2 after round 3


def test_a_user_message_or_a_message_of_another_conversation_is_refused(api):
    first = turn(api)
    assert anchor_error(api, settlement(0, first["assistantMessageId"] - 1))["reason"] == "not_assistant"
    other = turn(api, conv="/v1/users/u1/conversations/c2")
    assert anchor_error(api, settlement(0, other["assistantMessageId"]))["reason"] == "not_in_conversation"
    assert anchor_error(api, settlement(0, 999_999))["reason"] == "not_in_conversation"


def test_a_superseded_reply_is_refused(api):
    first = turn(api)
    turn(api, "I open the door.", "The door is locked.", replaces=first["turnId"])
    details = anchor_error(api, settlement(0, first["assistantMessageId"]))
    assert details["reason"] == "superseded" and details["turnId"] == first["turnId"]


def test_a_reply_waiting_for_accept_is_refused_until_accepted(alice):
    story_scenario(alice, commitOn="accepted")
    first = turn(alice)
    assert first["completed"]["status"] == "completed"
    details = anchor_error(alice, settlement(0, first["assistantMessageId"]))
    assert details["reason"] == "uncommitted" and details["turnStatus"] == "completed"
    assert "accept" in assert_envelope(settle(alice, settlement(0, first["assistantMessageId"])), 409)["message"]
    assert alice.post(f"{CONV}/turns/{first['turnId']}/accept", {}).status_code == 200
    assert settle(alice, settlement(0, first["assistantMessageId"])).status_code == 201


def test_refused_settlements_store_nothing(api):
    first = turn(api)
    anchor_error(api, settlement(0, first["assistantMessageId"] - 1))
    assert_envelope(settle(api, settlement(3, first["assistantMessageId"])), 409, "revision_conflict")
    assert api.get(STORY).json() == EMPTY
    assert not StoryVersion.objects.exists() and not Event.objects.filter(type="story.settled").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"anchorMessageId": 1}, "expectedVersion"),
        ({"expectedVersion": 0}, "anchorMessageId"),
        ({"expectedVersion": "0", "anchorMessageId": 1}, "expectedVersion"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "setFacts": []}, "setFacts"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "setFacts": {"big": "x" * 9000}}, "setFacts"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "appendEvents": [{"text": ""}]}, "appendEvents.0.text"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "appendEvents": [{"txt": "a"}]}, "appendEvents.0.txt"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "narrative": "act 1"}, "narrative"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "setFacts": {"a": 1}, "unsetFacts": ["a"]}, "unsetFacts"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "operationId": "a b"}, "operationId"),
        ({"expectedVersion": 0, "anchorMessageId": 1, "mood": "grim"}, "mood"),
    ],
)
def test_malformed_settlements_are_400_naming_the_field(api, body, field):
    error = assert_envelope(settle(api, body), 400, "invalid_request")
    assert field in error["details"]["fields"], error


def test_operation_id_repeats_return_the_first_result(api):
    first, second = turn(api), turn(api, "next", "reply two")
    body = settlement(0, first["assistantMessageId"], appendEvents=[{"text": "once"}], operationId="settle-1")
    original = settle(api, body)
    settle(api, settlement(1, second["assistantMessageId"]))
    again = settle(api, body)  # its expectedVersion is stale now: the stored result is replayed
    assert again.status_code == 201 and again.headers["Operation-Replayed"] == "true"
    assert again.json() == original.json()
    assert StoryVersion.objects.count() == 2
    reused = settle(api, settlement(2, second["assistantMessageId"], operationId="settle-1"))
    assert_envelope(reused, 422, "operation_id_reused")


def test_other_products_never_see_or_touch_the_story(api, bob):
    first = turn(api)
    settle(api, settlement(0, first["assistantMessageId"], setFacts={"secret": "alice"}))
    assert bob.get(STORY).json() == EMPTY
    assert bob.get(f"{STORY}/versions").json()["results"] == []
    # alice's message id is not a message of bob's conversation
    assert assert_envelope(settle(bob, settlement(0, first["assistantMessageId"])), 409)["details"]["reason"] == (
        "not_in_conversation"
    )
    assert api.get(STORY).json()["worldFacts"] == {"secret": "alice"}


def test_the_story_variable_is_in_the_prompt(api):
    empty = turn(api)
    assert empty["prepared"]["variables"]["story"] == ""
    assert empty["prepared"]["sources"][0]["status"] == "empty"
    settle(
        api,
        settlement(
            0,
            empty["assistantMessageId"],
            setFacts={"weather": "storm"},
            appendEvents=[{"text": f"event {i}"} for i in range(12)],
            narrative={"act": 2},
        ),
    )
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "saga", "userMessage": "Go on."}).json()
    text = prepared["variables"]["story"]
    assert text.startswith("World facts:\n- weather: storm\n\nRecent events:\n- (round 1) event 2\n")
    assert "event 1\n" not in text and "(round 1) event 11" in text  # the newest ten events
    assert text.endswith("Narrative:\n- act: 2")
    assert prepared["sources"][0]["version"] == 1 and prepared["sources"][0]["status"] == "ok"


def test_story_is_accepted_by_personalization_only(alice):
    from tests.support.scenarios import refused

    source = [{"id": "story", "agentRef": "story", "variable": "story"}]
    body = {"id": "s", "name": "S", "template": "{{userMessage}}", "memorySources": source}
    for runtime in ("axon_go", "axon_shadow"):
        assert "memorySources[0].variable" in refused(alice, {**body, "memoryRuntime": runtime})
    assert "memorySources[0].agentRef" in refused(alice, {**body, "memorySources": [{**source[0], "agentRef": "x"}]})


def test_unknown_settlement_paths_are_404(api):
    assert_envelope(api.get(SETTLE), 405)
