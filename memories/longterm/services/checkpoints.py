"""Task checkpoints and reports (SPEC L8; seed 004 task-state).

A task's stages are committed once each, in order of commit; the first checkpoint fixes the task's
input snapshot, which never changes. A client that re-enters reads the task and resumes after the
last committed stage. The report is published in one transaction; a retry of a publish whose answer
was lost returns the same report and recomputes nothing. Checkpoints are not memories: they are not
embedded and never appear in search.
"""
from __future__ import annotations

import hashlib
import json

from django.db import IntegrityError, transaction

from memories.longterm.models import Task, TaskCheckpoint, TaskReport
from memoryhub.errors import Conflict, InvalidRequest

from memoryhub.addresses import UserAddress
from memories.services.operations import Operation, Outcome, operation_commit, operation_replay


def _fingerprint(value: object) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def checkpoint_to_dict(checkpoint: TaskCheckpoint) -> dict:
    from memoryhub.timefmt import iso

    return {"stage": checkpoint.stage, "key": checkpoint.key, "data": checkpoint.data,
            "committedAt": iso(checkpoint.committed_at)}


def _task_for_checkpoint(scope: UserAddress, task_id: str, task_input: dict | None) -> Task:
    """The task row, locked; created with its input snapshot by the first checkpoint."""
    lookup = dict(product=scope.product, user_id=scope.user_id, task_id=task_id)
    task = Task.objects.select_for_update().filter(**lookup).first()
    if task is None:
        if task_input is None:
            raise InvalidRequest("the first checkpoint of a task must carry its input snapshot",
                                 details={"field": "input"})
        try:
            with transaction.atomic():
                return Task.objects.create(input=task_input, **lookup)
        except IntegrityError:  # a concurrent first checkpoint created it
            task = Task.objects.select_for_update().get(**lookup)
    if task_input is not None and _fingerprint(task_input) != _fingerprint(task.input):
        raise Conflict("the task's input snapshot was fixed by its first checkpoint and cannot change",
                       code="input_conflict", details={"taskId": task_id})
    return task


def checkpoint_commit(*, scope: UserAddress, task_id: str, stage: str, data: dict, task_input: dict | None,
                      operation: Operation | None) -> Outcome:
    """Commit `stage` once: 201 the first time, 200 for the same data again, 409 for different data."""
    replay = operation_replay(operation)
    if replay:
        return replay

    def write() -> tuple[int, dict]:
        task = _task_for_checkpoint(scope, task_id, task_input)
        existing = TaskCheckpoint.objects.filter(task=task, stage=stage).first()
        if existing is not None:
            if existing.fingerprint != _fingerprint(data):
                raise Conflict(f"stage {stage!r} is already committed with different data",
                               code="stage_already_committed", details={"stage": stage})
            return 200, {"taskId": task_id, **checkpoint_to_dict(existing)}
        checkpoint = TaskCheckpoint.objects.create(
            task=task, stage=stage, data=data, fingerprint=_fingerprint(data),
            operation_id=operation.operation_id if operation else "",
        )
        return 201, {"taskId": task_id, **checkpoint_to_dict(checkpoint)}

    return operation_commit(operation, write)


def report_to_dict(report: TaskReport) -> dict:
    from memoryhub.timefmt import iso

    return {"data": report.report, "publishedAt": iso(report.published_at)}


def task_report_publish(*, scope: UserAddress, task_id: str, data: dict, operation: Operation | None) -> Outcome:
    """Publish the task's final report atomically, once; the same report again is 200, another is 409."""
    replay = operation_replay(operation)
    if replay:
        return replay

    def write() -> tuple[int, dict]:
        task = Task.objects.select_for_update().filter(
            product=scope.product, user_id=scope.user_id, task_id=task_id
        ).first()
        if task is None:
            raise Conflict("a task gets its report after its first checkpoint", code="task_not_started",
                           details={"taskId": task_id})
        existing = TaskReport.objects.filter(task=task).first()
        if existing is not None:
            if existing.fingerprint != _fingerprint(data):
                raise Conflict("this task's report is already published with different content",
                               code="report_already_published", details={"taskId": task_id})
            return 200, {"taskId": task_id, "report": report_to_dict(existing)}
        report = TaskReport.objects.create(task=task, report=data, fingerprint=_fingerprint(data),
                                           operation_id=operation.operation_id if operation else "")
        return 201, {"taskId": task_id, "report": report_to_dict(report)}

    return operation_commit(operation, write)
