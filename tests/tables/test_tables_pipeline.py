"""The tables inside the turn pipeline, in-process: the commit hook schedules the task on commit only.

Runs on every configuration (the worker itself is exercised in test_tables_e2e.py): the scheduled
callback is captured instead of executed, and the task body is run directly.
"""

from __future__ import annotations

import pytest

from memoryhub import turn_jobs
from memoryhub.outbox.services import outbox_dispatch
from tables.tasks import apply_table_edits
from tests.factories import TABLE_TEMPLATES
from tests.support.turns import prepare

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"
INSERT = '<tableEdit><!-- insertRow(1, {"0": "艾琳", "2": "风灯"}) --></tableEdit>'


def create_scenario(api, **extra) -> None:
    body = {
        "id": "rp",
        "name": "RP",
        "memoryRuntime": "axon_go",
        "tables": TABLE_TEMPLATES,
        "memorySources": [{"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"}],
        "template": "{{memoryTable}}\n{{userMessage}}",
        **extra,
    }
    assert api.post("/v1/scenarios", body).status_code == 201


def scheduled(callbacks) -> list[int]:
    """The turns whose table-edit job was sent after the commit (through the outbox)."""
    return [
        cb.args[2]["turn_pk"]
        for cb in callbacks
        if getattr(cb, "func", None) is outbox_dispatch
        and cb.args[1] == turn_jobs.TASK
        and cb.args[2]["job"] == "tables"
    ]


def test_commit_schedules_the_task_and_the_next_prompt_shows_the_edit(alice, django_capture_on_commit_callbacks):
    create_scenario(alice)
    turn = prepare(alice, "rp", "hi")
    assert turn["referencedVariables"] == ["memoryTable"] and turn["sources"][0]["status"] == "ok"
    with django_capture_on_commit_callbacks() as callbacks:
        alice.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": INSERT})
    assert scheduled(callbacks) == [turn["turnId"]]
    assert apply_table_edits(turn["turnId"]) == "updated"
    assert "0,艾琳,,风灯,\n" in prepare(alice, "rp", "hi")["prompt"]
    events = alice.get(f"{CONV}/events?type=table.updated").json()["results"]
    assert [e["turnId"] for e in events] == [turn["turnId"]]


def test_with_commit_on_accepted_nothing_is_scheduled_before_accept(alice, django_capture_on_commit_callbacks):
    create_scenario(alice, commitOn="accepted")
    turn = prepare(alice, "rp", "hi")
    with django_capture_on_commit_callbacks() as callbacks:
        alice.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": INSERT})
    assert scheduled(callbacks) == []
    assert apply_table_edits(turn["turnId"]) == "skipped"  # not committed: nothing is applied
    with django_capture_on_commit_callbacks() as callbacks:
        assert alice.post(f"{CONV}/turns/{turn['turnId']}/accept").status_code == 200
    assert scheduled(callbacks) == [turn["turnId"]]


def test_a_scenario_without_tables_schedules_nothing(alice, django_capture_on_commit_callbacks):
    assert alice.post("/v1/scenarios", {"id": "rp", "name": "RP", "template": "{{userMessage}}"}).status_code == 201
    turn = prepare(alice, "rp", "hi")
    with django_capture_on_commit_callbacks() as callbacks:
        alice.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": INSERT})
    assert scheduled(callbacks) == []
    assert alice.get(f"{CONV}/tables").json()["tables"] == []
