"""The lists that are oldest first are exactly the ones docs/contract.md names (every other list is newest first)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.memories.test_turns_api import CONV, SCENARIO, complete, create_scenario, prepare

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract.md"


def oldest_first_lists() -> str:
    text = CONTRACT.read_text(encoding="utf-8")
    paging = text[text.index("## Lists and paging") :]
    return paging[: paging.index("\n## ", 1)]


def test_events_messages_and_scenarios_are_oldest_first_as_documented(alice):
    create_scenario(alice, SCENARIO)
    create_scenario(alice, {**SCENARIO, "id": "gate2"})
    for message in ("first", "second"):
        complete(alice, prepare(alice, "gate", message)["turnId"])
    events = alice.get(f"{CONV}/events").json()["results"]
    messages = alice.get(f"{CONV}/messages").json()["results"]
    scenarios = alice.get("/v1/scenarios").json()["results"]
    for rows in (events, messages, scenarios):
        assert len(rows) >= 2 and [r["id"] for r in rows] == sorted(r["id"] for r in rows), rows
    assert [m["content"] for m in messages if m["role"] == "user"] == ["first", "second"]
    documented = oldest_first_lists()
    assert re.search(r"\*\*oldest first\*\*", documented)
    for path in ("GET …/events", "GET …/messages", "GET /v1/scenarios", "GET /v1/webhooks"):
        assert path in documented, path
