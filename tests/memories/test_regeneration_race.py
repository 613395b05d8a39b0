"""Regenerations of one reply completed at the same moment (PostgreSQL, real connections; docs/roleplay.md).

Storing a reply and committing it are two transactions: each complete stores its reply as the round's current
one, and one stored after it can displace it before its commit. Whatever the interleaving, each complete
answers either 200 committed or `409 turn_superseded` (the reply kept, superseded, never committed: not
selectable), and the round ends with one current reply, the tables holding its edits only.
"""

from __future__ import annotations

import threading

import pytest

from tests.memories.test_documents_concurrency import run_threads
from tests.support.api import assert_envelope

from .roleplay_support import CONV, reply, settled_turn, setup, turn

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]

RACERS = 4


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


@pytest.mark.parametrize("attempt", range(3))
def test_each_racing_regeneration_is_committed_or_turn_superseded_and_one_reply_stays(alice, attempt):
    setup(alice)
    first = turn(alice, "Where now?", reply("pier", "Ann"))["turnId"]
    body = {"scenarioId": "rp", "userMessage": "Where now?", "replacesTurnId": first}
    regenerations = [alice.post(f"{CONV}/turns", body).json()["turnId"] for _ in range(RACERS)]
    places = [f"place{i}" for i in range(RACERS)]
    barrier = threading.Barrier(RACERS)

    def racer(index: int, client) -> tuple[int, dict]:
        barrier.wait(timeout=30)
        answer = {"assistantMessage": reply(places[index], "Ann")}
        response = client.post(f"{CONV}/turns/{regenerations[index]}/complete", answer, format="json")
        return response.status_code, response.json()

    results = run_threads(RACERS, alice.key, racer)
    committed = [i for i, (status, body) in enumerate(results) if status == 200]
    assert committed and all(results[i][1]["status"] == "committed" for i in committed), results
    for index, (status, body) in enumerate(results):
        if status != 200:
            assert (status, body["error"]["code"]) == (409, "turn_superseded"), body
            assert body["error"]["details"] == {"turnId": regenerations[index], "status": "superseded"}
            assert alice.get(f"{CONV}/turns/{regenerations[index]}").json()["status"] == "superseded"
            messages = alice.get(f"{CONV}/messages?limit=200").json()["results"]
            kept = [(m["content"], m["superseded"]) for m in messages if m["turnId"] == regenerations[index]]
            assert kept == [("Where now?", True), (reply(places[index], "Ann"), True)]  # the reply kept
            selected = alice.post(f"{CONV}/turns/{regenerations[index]}/select", {})
            assert_envelope(selected, 409, "turn_not_selectable")
    current = [t for t in regenerations if alice.get(f"{CONV}/turns/{t}").json()["status"] == "committed"]
    assert len(current) == 1, results
    winner = regenerations.index(current[0])
    settled_turn(alice, current[0])
    visible = [m for m in alice.get(f"{CONV}/messages?limit=200").json()["results"] if not m["superseded"]]
    assert [m["content"] for m in visible] == ["Where now?", reply(places[winner], "Ann")]
    rows = alice.get(f"{CONV}/tables").json()["tables"][0]["rows"]
    assert [row[2] for row in rows] == [places[winner]]
