"""A scenario with the `story` source, turns through HTTP, and settlements."""

from __future__ import annotations

from tests.support.scenarios import create

CONV = "/v1/users/u1/conversations/c1"
STORY = f"{CONV}/story"
SETTLE = f"{STORY}/settlements"


def story_scenario(api, slug: str = "saga", **overrides) -> dict:
    body = {
        "id": slug,
        "name": "Saga",
        "memorySources": [{"id": "story", "agentRef": "story", "variable": "story"}],
        "template": "Story:\n{{story}}\nUser: {{userMessage}}",
        **overrides,
    }
    return create(api, body)


def turn(
    api,
    message: str = "I open the door.",
    reply: str = "The door creaks open.",
    *,
    scenario: str = "saga",
    replaces: int | None = None,
    conv: str = CONV,
) -> dict:
    """Prepare and complete a turn; return {"turnId", "prepared", "completed", "assistantMessageId"}."""
    body = {"scenarioId": scenario, "userMessage": message, **({"replacesTurnId": replaces} if replaces else {})}
    prepared = api.post(f"{conv}/turns", body)
    assert prepared.status_code == 201, prepared.json()
    turn_id = prepared.json()["turnId"]
    completed = api.post(f"{conv}/turns/{turn_id}/complete", {"assistantMessage": reply})
    assert completed.status_code == 200, completed.json()
    messages = api.get(f"{conv}/messages", data={"limit": 200}).json()["results"]
    assistant = next(m["id"] for m in messages if m["turnId"] == turn_id and m["role"] == "assistant")
    return {
        "turnId": turn_id,
        "prepared": prepared.json(),
        "completed": completed.json(),
        "assistantMessageId": assistant,
    }


def settlement(expected: int, anchor: int, **fields) -> dict:
    return {"expectedVersion": expected, "anchorMessageId": anchor, **fields}


def settle(api, body: dict):
    return api.post(SETTLE, body)
