"""Background work of a committed turn: enqueued after the commit, run by a real Celery worker, idempotent."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memories.models import Event, Turn
from memories.tasks import AUDIT, BACKGROUND_DONE, turn_background_done_record, turn_committed_audit
from memoryhub.outbox import services as outbox_services
from memoryhub.runtimes import registry
from memoryhub.turn_jobs import run_turn_job
from tests.support.processes import wait_for
from tests.support.registry import only_commit_hooks

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


def committed_turn(api, *, commit_on: str = "completed") -> int:
    assert api.post("/v1/scenarios", {**SCENARIO, "commitOn": commit_on}).status_code == 201
    turn = api.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "hello"}).json()
    body = api.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": "welcome"}).json()
    assert body["status"] == ("committed" if commit_on == "completed" else "completed"), body
    return turn["turnId"]


def done_events(turn_pk: int) -> list[Event]:
    return list(Event.objects.filter(turn_id=turn_pk, type=BACKGROUND_DONE))


def test_the_audit_task_is_a_registered_commit_hook():
    assert "memories.turn_committed_audit" in registry.commit_hook_names()


@pytest.mark.requires_worker
@pytest.mark.django_db(transaction=True)
def test_a_committed_turn_is_processed_once_by_the_real_worker(alice, celery_worker_process):
    turn_pk = committed_turn(alice)
    wait_for(lambda: done_events(turn_pk), timeout=60, message="the worker to record turn.background_done")
    # redelivery: the same job twice more, through the broker, for the same turn (once under its former task name,
    # as a message queued before the upgrade to turn_jobs would be)
    run_turn_job.delay(job=AUDIT, turn_pk=turn_pk)
    turn_committed_audit.delay(turn_pk)
    wait_for(_broker_idle, timeout=60, message="the worker to finish every task it was given")
    assert len(done_events(turn_pk)) == 1
    events = alice.get(f"{CONV}/events?type={BACKGROUND_DONE}").json()["results"]
    assert [(e["turnId"], e["details"]) for e in events] == [(turn_pk, {"round": 1})]


def _broker_idle() -> bool:
    """Nothing waiting and nothing unacknowledged: with acks_late a task is acked only once it has run."""
    from memoryhub.celery import app

    with app.connection_for_read() as conn:
        client = conn.default_channel.client
        return client.llen("celery") == 0 and client.hlen("unacked") == 0


@pytest.mark.django_db(transaction=True)
def test_the_task_is_enqueued_only_once_the_commit_is_durable(alice, monkeypatch):
    sent: list[int] = []

    def send(pk: int, task: str, kwargs: dict) -> None:
        if task == run_turn_job.name and kwargs["job"] == AUDIT:
            sent.append(kwargs["turn_pk"])

    monkeypatch.setattr(outbox_services, "_send", send)
    turn_pk = committed_turn(alice, commit_on="accepted")
    assert sent == []  # completed but not accepted: not committed, nothing scheduled
    assert alice.post(f"{CONV}/turns/{turn_pk}/accept", {}).status_code == 200
    assert sent == [turn_pk]


def test_a_redelivered_task_records_nothing_twice(alice):
    turn_pk = committed_turn(alice)
    assert turn_committed_audit(turn_pk) is True
    assert turn_committed_audit(turn_pk) is False
    assert turn_committed_audit.apply(args=[turn_pk]).get() is False
    assert len(done_events(turn_pk)) == 1


def test_a_task_for_a_turn_that_is_gone_does_nothing(alice):
    turn_pk = committed_turn(alice)
    Turn.objects.filter(pk=turn_pk).delete()
    assert turn_committed_audit(turn_pk) is False
    assert not Event.objects.filter(type=BACKGROUND_DONE).exists()


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_deliveries_running_at_once_record_one_event(alice):
    only_commit_hooks({})  # no worker may record it before the racers do
    turn_pk = committed_turn(alice)
    barrier, results = threading.Barrier(4), []

    def deliver():
        try:
            barrier.wait()
            results.append(turn_background_done_record(turn_pk=turn_pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False, False, False, True]
    assert len(done_events(turn_pk)) == 1
