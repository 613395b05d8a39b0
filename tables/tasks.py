"""Table edits, this app's job after a turn: takes the turn's primary key, safe to run twice (memoryhub/turn_jobs.py
runs it and retries the database's or the cache's blips: every table write invalidates the cache)."""

from __future__ import annotations

from django.utils.translation import gettext as _

from memories.models import Turn
from memoryhub import turn_jobs
from tables.after_steps import after_steps_run
from tables.models import TableEditRecord
from tables.turn_edits import turn_table_edits_apply

# The job's name: the turn's memoryWrite.work names it, and its commit hook is registered under it.
WORK = "tables"
CONFLICT = "the tables changed twice while the edits were applied; nothing was written (table.conflict)"


def table_edits_run(turn_pk: int, attempt: turn_jobs.Attempt) -> turn_jobs.Outcome:
    """Extract and apply the turn's `<tableEdit>` calls, then run the after-steps; return the outcome.

    The turn's memoryWrite learns the end: done, or failed on a conflict that wrote nothing.
    """
    record = turn_table_edits_apply(turn_pk=turn_pk)
    if record is None:
        return turn_jobs.Outcome("skipped")  # the turn is gone, not committed, or its scenario has no tables
    failure = CONFLICT if record.outcome == "conflict" else None
    # The webhook export runs once the end is reported: its failure never undoes the table write.
    return turn_jobs.Outcome(record.outcome, failure, then=lambda: after_steps_run(record))


def table_edits_rerun_refusal(turn_pk: int) -> str | None:
    """The console's re-run is refused after a conflict: the operator reads why (in their language)."""
    if TableEditRecord.objects.filter(turn_id=turn_pk, outcome="conflict").exists():
        return _(
            "the table edits lost a version race twice and wrote nothing; re-applying them later could undo "
            "newer edits — edit the table by hand instead"
        )
    return None


# Rows and messages written under the former task name still run (see turn_jobs.legacy_task).
apply_table_edits = turn_jobs.legacy_task("tables.apply_table_edits", WORK)


def schedule_table_edits(turn_pk: int) -> bool:
    """The commit hook (runs inside the turn-commit transaction): an outbox row, sent once that commits."""
    sections = Turn.objects.filter(pk=turn_pk).values_list("scenario__sections", flat=True).first()
    if not (sections or {}).get("tables"):
        return False  # no table templates: nothing to extract
    turn_jobs.schedule(WORK, turn_pk)
    return True
