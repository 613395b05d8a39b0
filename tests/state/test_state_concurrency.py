"""16 concurrent candidates from one base revision: exactly one commits (PostgreSQL, real connections)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from memories.state.models import ConversationStateRevision
from tests.memories.test_documents_concurrency import RACERS, run_threads

from .support import CANDIDATES, STATE, candidate, state_scenario, upsert

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]


def race(api, base: int) -> list[tuple[int, dict]]:
    barrier = threading.Barrier(RACERS)

    def racer(index: int, client) -> tuple[int, dict]:
        barrier.wait(timeout=30)
        body = candidate(base, text=f"racer {index}", upsert=[upsert("inventory", "winner", index)])
        response = client.post(CANDIDATES, body, format="json")
        return response.status_code, response.json()

    return run_threads(RACERS, api.key, racer)


@pytest.mark.parametrize("base", [0, 1])
def test_of_sixteen_candidates_from_one_base_exactly_one_commits(alice, base):
    state_scenario(alice)
    if base:
        assert alice.post(CANDIDATES, candidate(0, text="seed")).status_code == 201
    results = race(alice, base)
    assert Counter(status for status, _ in results) == {201: 1, 409: RACERS - 1}, results
    winner_index, (_, winner) = next((i, r) for i, r in enumerate(results) if r[0] == 201)
    assert winner == {"revision": base + 1}
    for status, body in results:
        if status == 409:
            assert body["error"]["code"] == "revision_conflict"
            assert body["error"]["details"]["currentRevision"] == base + 1
    state = alice.get(STATE).json()
    assert state["revision"] == base + 1 and state["text"] == f"racer {winner_index}"
    assert state["records"][0]["value"] == winner_index
    assert ConversationStateRevision.objects.count() == base + 1
