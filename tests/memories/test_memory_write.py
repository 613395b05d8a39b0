"""A committed turn's memoryWrite: pending while its background work runs, then done or failed — set by the work."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.urls import reverse

from memories.models import Event, Turn
from memories.services.memory_write import memory_write_finish
from memoryhub.celery import app as celery_app
from tests.factories import TurnFactory
from tests.support.processes import wait_for

CONV = "/v1/users/u1/conversations/c1"
EDIT = "钥匙在你手里。\n<tableEdit>\ninsertRow(1, {0: '守塔人', 1: '沉默', 2: '看守灯塔'})\n</tableEdit>"
SCENARIO = {
    "id": "rp",
    "name": "灯塔",
    "memoryRuntime": "axon_go",
    "memorySources": [
        {"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"},
        {"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"},
    ],
    "template": "{{memoryTable}}\n{{compassMemory}}\n用户：{{userMessage}}",
    "tables": "plugin-defaults",
}


@pytest.fixture
def in_process_celery(monkeypatch):
    """Run tasks in-process at enqueue time (on commit), whatever broker is configured."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)


def play(api, reply: str = EDIT, **scenario) -> dict:
    assert api.post("/v1/scenarios", {**SCENARIO, **scenario}).status_code == 201
    turn = api.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "你好"}).json()
    response = api.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": reply})
    assert response.status_code == 200, response.json()
    return response.json()


def detail(api, turn_id: int) -> dict:
    return api.get(f"{CONV}/turns/{turn_id}").json()["memoryWrite"]


@pytest.mark.django_db(transaction=True)
def test_done_when_every_scheduled_work_has_finished(alice, in_process_celery):
    body = play(alice)
    expected = {"status": "done", "work": {"tables": "done", "diaries": "done"}}
    assert body["memoryWrite"] == expected  # the work ran in-process before the answer
    assert detail(alice, body["turnId"]) == expected
    assert list(detail(alice, body["turnId"])) == ["status", "work"]  # status first, on every database
    events = alice.get(f"{CONV}/events?type=turn.memory_write").json()["results"]
    assert [e["details"]["memoryWrite"]["status"] for e in events] == ["done"]


@pytest.mark.django_db(transaction=True)
def test_failed_with_the_reason_when_one_work_fails(alice, in_process_celery, monkeypatch):
    def broken(*, turn_pk):
        raise ValueError("the parser broke")

    monkeypatch.setattr("tables.tasks.turn_table_edits_apply", broken)
    body = play(alice)
    write = detail(alice, body["turnId"])
    assert write == {
        "status": "failed",
        "reason": "tables: ValueError: the parser broke",
        "work": {"tables": "failed", "diaries": "done"},
    }
    assert body["memoryWrite"] == write


@pytest.mark.django_db(transaction=True)
def test_a_transient_error_reports_only_after_the_last_retry(alice, in_process_celery, monkeypatch):
    calls = []

    def flaky(*, turn_pk):
        calls.append(turn_pk)
        raise OperationalError("database went away")

    monkeypatch.setattr("tables.tasks.turn_table_edits_apply", flaky)
    body = play(alice)
    assert len(calls) == 6  # the first attempt and 5 retries (run at once in-process)
    write = detail(alice, body["turnId"])
    # A database error's text (SQL, values, hosts) stays in the worker's log: the client reads its class.
    reason = "tables: OperationalError: a database error (its text is in the worker's log)"
    assert write["status"] == "failed" and write["reason"] == reason
    assert Event.objects.filter(turn_id=body["turnId"], type="turn.memory_write").count() == 1


@pytest.mark.django_db(transaction=True)
def test_accepted_turns_wait_for_accept_then_finish(alice, in_process_celery):
    body = play(alice, commitOn="accepted")
    assert body["memoryWrite"] == {"status": "pending", "reason": "waiting for accept"}
    accepted = alice.post(f"{CONV}/turns/{body['turnId']}/accept", {}).json()
    assert accepted["memoryWrite"]["status"] == "done"
    assert detail(alice, body["turnId"])["status"] == "done"


@pytest.mark.django_db
def test_done_only_when_all_finished_failed_if_any_failed_and_idempotent():
    turn = TurnFactory(memory_write={"status": "pending", "work": {"tables": "pending", "diaries": "pending"}})
    assert memory_write_finish(turn_pk=turn.pk, work="tables", failure="boom")["status"] == "pending"
    assert memory_write_finish(turn_pk=turn.pk, work="tables") is None  # reported already
    assert memory_write_finish(turn_pk=turn.pk, work="unknown") is None  # never scheduled
    final = memory_write_finish(turn_pk=turn.pk, work="diaries")
    assert final == {"status": "failed", "reason": "tables: boom", "work": {"tables": "failed", "diaries": "done"}}
    assert memory_write_finish(turn_pk=turn.pk, work="diaries") is None
    turn.refresh_from_db()
    assert turn.memory_write == final


@pytest.mark.django_db
def test_work_does_not_touch_a_write_that_is_not_pending_on_it():
    turn = TurnFactory(memory_write={"status": "pending", "reason": "waiting for accept"})
    assert memory_write_finish(turn_pk=turn.pk, work="tables") is None
    assert memory_write_finish(turn_pk=10**9, work="tables") is None  # the turn is gone


@pytest.mark.django_db
def test_the_admin_shows_the_status_and_the_reason(admin_client):
    TurnFactory(memory_write={"status": "failed", "reason": "tables: boom", "work": {"tables": "failed"}})
    TurnFactory(memory_write={"status": "done", "work": {"tables": "done"}})
    page = admin_client.get(reverse("admin:memories_turn_changelist")).content.decode()
    assert "failed: tables: boom" in page and ">done<" in page


@pytest.mark.requires_worker
@pytest.mark.django_db(transaction=True)
def test_the_real_worker_moves_pending_to_done(alice, celery_worker_process):
    body = play(alice)
    turn_id = body["turnId"]
    assert body["memoryWrite"]["status"] in ("pending", "done")
    wait_for(lambda: detail(alice, turn_id)["status"] != "pending", timeout=60, message="the work to finish")
    assert detail(alice, turn_id) == {"status": "done", "work": {"tables": "done", "diaries": "done"}}
    assert Turn.objects.get(pk=turn_id).memory_write["status"] == "done"
