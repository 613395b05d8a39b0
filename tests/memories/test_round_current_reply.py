"""A round has one current reply: a regeneration completes as the round's current reply whatever replaced the
reply it named meanwhile, and a select shows only the selected reply's messages (docs/roleplay.md)."""

from __future__ import annotations

import pytest

from tests.memories.roleplay_support import CONV, reply, reply_id, settled_turn, setup, turn

# Transactional, as tests/memories/test_swipes_rollback.py: the table edits run after each commit.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


def _prepare(api, message: str, **extra) -> int:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": message, **extra})
    assert prepared.status_code == 201, prepared.json()
    return prepared.json()["turnId"]


def _complete(api, turn_id: int, answer: str) -> dict:
    completed = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": answer})
    assert completed.status_code == 200, completed.json()
    return settled_turn(api, turn_id)


def _visible(api) -> list[tuple[int, str, str]]:
    rows = api.get(f"{CONV}/messages?limit=200").json()["results"]
    return [(m["round"], m["role"], m["content"]) for m in rows if not m["superseded"]]


def _places(api) -> list[str]:
    [table] = [t for t in api.get(f"{CONV}/tables").json()["tables"] if t["rows"] is not None][:1]
    return [row[2] for row in table["rows"]]


def _status(api, *turn_ids: int) -> list[str]:
    return [api.get(f"{CONV}/turns/{t}").json()["status"] for t in turn_ids]


def test_two_regenerations_of_one_reply_leave_one_current_reply_and_its_writes_only(alice):
    setup(alice)
    first = turn(alice, "Where now?", reply("pier", "Ann"))["turnId"]
    again, third = (
        _prepare(alice, "Where now?", replacesTurnId=first),
        _prepare(alice, "Where now?", replacesTurnId=first),
    )
    _complete(alice, again, reply("tower", "Ann"))
    _complete(alice, third, reply("cellar", "Ann"))
    assert _status(alice, first, again, third) == ["superseded", "superseded", "committed"]
    assert _visible(alice) == [(1, "user", "Where now?"), (1, "assistant", reply("cellar", "Ann"))]
    assert _places(alice) == ["cellar"]
    assert alice.post(f"{CONV}/turns/{first}/select", {}).status_code == 200
    assert _status(alice, first, again, third) == ["committed", "superseded", "superseded"]
    assert _places(alice) == ["pier"]


def test_a_regeneration_of_a_reply_swiped_away_meanwhile_replaces_the_current_one(alice):
    setup(alice)
    first = turn(alice, "Where now?", reply("pier", "Ann"))["turnId"]
    second = _prepare(alice, "Where now?", replacesTurnId=first)
    _complete(alice, second, reply("tower", "Ann"))
    third = _prepare(alice, "Where now?", replacesTurnId=second)
    assert alice.post(f"{CONV}/turns/{first}/select", {}).status_code == 200  # a swipe back before it completes
    _complete(alice, third, reply("cellar", "Ann"))
    assert _status(alice, first, second, third) == ["superseded", "superseded", "committed"]
    assert _visible(alice) == [(1, "user", "Where now?"), (1, "assistant", reply("cellar", "Ann"))]
    assert _places(alice) == ["cellar"]


def test_selecting_an_older_reply_after_deleting_the_current_one_shows_one_user_message(alice):
    setup(alice)
    turn(alice, "Hello", reply("gate", "Ann"))
    older = turn(alice, "Where now?", reply("pier", "Ann"))["turnId"]
    newer = turn(alice, "Where now?", reply("tower", "Ann"), replacesTurnId=older)["turnId"]
    assert alice.delete(f"{CONV}/messages/{reply_id(alice, newer)}").status_code == 200
    assert alice.post(f"{CONV}/turns/{older}/select", {}).status_code == 200
    assert [m for m in _visible(alice) if m[0] == 2] == [
        (2, "user", "Where now?"),
        (2, "assistant", reply("pier", "Ann")),
    ]
    history = alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "next"}).json()
    assert history["round"] == 3
