"""The audit, this app's job after a turn (memoryhub/turn_jobs.py runs it): idempotent under redelivery."""

from __future__ import annotations

from django.db import transaction

from memories.models import Event, Turn
from memories.services.events import event_emit_for_turn
from memoryhub import turn_jobs

BACKGROUND_DONE = "turn.background_done"


def turn_background_done_record(*, turn_pk: int) -> bool:
    """Record once that the background work of a committed turn ran; False when already recorded or gone.

    The turn row is locked so that two deliveries of the same task running at once cannot both
    see "no event yet" and both insert (a database lock, not a check in Python alone).
    """
    with transaction.atomic():
        # The turn row only (not the joined product: FOR UPDATE on it would block every insert under the product),
        # FOR NO KEY UPDATE: inserts referencing the turn (FK checks take KEY SHARE) do not wait (docs/production.md).
        turn = (
            Turn.objects.select_for_update(of=("self",), no_key=True)
            .select_related("product")
            .filter(pk=turn_pk)
            .first()
        )
        if turn is None:
            return False  # the turn (or its product) was deleted meanwhile: nothing to record
        if Event.objects.filter(turn_id=turn_pk, type=BACKGROUND_DONE).exists():
            return False
        event_emit_for_turn(turn, BACKGROUND_DONE, {"round": turn.round})
    return True


# The audit's job name (memoryhub/turn_jobs.py); its commit hook is registered under the old task name, which
# `turn.completed`'s "scheduled" list never names (the audit reports nothing: it is not memory work).
AUDIT = "audit"


def turn_committed_audit_run(turn_pk: int, attempt: turn_jobs.Attempt) -> bool:
    """The audit job: record once that the background work of the turn ran."""
    return turn_background_done_record(turn_pk=turn_pk)


# Rows and messages written under the former task name still run (see turn_jobs.legacy_task).
turn_committed_audit = turn_jobs.legacy_task("memories.turn_committed_audit", AUDIT)


def enqueue_turn_committed_audit(turn_pk: int) -> bool:
    """The commit hook: an outbox row in the turn-commit transaction, sent once it commits (none on rollback)."""
    turn_jobs.schedule(AUDIT, turn_pk)
    return False  # bookkeeping, not a memory write: it must not make memoryWrite "pending"
