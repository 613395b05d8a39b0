"""Task checkpoints and reports (docs/long-term-memories.md).

A task's stages are committed once each, in order of commit; the first checkpoint fixes the task's
input snapshot, which never changes. A client that re-enters reads the task and resumes after the
last committed stage. The report is published in one transaction; a retry of a publish whose answer
was lost returns the same report and recomputes nothing. Checkpoints are not memories: they are not
embedded and never appear in search.

"The same data" is decided by runonce.fingerprint (canonical JSON), the fingerprint every run-once
record uses. Writes return CheckpointOutcome / ReportOutcome (what was committed, whether it was
created now, whether it is an operationId replay); the API shapes the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from memories.longterm.models import Task, TaskCheckpoint, TaskReport
from memories.services import runonce
from memories.services.runonce import RunOnce, fingerprint
from memoryhub.addresses import UserAddress
from memoryhub.errors import Conflict, InvalidRequest


@dataclass(frozen=True)
class CheckpointOutcome:
    checkpoint: TaskCheckpoint  # with its task
    created: bool  # False: the same stage with the same data was committed before
    replayed: bool = False


@dataclass(frozen=True)
class ReportOutcome:
    report: TaskReport  # with its task
    created: bool  # False: the same report was published before
    replayed: bool = False


# An operationId's stored result: what was committed, as it was (checkpoints and reports never change).
_TASK = ("product_id", "user_id", "task_id")


def _encode(outcome: CheckpointOutcome | ReportOutcome, name: str, fields: tuple[str, ...]) -> dict:
    committed = getattr(outcome, name)
    return {
        "created": outcome.created,
        "task": runonce.snapshot(committed.task, _TASK),
        name: runonce.snapshot(committed, fields),
    }


def _decode(stored: dict, model: type[TaskCheckpoint] | type[TaskReport], name: str):
    committed = runonce.restore(model, stored[name])
    committed.task = runonce.restore(Task, stored["task"])
    return committed


CHECKPOINT_RESULT = runonce.Codec[CheckpointOutcome](
    encode=lambda outcome: _encode(outcome, "checkpoint", ("stage", "data", "committed_at")),
    decode=lambda stored: CheckpointOutcome(_decode(stored, TaskCheckpoint, "checkpoint"), stored["created"], True),
)
REPORT_RESULT = runonce.Codec[ReportOutcome](
    encode=lambda outcome: _encode(outcome, "report", ("report", "published_at")),
    decode=lambda stored: ReportOutcome(_decode(stored, TaskReport, "report"), stored["created"], True),
)


def _task_for_checkpoint(scope: UserAddress, task_id: str, task_input: dict | None) -> Task:
    """The task row, locked; created with its input snapshot by the first checkpoint."""
    lookup = dict(product=scope.product, user_id=scope.user_id, task_id=task_id)
    task = Task.objects.select_for_update().filter(**lookup).first()
    if task is None:
        if task_input is None:
            raise InvalidRequest(
                "the first checkpoint of a task must carry its input snapshot", details={"field": "input"}
            )
        try:
            with transaction.atomic():
                return Task.objects.create(input=task_input, **lookup)
        except IntegrityError:  # a concurrent first checkpoint created it
            task = Task.objects.select_for_update().get(**lookup)
    if task_input is not None and fingerprint(task_input) != fingerprint(task.input):
        raise Conflict(
            "the task's input snapshot was fixed by its first checkpoint and cannot change",
            code="input_conflict",
            details={"taskId": task_id},
        )
    return task


def checkpoint_commit(
    *, scope: UserAddress, task_id: str, stage: str, data: dict, task_input: dict | None, operation: RunOnce | None
) -> CheckpointOutcome:
    """Commit `stage` once: created the first time, the original for the same data again, 409 for other data."""
    replay = runonce.replay(operation, CHECKPOINT_RESULT)
    if replay:
        return replay

    def write() -> CheckpointOutcome:
        task = _task_for_checkpoint(scope, task_id, task_input)
        existing = TaskCheckpoint.objects.filter(task=task, stage=stage).first()
        if existing is not None:
            if existing.fingerprint != fingerprint(data):
                raise Conflict(
                    f"stage {stage!r} is already committed with different data",
                    code="stage_already_committed",
                    details={"stage": stage},
                )
            existing.task = task
            return CheckpointOutcome(existing, created=False)
        checkpoint = TaskCheckpoint.objects.create(
            task=task,
            stage=stage,
            data=data,
            fingerprint=fingerprint(data),
            operation_id=operation.operation_id if operation else "",
        )
        return CheckpointOutcome(checkpoint, created=True)

    return runonce.commit(operation, write, CHECKPOINT_RESULT)


def task_report_publish(*, scope: UserAddress, task_id: str, data: dict, operation: RunOnce | None) -> ReportOutcome:
    """Publish the task's final report atomically, once; the same report again is the original, another is 409."""
    replay = runonce.replay(operation, REPORT_RESULT)
    if replay:
        return replay

    def write() -> ReportOutcome:
        task = (
            Task.objects.select_for_update()
            .filter(product=scope.product, user_id=scope.user_id, task_id=task_id)
            .first()
        )
        if task is None:
            raise Conflict(
                "a task gets its report after its first checkpoint",
                code="task_not_started",
                details={"taskId": task_id},
            )
        existing = TaskReport.objects.filter(task=task).first()
        if existing is not None:
            if existing.fingerprint != fingerprint(data):
                raise Conflict(
                    "this task's report is already published with different content",
                    code="report_already_published",
                    details={"taskId": task_id},
                )
            existing.task = task
            return ReportOutcome(existing, created=False)
        report = TaskReport.objects.create(
            task=task,
            report=data,
            fingerprint=fingerprint(data),
            operation_id=operation.operation_id if operation else "",
        )
        return ReportOutcome(report, created=True)

    return runonce.commit(operation, write, REPORT_RESULT)
