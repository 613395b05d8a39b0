"""Task checkpoints and reports through the API: commit once, fixed input, resume, atomic report."""

from __future__ import annotations

import pytest

from memories.longterm.models import Task, TaskCheckpoint, TaskReport
from memories.models import RunOnceRecord
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

TASK = "/v1/users/u1/tasks/report-2026-w48"
INPUT = {"project": "memoryhub", "week": 48, "items": ["search", "checkpoints"]}


def put_stage(api, stage: str, data: dict, op: str, task: str = TASK, **extra):
    return api.put(f"{task}/checkpoints/{stage}", {"data": data, "operationId": op, **extra})


def test_the_first_checkpoint_fixes_the_input_and_stages_come_back_in_commit_order(alice):
    first = put_stage(alice, "collect", {"done": 2}, "op-1", input=INPUT)
    assert first.status_code == 201, first.json()
    body = first.json()
    assert body["taskId"] == "report-2026-w48" and body["stage"] == "collect" and body["data"] == {"done": 2}
    assert body["key"] == f"{alice.product.pk}:u1:task:report-2026-w48:collect"
    assert put_stage(alice, "analyze", {"risk": "low"}, "op-2").status_code == 201
    assert put_stage(alice, "aaa-summary", {"ok": True}, "op-3", input=INPUT).status_code == 201  # same input: fine
    task = alice.get(TASK).json()
    assert task["input"] == INPUT and task["report"] is None
    assert [s["stage"] for s in task["stages"]] == ["collect", "analyze", "aaa-summary"]
    assert task["stages"][0] == {k: body[k] for k in ("stage", "key", "data", "committedAt")}


def test_a_first_checkpoint_without_input_is_400_and_creates_nothing(alice):
    assert_envelope(put_stage(alice, "collect", {"done": 1}, "op-1"), 400, "invalid_request")
    assert not Task.objects.exists()


def test_the_input_snapshot_never_changes(alice):
    put_stage(alice, "collect", {"done": 1}, "op-1", input=INPUT)
    changed = {**INPUT, "week": 49}
    assert_envelope(put_stage(alice, "analyze", {"x": 1}, "op-2", input=changed), 409, "input_conflict")
    assert alice.get(TASK).json()["input"] == INPUT
    assert TaskCheckpoint.objects.count() == 1


def test_a_committed_stage_is_committed_once(alice):
    first = put_stage(alice, "collect", {"done": 1}, "op-1", input=INPUT).json()
    same = put_stage(alice, "collect", {"done": 1}, "op-2")
    assert same.status_code == 200 and same.json() == first  # the same stage again: nothing new
    error = assert_envelope(put_stage(alice, "collect", {"done": 2}, "op-3"), 409, "stage_already_committed")
    assert error["details"] == {"stage": "collect"}
    assert alice.get(TASK).json()["stages"][0]["data"] == {"done": 1}
    assert TaskCheckpoint.objects.count() == 1


def test_operation_ids_replay_and_refuse_reuse(alice):
    first = put_stage(alice, "collect", {"done": 1}, "op-1", input=INPUT)
    again = put_stage(alice, "collect", {"done": 1}, "op-1", input=INPUT)
    assert again.status_code == 201 and again.json() == first.json() and again.headers["Operation-Replayed"] == "true"
    assert_envelope(put_stage(alice, "analyze", {"done": 1}, "op-1"), 422, "operation_id_reused")
    assert RunOnceRecord.objects.filter(kind="operation", action="task.checkpoint").count() == 1


def test_checkpoint_needs_an_operation_id_and_object_data(alice):
    assert_envelope(alice.put(f"{TASK}/checkpoints/collect", {"data": {}, "input": INPUT}), 400)
    assert_envelope(put_stage(alice, "collect", [1, 2], "op-1", input=INPUT), 400)
    assert_envelope(put_stage(alice, "collect", {"x": 1}, "op-1", input="text"), 400)
    assert_envelope(put_stage(alice, "bad:stage", {"x": 1}, "op-1", input=INPUT), 400, "invalid_id")
    assert_envelope(put_stage(alice, "s", {"x": 1}, "op-1", task="/v1/users/u1/tasks/bad:id", input=INPUT), 400)
    assert not Task.objects.exists()


def test_a_never_written_task_reads_as_the_empty_shape(alice):
    assert alice.get(TASK).json() == {
        "taskId": "report-2026-w48",
        "key": f"{alice.product.pk}:u1:task:report-2026-w48",
        "input": None,
        "stages": [],
        "report": None,
    }


def test_a_client_resumes_after_the_committed_stages_and_publishes_the_report_once(alice):
    plan = ["collect", "analyze", "write"]
    computed: list[str] = []

    def run(stop_after: int | None = None) -> None:
        task = alice.get(TASK).json()
        done = {s["stage"] for s in task["stages"]}
        for position, stage in enumerate(plan):
            if stage in done:
                continue  # resumed: never recomputed
            computed.append(stage)
            put_stage(alice, stage, {"n": position}, f"op-{stage}", input=INPUT)
            if stop_after is not None and position >= stop_after:
                return  # the "process" dies here

    run(stop_after=0)
    run()
    assert computed == plan
    report = {"summary": "3 stages", "stages": plan}
    published = alice.put(f"{TASK}/report", {"data": report, "operationId": "op-report"})
    assert published.status_code == 201
    retry = alice.put(f"{TASK}/report", {"data": report})  # the answer was lost: retry without recomputing
    assert retry.status_code == 200 and retry.json() == published.json()
    assert_envelope(alice.put(f"{TASK}/report", {"data": {"summary": "other"}}), 409, "report_already_published")
    task = alice.get(TASK).json()
    assert task["report"] == published.json()["report"] and task["report"]["data"] == report
    assert TaskReport.objects.count() == 1


def test_a_report_before_any_checkpoint_is_409(alice):
    assert_envelope(alice.put(f"{TASK}/report", {"data": {"x": 1}}), 409, "task_not_started")
    assert not TaskReport.objects.exists()


def test_tasks_are_isolated_by_user_and_product(alice, bob):
    put_stage(alice, "collect", {"secret": "alice"}, "op-1", input=INPUT)
    for api, task in ((bob, TASK), (alice, "/v1/users/u2/tasks/report-2026-w48")):
        assert api.get(task).json()["stages"] == []
        assert_envelope(api.put(f"{task}/report", {"data": {"x": 1}}), 409, "task_not_started")
    assert put_stage(bob, "collect", {"secret": "bob"}, "op-1", input={"other": True}).status_code == 201
    assert alice.get(TASK).json()["stages"][0]["data"] == {"secret": "alice"}
    assert bob.get(TASK).json()["input"] == {"other": True}
