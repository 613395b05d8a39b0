"""A scenario with a "state" section and the conversationState source, and submitting candidates over HTTP."""

from __future__ import annotations

from tests.support.scenarios import create

CONV = "/v1/users/u1/conversations/c1"
STATE = f"{CONV}/state"
CANDIDATES = f"{STATE}/candidates"
SECTION = {
    "categories": [
        {"name": "relationships", "actor": True, "maxRecords": 3, "description": "who trusts whom"},
        {"name": "inventory", "actor": True},
        {"name": "director_notes", "actor": False},
    ],
    "maxTextChars": 200,
}


def state_scenario(api, slug: str = "tavern", runtime: str = "personalization", **overrides) -> dict:
    body = {
        "id": slug,
        "name": "Tavern",
        "memoryRuntime": runtime,
        "memorySources": [{"id": "st", "agentRef": "state", "variable": "conversationState"}],
        "template": "State:\n{{conversationState}}\nUser: {{userMessage}}",
        "state": SECTION,
        **overrides,
    }
    return create(api, body)


def candidate(base: int = 0, **fields) -> dict:
    return {"scenarioId": "tavern", "baseRevision": base, **fields}


def upsert(category: str, key: str, value: object) -> dict:
    return {"category": category, "key": key, "value": value}


def submit(api, body: dict, url: str = CANDIDATES):
    return api.post(url, body)
