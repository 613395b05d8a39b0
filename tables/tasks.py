"""Celery interface of the tables app: thin, takes the turn's primary key, safe to run twice."""

from __future__ import annotations

from functools import partial

import redis.exceptions
from celery import shared_task
from django.db import InterfaceError, OperationalError, transaction
from django_redis.exceptions import ConnectionInterrupted

from memories.models import Turn
from tables.after_steps import after_steps_run
from tables.turn_edits import turn_table_edits_apply

# Transient: the database or the cache (whose invalidation is part of every table write) is briefly away.
TRANSIENT = (
    OperationalError,
    InterfaceError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionInterrupted,
)


@shared_task(
    name="tables.apply_table_edits",
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
    acks_late=True,
)
def apply_table_edits(turn_pk: int) -> str:
    """Extract and apply the turn's `<tableEdit>` calls, then run the after-steps; return the outcome."""
    record = turn_table_edits_apply(turn_pk=turn_pk)
    if record is None:
        return "skipped"  # the turn is gone, not committed, or its scenario has no tables
    after_steps_run(record)
    return record.outcome


def schedule_table_edits(turn_pk: int) -> bool:
    """The commit hook (runs inside the turn-commit transaction): enqueue the task once that commits."""
    sections = Turn.objects.filter(pk=turn_pk).values_list("scenario__sections", flat=True).first()
    if not (sections or {}).get("tables"):
        return False  # no table templates: nothing to extract
    # After the commit: a rolled-back turn commit schedules nothing, and the worker is sure to see the turn.
    transaction.on_commit(partial(enqueue_table_edits, turn_pk))
    return True


def enqueue_table_edits(turn_pk: int) -> None:
    apply_table_edits.delay(turn_pk)
