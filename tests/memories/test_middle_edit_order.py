"""An edited or regenerated middle round keeps its place: every reader of the visible conversation orders it by
round, not by message id (the edit's new messages have the newest ids). docs/roleplay.md, docs/compact.md."""

from __future__ import annotations

import pytest

from tests.compact.support import compactions, create_scenario, eager_celery, history_source, play, text

pytestmark = pytest.mark.django_db
CONV = "/v1/users/u1/conversations/c1"


def _visible(api) -> list[dict]:
    rows = api.get(f"{CONV}/messages", data={"limit": 200}).json()["results"]
    return [m for m in rows if not m["superseded"]]


def _message(api, content: str) -> int:
    return next(m["id"] for m in _visible(api) if m["content"] == content)


def test_the_history_reads_an_edited_middle_round_in_its_place(alice):
    create_scenario(alice, budget=100_000)
    for n in (1, 2, 3):
        play(alice, f"u{n}", f"a{n}")
    edited = alice.post(f"{CONV}/messages/{_message(alice, 'a1')}/edit", {"content": "a1 (edited)"})
    assert edited.status_code == 200, edited.json()
    history = play(alice, "u4", "a4")["variables"]["history"]
    lines = [line for line in history.splitlines() if line.startswith(("user:", "assistant:"))]
    assert lines == ["user: u1", "assistant: a1 (edited)", "user: u2", "assistant: a2", "user: u3", "assistant: a3"]


def test_a_regenerated_middle_round_is_read_in_its_place(alice):
    create_scenario(alice, budget=100_000)
    first = play(alice, "u1", "a1")
    for n in (2, 3):
        play(alice, f"u{n}", f"a{n}")
    play(alice, "u1", "a1 (again)", replacesTurnId=first["turnId"])
    history = play(alice, "u4", "a4")["variables"]["history"]
    assert history.index("a1 (again)") < history.index("u2") < history.index("a3")


def test_a_compaction_rebuilt_after_a_middle_edit_keeps_the_newest_rounds_raw(alice, monkeypatch):
    eager_celery(monkeypatch)
    create_scenario(alice, budget=900, keep=2)
    rounds = [(text(150, f"Round {n}"), text(150, f"Reply {n}")) for n in range(1, 7)]
    for message, reply in rounds:
        play(alice, message, reply)
    assert compactions(alice), "the budget makes a compaction"
    edited = alice.post(f"{CONV}/messages/{_message(alice, rounds[1][0])}/edit", {"content": "Round 2 EDITED"})
    assert edited.status_code == 200, edited.json()
    prepared = play(alice, "and now?", "fine")
    details = history_source(prepared)["details"]
    history = prepared["variables"]["history"]
    # The raw tail is the newest round (keepRecentMessages 2): round 6, never the edited round 2.
    raw = history.split("\n")[-2:]
    assert raw == [f"user: {rounds[5][0]}", f"assistant: {rounds[5][1]}"], history
    assert details["rawMessages"] == 2


def test_a_lorebook_scan_reads_the_newest_rounds_not_an_edited_old_one(alice):
    book = {"entries": {"0": {"uid": 0, "key": ["torch"], "content": "TORCH LORE", "order": 100, "position": 0}}}
    assert alice.post("/v1/lorebooks", {"id": "lb", "name": "lb", "worldInfo": book}).status_code == 201
    source = {"id": "wi", "agentRef": "lorebook", "variable": "worldInfo", "lorebooks": ["lb"], "scanDepth": 2}
    scenario = {"id": "scan", "name": "scan", "memorySources": [source], "template": "{{worldInfo}}\n{{userMessage}}"}
    assert alice.post("/v1/scenarios", scenario).status_code == 201
    for n in (1, 2, 3):
        play(alice, f"u{n}", f"a{n}", slug="scan")
    edited = alice.post(f"{CONV}/messages/{_message(alice, 'a1')}/edit", {"content": "a1 with a torch"})
    assert edited.status_code == 200, edited.json()
    prepared = play(alice, "u4", "a4", slug="scan")
    [lore] = prepared["sources"]
    assert lore["details"]["fired"] == [] and prepared["variables"]["worldInfo"] == "", lore["details"]
