"""Regenerating a reply rolls back the story settled on it (issue 11 §3), keeping every version."""

from __future__ import annotations

import pytest

from memories.models import Event
from tests.support.api import assert_envelope

from .support import CONV, STORY, settle, settlement, story_scenario, turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(alice):
    story_scenario(alice)
    return alice


def test_regenerating_the_anchor_reply_rolls_back_to_the_newest_valid_version(api):
    first = turn(api, "Knock.", "A guard answers.")
    settle(
        api,
        settlement(
            0, first["assistantMessageId"], setFacts={"guard": "awake"}, appendEvents=[{"text": "A guard answered."}]
        ),
    )
    second = turn(api, "I bribe him.", "He takes the coin.")
    settle(
        api,
        settlement(
            1, second["assistantMessageId"], setFacts={"coin": "spent"}, appendEvents=[{"text": "Bribe taken."}]
        ),
    )
    third = turn(api, "I walk in.", "The hall is dark.")
    settle(api, settlement(2, third["assistantMessageId"], appendEvents=[{"text": "Entered the hall."}]))

    # Regenerate round 3: version 3 was settled on the superseded reply, versions 1-2 stay valid.
    regenerated = turn(api, "I walk in.", "Torches light the hall.", replaces=third["turnId"])
    story = api.get(STORY).json()
    assert story["version"] == 4
    assert story["anchorMessageId"] == second["assistantMessageId"]
    assert story["worldFacts"] == {"guard": "awake", "coin": "spent"}
    assert [e["text"] for e in story["events"]] == ["A guard answered.", "Bribe taken."]
    versions = api.get(f"{STORY}/versions").json()["results"]
    assert [(v["version"], v["cause"], v["restoredFrom"], v["rolledBack"]) for v in versions] == [
        (4, "rollback", 2, False),
        (3, "settlement", None, True),
        (2, "settlement", None, False),
        (1, "settlement", None, False),
    ]
    event = Event.objects.get(type="story.rolled_back")
    assert event.details["rolledBack"] == [3] and event.details["restoredFrom"] == 2
    assert (
        event.details["supersededTurnId"] == third["turnId"] and event.details["regeneratedBy"] == regenerated["turnId"]
    )
    # The old anchor is refused; the regenerated reply settles at the next version.
    assert (
        assert_envelope(settle(api, settlement(4, third["assistantMessageId"])), 409)["details"]["reason"]
        == "superseded"
    )
    ok = settle(api, settlement(4, regenerated["assistantMessageId"], appendEvents=[{"text": "Torchlight."}]))
    assert ok.status_code == 201 and ok.json()["version"] == 5
    assert [e["id"] for e in ok.json()["events"]] == ["ev-1", "ev-2", "ev-4"]  # event ids are never reused


def test_regenerating_the_first_settled_reply_returns_to_the_empty_story(api):
    first = turn(api)
    settle(api, settlement(0, first["assistantMessageId"], setFacts={"door": "open"}, narrative={"act": 1}))
    turn(api, "I open the door.", "The door is stuck.", replaces=first["turnId"])
    assert api.get(STORY).json() == {
        "version": 2,
        "anchorMessageId": None,
        "worldFacts": {},
        "events": [],
        "narrative": {},
    }


def test_regenerating_a_reply_nothing_was_settled_on_changes_nothing(api):
    first = turn(api)
    settle(api, settlement(0, first["assistantMessageId"], setFacts={"door": "open"}))
    second = turn(api, "next", "reply")
    turn(api, "next", "another reply", replaces=second["turnId"])
    assert api.get(STORY).json()["version"] == 1
    assert not Event.objects.filter(type="story.rolled_back").exists()


def test_a_regenerated_reply_is_prompted_without_the_story_of_the_reply_it_replaces(api):
    first = turn(api)
    settle(api, settlement(0, first["assistantMessageId"], setFacts={"door": "open"}))
    second = turn(api, "I enter.", "A dragon sleeps here.")
    settle(api, settlement(1, second["assistantMessageId"], setFacts={"dragon": "asleep"}))
    body = {"scenarioId": "saga", "userMessage": "I enter.", "replacesTurnId": second["turnId"]}
    prepared = api.post(f"{CONV}/turns", body).json()
    assert "door: open" in prepared["variables"]["story"] and "dragon" not in prepared["variables"]["story"]
    assert prepared["sources"][0]["details"]["asBeforeReplacedReply"] is True
    fresh = api.post(f"{CONV}/turns", {"scenarioId": "saga", "userMessage": "Onward."}).json()
    assert "dragon: asleep" in fresh["variables"]["story"]


def test_the_rollback_invalidates_the_working_set_entry_of_the_story(api):
    first = turn(api)
    settle(api, settlement(0, first["assistantMessageId"], setFacts={"door": "open"}))
    second = turn(api, "I enter.", "A dragon sleeps here.")
    settle(api, settlement(1, second["assistantMessageId"], setFacts={"dragon": "asleep"}))
    before = api.post(f"{CONV}/turns", {"scenarioId": "saga", "userMessage": "Look."}).json()
    assert "dragon: asleep" in before["variables"]["story"]  # the entry is cached now
    turn(api, "I enter.", "The cave is empty.", replaces=second["turnId"])
    after = api.post(f"{CONV}/turns", {"scenarioId": "saga", "userMessage": "Look."}).json()
    assert "dragon" not in after["variables"]["story"] and after["sources"][0]["version"] == 3
