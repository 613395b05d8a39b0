"""Celery interface of diary planning: takes a turn pk, calls one service, retries transient failures."""

from __future__ import annotations

from celery import shared_task

from memories.models import Turn
from memories.services.memory_write import failure_reason, memory_write_finish
from memoryhub import outbox
from memoryhub.clients.errors import UpstreamError
from memoryhub.transient import TRANSIENT_ERRORS

from .selectors import scenario_uses_diaries
from .services import diary_plan_and_write

# Bounded: a summariser that is down for good must not keep a task alive forever. Each attempt
# leaves a plan record and a `diary.failed` event; the admin's re-plan action is the way back.
MAX_RETRIES = 4
# Retried too: the summariser (UpstreamError) and the database or cache briefly away (a rolled-back plan).
RETRIED: tuple[type[Exception], ...] = (UpstreamError, *TRANSIENT_ERRORS)
# The name this app's commit hook is registered under: the turn's memoryWrite.work names it.
WORK = "diaries"


@shared_task(
    bind=True,
    name="diaries.plan_diary",
    autoretry_for=RETRIED,
    max_retries=MAX_RETRIES,
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
)
def diary_plan_task(self, turn_pk: int) -> str:
    """Plan (and write) the diary; the turn's memoryWrite learns the end (an attempt to be retried reports nothing)."""
    retries = self.request.retries or 0
    try:
        outcome = diary_plan_and_write(turn_pk=turn_pk, attempt=retries, retries_left=MAX_RETRIES - retries)
    except Exception as exc:
        if not (isinstance(exc, RETRIED) and retries < MAX_RETRIES):
            memory_write_finish(turn_pk=turn_pk, work=WORK, failure=failure_reason(exc))
        raise
    memory_write_finish(turn_pk=turn_pk, work=WORK)
    return outcome.outcome


def enqueue_diary_plan(turn_pk: int) -> bool:
    """The commit hook: an outbox row in the turn-commit transaction, sent once it commits (none on rollback).

    Turns of scenarios without diaries enqueue nothing (the service would only answer "not_configured").
    """
    turn = Turn.objects.select_related("scenario").filter(pk=turn_pk).first()
    if turn is None or not scenario_uses_diaries(turn.scenario):
        return False
    outbox.schedule(diary_plan_task.name, {"turn_pk": turn_pk}, dedup_key=f"{diary_plan_task.name}:{turn_pk}")
    return True
