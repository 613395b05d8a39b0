"""A regenerated reply inside a compacted range invalidates the compaction; the next prepare rebuilds it."""

from __future__ import annotations

import pytest

from tests.support.http_server import Reply
from tests.support.turns import post_turn

from .support import CONV, compactions, create_scenario, eager_celery, events, history_source, messages, play

pytestmark = pytest.mark.django_db
L = 300  # a round adds 619 characters: three rounds pass the 1,600-character trigger of a 2,000 budget


def _line(n: int, who: str) -> str:
    return (f"Round {n} {who}: the guard talks about the brass key and the lantern. " * 8)[:L]


def _compacted_through_round_3(api, django_capture_on_commit_callbacks) -> list[dict]:
    create_scenario(api, budget=2000, keep=0, checkpoint=3)
    turns = [play(api, _line(n, "user"), _line(n, "guard")) for n in (1, 2)]
    with django_capture_on_commit_callbacks(execute=True):
        turns.append(play(api, _line(3, "user"), _line(3, "guard")))
    [compaction] = compactions(api)
    assert (compaction["roundTo"], compaction["messageCount"]) == (3, 6)
    return turns


def test_regenerating_a_compacted_reply_invalidates_the_compaction_and_the_next_prepare_rebuilds_it(
    alice, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    eager_celery(monkeypatch)
    turns = _compacted_through_round_3(alice, django_capture_on_commit_callbacks)
    [old] = compactions(alice)
    # The regeneration's own prompt cannot use a compaction of the round it replaces: rounds 1-2, raw.
    again = post_turn(alice, "chat", _line(3, "user"), replacesTurnId=turns[2]["turnId"]).json()
    details = history_source(again)["details"]
    assert details["compaction"] is None and details["rawMessages"] == 4
    assert "Round 3" not in again["variables"]["history"]
    done = alice.post(f"{CONV}/turns/{again['turnId']}/complete", {"assistantMessage": _line(3, "keeper")})
    assert done.status_code == 200, done.json()
    [invalidated] = compactions(alice)
    assert invalidated["id"] == old["id"] and invalidated["invalidated"] is True
    assert invalidated["invalidatedByTurnId"] == again["turnId"] and invalidated["invalidatedAt"]
    [event] = events(alice, "compact.invalidated")
    assert event["details"] == {
        "compactionIds": [old["id"]],
        "supersededTurnId": turns[2]["turnId"],
        "byTurnId": again["turnId"],
    }
    # Round 4: the history (rounds 1, 2 and the new 3) is past the trigger and a rebuild waits: rebuilt inline.
    nxt = post_turn(alice, "chat", "And now?").json()
    details = history_source(nxt)["details"]
    assert details["compacted"] == "rebuild"
    rebuilt, _ = compactions(alice)
    assert rebuilt["trigger"] == "rebuild" and rebuilt["invalidated"] is False
    assert details["compaction"] == {"id": rebuilt["id"], "version": 2, "throughMessageId": rebuilt["throughMessageId"]}
    live = [m for m in messages(alice) if not m["superseded"]]
    assert rebuilt["throughMessageId"] == live[-1]["id"] and rebuilt["messageCount"] == 6
    assert rebuilt["previousId"] is None and "Round 3 guard" not in rebuilt["summary"]  # built from live messages
    assert _line(3, "guard") not in nxt["variables"]["history"]
    # The rebuild is done: the prepare after it uses it as it is.
    later = post_turn(alice, "chat", "Still there?").json()
    assert "compacted" not in history_source(later)["details"]


def test_regenerating_a_reply_outside_the_compacted_range_keeps_the_compaction(
    alice, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    eager_celery(monkeypatch)
    _compacted_through_round_3(alice, django_capture_on_commit_callbacks)
    fourth = play(alice, "Round 4?", "Round 4.")
    again = post_turn(alice, "chat", "Round 4?", replacesTurnId=fourth["turnId"]).json()
    assert history_source(again)["details"]["compaction"] is not None
    alice.post(f"{CONV}/turns/{again['turnId']}/complete", {"assistantMessage": "Round 4, again."})
    [kept] = compactions(alice)
    assert kept["invalidated"] is False and events(alice, "compact.invalidated") == []
    assert "Round 4, again." in post_turn(alice, "chat", "5").json()["variables"]["history"]


def test_a_rebuild_that_fails_while_the_raw_history_fits_serves_the_raw_history(
    alice, django_capture_on_commit_callbacks, monkeypatch, stub_server, settings
) -> None:
    eager_celery(monkeypatch)
    turns = _compacted_through_round_3(alice, django_capture_on_commit_callbacks)
    again = post_turn(alice, "chat", _line(3, "user"), replacesTurnId=turns[2]["turnId"]).json()
    alice.post(f"{CONV}/turns/{again['turnId']}/complete", {"assistantMessage": _line(3, "keeper")})
    settings.SUMMARIZER_BASE_URL, settings.SUMMARIZER_MODEL = f"{stub_server.url}/v1", "test-model"
    stub_server.route("POST", "/v1/chat/completions", Reply(500, {"error": {"message": "down"}}))
    turn = post_turn(alice, "chat", "And now?")
    assert turn.status_code == 201, turn.json()
    details = history_source(turn.json())["details"]
    assert details["compaction"] is None and details["rawMessages"] == 6 and "rebuildFailed" in details
    assert "compacted" not in details and details["inputChars"] <= 2000
    [failed] = events(alice, "compact.failed")
    assert failed["details"]["trigger"] == "rebuild"
