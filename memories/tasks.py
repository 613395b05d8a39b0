"""Celery interface of this app: thin tasks taking ids, idempotent under redelivery (acks_late)."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from memories.models import Event, Turn
from memories.services.events import event_emit_for_turn
from memoryhub import outbox
from memoryhub.transient import TRANSIENT_ERRORS

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


@shared_task(
    name="memories.turn_committed_audit",
    acks_late=True,
    autoretry_for=TRANSIENT_ERRORS,  # the database briefly away: retried, not lost (memoryhub/transient.py)
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def turn_committed_audit(turn_pk: int) -> bool:
    return turn_background_done_record(turn_pk=turn_pk)


def enqueue_turn_committed_audit(turn_pk: int) -> bool:
    """The commit hook: an outbox row in the turn-commit transaction, sent once it commits (none on rollback)."""
    outbox.schedule(turn_committed_audit.name, {"turn_pk": turn_pk}, dedup_key=f"{turn_committed_audit.name}:{turn_pk}")
    return False  # bookkeeping, not a memory write: it must not make memoryWrite "pending"
