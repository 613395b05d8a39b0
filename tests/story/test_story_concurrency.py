"""16 concurrent settlements from one version: exactly one commits (PostgreSQL, real connections)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from memories.story.models import StoryVersion
from tests.memories.test_documents_concurrency import RACERS, run_threads

from .support import SETTLE, STORY, settlement, story_scenario, turn

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]


def test_of_sixteen_settlements_from_one_version_exactly_one_commits(alice):
    story_scenario(alice)
    anchor = turn(alice)["assistantMessageId"]
    barrier = threading.Barrier(RACERS)

    def racer(index: int, client) -> tuple[int, dict]:
        barrier.wait(timeout=30)
        body = settlement(0, anchor, setFacts={"winner": index})
        response = client.post(SETTLE, body, format="json")
        return response.status_code, response.json()

    results = run_threads(RACERS, alice.key, racer)
    assert Counter(status for status, _ in results) == {201: 1, 409: RACERS - 1}, results
    winner = next(body for status, body in results if status == 201)
    for status, body in results:
        if status == 409:
            assert body["error"]["code"] == "revision_conflict" and body["error"]["details"]["currentVersion"] == 1
    assert alice.get(STORY).json() == winner and StoryVersion.objects.count() == 1
