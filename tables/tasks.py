"""Celery interface of the tables app: thin, takes the turn's primary key, safe to run twice."""

from __future__ import annotations

from celery import shared_task

from memories.models import Turn
from memories.services.memory_write import failure_reason, memory_write_finish
from memoryhub import outbox
from memoryhub.transient import TRANSIENT_ERRORS
from tables.after_steps import after_steps_run
from tables.turn_edits import turn_table_edits_apply

# The name this app's commit hook is registered under: the turn's memoryWrite.work names it.
WORK = "tables"


@shared_task(
    bind=True,
    name="tables.apply_table_edits",
    autoretry_for=TRANSIENT_ERRORS,  # the database or the cache (every table write invalidates it) briefly away
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
    acks_late=True,
)
def apply_table_edits(self, turn_pk: int) -> str:
    """Extract and apply the turn's `<tableEdit>` calls, then run the after-steps; return the outcome.

    The turn's memoryWrite learns the end: done, or failed on a conflict that wrote nothing and on the
    last failed attempt (an attempt that will be retried reports nothing).
    """
    try:
        record = turn_table_edits_apply(turn_pk=turn_pk)
    except Exception as exc:
        if not (isinstance(exc, TRANSIENT_ERRORS) and (self.request.retries or 0) < (self.max_retries or 0)):
            memory_write_finish(turn_pk=turn_pk, work=WORK, failure=failure_reason(exc))
        raise
    if record is None:
        memory_write_finish(turn_pk=turn_pk, work=WORK)
        return "skipped"  # the turn is gone, not committed, or its scenario has no tables
    conflict = "the tables changed twice while the edits were applied; nothing was written (table.conflict)"
    memory_write_finish(turn_pk=turn_pk, work=WORK, failure=conflict if record.outcome == "conflict" else None)
    after_steps_run(record)  # the webhook export: its failure never undoes the table write
    return record.outcome


def schedule_table_edits(turn_pk: int) -> bool:
    """The commit hook (runs inside the turn-commit transaction): an outbox row, sent once that commits."""
    sections = Turn.objects.filter(pk=turn_pk).values_list("scenario__sections", flat=True).first()
    if not (sections or {}).get("tables"):
        return False  # no table templates: nothing to extract
    # An outbox row in this transaction, sent after the commit: a rolled-back turn commit schedules nothing,
    # the worker is sure to see the turn, and a broker outage at that moment loses nothing (the relay re-sends).
    outbox.schedule(apply_table_edits.name, {"turn_pk": turn_pk}, dedup_key=f"{apply_table_edits.name}:{turn_pk}")
    return True
