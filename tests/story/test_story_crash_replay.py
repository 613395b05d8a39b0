"""SIGKILL between a settlement's commit and its response: the retry with the same operationId replays it.

A real `manage.py runserver` on the test database SIGKILLs itself right after the settlement commits
(memoryhub/faults.py crash_after_commit, as tests/longterm/test_crash_replay.py does for long-term memories).
The retry — whose expectedVersion is stale by then — gets the original result, and exactly one version exists.
"""

from __future__ import annotations

import pytest

from memories.models import Event, RunOnceRecord
from memories.story.models import StorySnapshot, StoryVersion
from tests.longterm.test_crash_replay import Server, crash, send

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]

CONV = "/v1/users/u1/conversations/c1"


@pytest.fixture
def server():
    running = Server()
    running.env["MEMORYHUB_CRASH_AFTER_COMMIT"] = "crash-settle,crash-state"
    running.start()
    yield running
    running.stop()


def test_a_settlement_committed_before_a_sigkill_is_not_repeated(server, alice):
    scenario = {
        "id": "saga",
        "name": "Saga",
        "memorySources": [{"id": "story", "agentRef": "story", "variable": "story"}],
        "template": "{{story}} {{userMessage}}",
        "state": {"categories": [{"name": "mood", "actor": True}]},
    }
    assert send(server, alice.key, "POST", "/v1/scenarios", scenario).status_code == 201
    turn = send(server, alice.key, "POST", f"{CONV}/turns", {"scenarioId": "saga", "userMessage": "Hello"}).json()
    send(server, alice.key, "POST", f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": "Welcome."})
    anchor = send(server, alice.key, "GET", f"{CONV}/messages", {}).json()["results"][-1]["id"]

    body = {
        "expectedVersion": 0,
        "anchorMessageId": anchor,
        "appendEvents": [{"text": "A stranger arrived."}],
        "operationId": "crash-settle",
    }
    crash(server, alice.key, "POST", f"{CONV}/story/settlements", body)
    assert StorySnapshot.objects.get().version == 1  # committed before the process died
    assert RunOnceRecord.objects.filter(kind="operation", key="crash-settle").exists()
    retried = send(server, alice.key, "POST", f"{CONV}/story/settlements", body)
    assert retried.status_code == 201 and retried.headers["Operation-Replayed"] == "true"
    assert retried.json()["version"] == 1 and retried.json()["events"][0]["text"] == "A stranger arrived."
    assert StoryVersion.objects.count() == 1 and Event.objects.filter(type="story.settled").count() == 1

    candidate = {
        "scenarioId": "saga",
        "baseRevision": 0,
        "upsert": [{"category": "mood", "key": "inn", "value": "warm"}],
    }
    candidate["operationId"] = "crash-state"
    crash(server, alice.key, "POST", f"{CONV}/state/candidates", candidate)
    retried = send(server, alice.key, "POST", f"{CONV}/state/candidates", candidate)
    assert retried.status_code == 201 and retried.json() == {"revision": 1}
    assert retried.headers["Operation-Replayed"] == "true"
    assert Event.objects.filter(type="state.committed").count() == 1
