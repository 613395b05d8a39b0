"""Diary planning, this app's job after a turn: takes a turn pk, calls one service (memoryhub/turn_jobs.py runs it)."""

from __future__ import annotations

from memories.models import Turn
from memoryhub import turn_jobs
from memoryhub.clients.errors import UpstreamError

from .selectors import scenario_uses_diaries
from .services import diary_plan_and_write

# Bounded: a summariser that is down for good must not keep a task alive forever. Each attempt
# leaves a plan record and a `diary.failed` event; the admin's re-plan action is the way back.
MAX_RETRIES = 4
# The summariser's failures, retried under this job's policy (the database's or Redis's blips: turn_jobs' own).
RETRY = turn_jobs.RetryPolicy(max_retries=MAX_RETRIES, backoff_seconds=5, backoff_max_seconds=300)
RETRIED: tuple[type[Exception], ...] = (UpstreamError,)
# The job's name: the turn's memoryWrite.work names it, and its commit hook is registered under it.
WORK = "diaries"


def diary_plan_run(turn_pk: int, attempt: turn_jobs.Attempt) -> str:
    """Plan (and write) the diary of the turn; the job's end reaches memoryWrite through turn_jobs."""
    return diary_plan_and_write(turn_pk=turn_pk, attempt=attempt.number, retries_left=attempt.retries_left).outcome


# Rows and messages written under the former task name still run (see turn_jobs.legacy_task).
diary_plan_task = turn_jobs.legacy_task("diaries.plan_diary", WORK)


def enqueue_diary_plan(turn_pk: int) -> bool:
    """The commit hook: an outbox row in the turn-commit transaction, sent once it commits (none on rollback).

    Turns of scenarios without diaries enqueue nothing (the service would only answer "not_configured").
    """
    turn = Turn.objects.select_related("scenario").filter(pk=turn_pk).first()
    if turn is None or not scenario_uses_diaries(turn.scenario):
        return False
    turn_jobs.schedule(WORK, turn_pk)
    return True
