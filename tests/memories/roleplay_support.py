"""A role-play scenario whose replies write tables, state and story, and reads of all three (docs/roleplay.md)."""

from __future__ import annotations

from tests.factories import TABLE_TEMPLATES
from tests.support.processes import wait_for

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "rp",
    "name": "Lighthouse",
    "memorySources": [
        {"id": "st", "agentRef": "state", "variable": "conversationState"},
        {"id": "story", "agentRef": "story", "variable": "story"},
    ],
    "template": "{{conversationState}}\n{{story}}\nUser: {{userMessage}}",
    "tables": TABLE_TEMPLATES,
    "state": {"categories": [{"name": "people", "actor": True}]},
}


def reply(place: str, who: str) -> str:
    """A reply that records where the scene is in the first table."""
    return (
        f"{who} walks to the {place}.\n<tableEdit>\n<!--\n"
        f'insertRow(0, {{"0": "day 1", "1": "night", "2": "{place}", "3": "{who}"}})\n'
        "-->\n</tableEdit>"
    )


def setup(api) -> None:
    response = api.post("/v1/scenarios", SCENARIO)
    assert response.status_code == 201, response.json()


def settled_turn(api, turn_id: int) -> dict:
    """The turn once its background work (the table edits) has finished, embedded or on a real worker."""

    def done():
        body = api.get(f"{CONV}/turns/{turn_id}").json()
        return body if body["memoryWrite"].get("status") in ("done", "failed", "skipped") else None

    return wait_for(done, timeout=60, message=f"turn {turn_id}'s memory write")


def turn(api, message: str, answer: str, **extra) -> dict:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": message, **extra})
    assert prepared.status_code == 201, prepared.json()
    turn_id = prepared.json()["turnId"]
    completed = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": answer})
    assert completed.status_code == 200 and completed.json()["status"] == "committed", completed.json()
    return settled_turn(api, turn_id)


def reply_id(api, turn_id: int) -> int:
    messages = api.get(f"{CONV}/messages?limit=200").json()["results"]
    return next(m["id"] for m in messages if m["turnId"] == turn_id and m["role"] == "assistant")


def user_message_id(api, turn_id: int) -> int:
    messages = api.get(f"{CONV}/messages?limit=200").json()["results"]
    return next(m["id"] for m in messages if m["turnId"] == turn_id and m["role"] == "user")


def write_state_and_story(api, turn_id: int, trust: int, event: str) -> None:
    """What a background director derives from the reply: a state candidate and a story settlement."""
    state = api.get(f"{CONV}/state").json()
    candidate = {
        "scenarioId": "rp",
        "baseRevision": state["revision"],
        "turnId": turn_id,
        "upsert": [{"category": "people", "key": "keeper", "value": {"trust": trust}}],
    }
    response = api.post(f"{CONV}/state/candidates", candidate)
    assert response.status_code == 201, response.json()
    story = api.get(f"{CONV}/story").json()
    settlement = {
        "expectedVersion": story["version"],
        "anchorMessageId": reply_id(api, turn_id),
        "setFacts": {"trust": trust},
        "appendEvents": [{"text": event}],
    }
    response = api.post(f"{CONV}/story/settlements", settlement)
    assert response.status_code == 201, response.json()


def memory(api) -> dict:
    """Table rows, state and story content (not their revisions: a rollback is a new revision)."""
    tables = api.get(f"{CONV}/tables").json()["tables"]
    state = api.get(f"{CONV}/state").json()
    story = api.get(f"{CONV}/story").json()
    return {
        "tables": [t["rows"] for t in tables],
        "state": (state["text"], state["records"]),
        "story": {k: story[k] for k in ("anchorMessageId", "worldFacts", "events", "narrative")},
    }
