"""Helpers of the compact-history tests: a chat scenario with the `history` source, and playing rounds over HTTP."""

from __future__ import annotations

from memoryhub.celery import app as celery_app
from tests.support.turns import post_turn

CONV = "/v1/users/u1/conversations/c1"
TEMPLATE = "History:\n{{history}}\nUser: {{userMessage}}"
SENTENCE = "The guard at the north gate keeps the brass key and the lantern. "


def scenario_body(
    *, slug: str = "chat", budget: int = 2000, keep: int = 2, checkpoint: int = 0, runtime: str = "personalization"
) -> dict:
    return {
        "id": slug,
        "name": "Gate chat",
        "memoryRuntime": runtime,
        "memorySources": [{"id": "h", "agentRef": "history", "variable": "history"}],
        "template": TEMPLATE,
        "compact": {"budgetChars": budget, "keepRecentMessages": keep, "checkpointEveryRounds": checkpoint},
    }


def create_scenario(api, **kwargs) -> dict:
    response = api.post("/v1/scenarios", scenario_body(**kwargs))
    assert response.status_code == 201, response.json()
    return response.json()


def text(length: int, tag: str = "") -> str:
    """Exactly `length` characters of sentences (so the extractive summariser has something to pick)."""
    body = (f"{tag} " if tag else "") + SENTENCE * (length // len(SENTENCE) + 2)
    return body[:length]


def play(api, message: str, reply: str, *, conv: str = CONV, slug: str = "chat", **extra) -> dict:
    """Prepare and complete one round; the prepared turn (with `completion`) is returned."""
    prepared = post_turn(api, slug, message, conv=conv, **extra)
    assert prepared.status_code == 201, prepared.json()
    turn = prepared.json()
    done = api.post(f"{conv}/turns/{turn['turnId']}/complete", {"assistantMessage": reply})
    assert done.status_code == 200, done.json()
    return {**turn, "completion": done.json()}


def history_source(turn: dict) -> dict:
    [source] = [s for s in turn["sources"] if s["variable"] == "history"]
    return source


def events(api, type: str, conv: str = CONV) -> list[dict]:
    return api.get(f"{conv}/events", data={"type": type, "limit": 200}).json()["results"]


def scheduled(api, conv: str = CONV) -> list[list[str]]:
    """Per committed turn, oldest first: the commit hooks that scheduled work."""
    return [e["details"]["scheduled"] for e in events(api, "turn.completed", conv)]


def compactions(api, conv: str = CONV) -> list[dict]:
    response = api.get(f"{conv}/compactions")
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def messages(api, conv: str = CONV) -> list[dict]:
    return api.get(f"{conv}/messages", data={"limit": 200}).json()["results"]


def eager_celery(monkeypatch) -> None:
    """Run tasks in-process at enqueue time, whatever broker is configured."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
