"""Celery interface of compaction: the commit hook schedules it, the task calls one service."""

from __future__ import annotations

from celery import shared_task

from memories.models import Turn
from memories.services.memory_write import failure_reason, memory_write_finish
from memoryhub import outbox
from memoryhub.addresses import ConversationAddress
from memoryhub.clients.errors import UpstreamError
from memoryhub.transient import TRANSIENT_ERRORS

from .policy import scenario_policy
from .selectors import scenario_uses_history
from .services import compaction_due, compaction_for_turn

MAX_RETRIES = 3
# The summariser's failures and the database's or Redis's blips: the attempt rolled back, running it again is safe.
RETRIED: tuple[type[Exception], ...] = (UpstreamError, *TRANSIENT_ERRORS)
# The name the commit hook is registered under.
WORK = "compact"


@shared_task(
    bind=True,
    name="compact.compact_history",
    autoretry_for=RETRIED,
    max_retries=MAX_RETRIES,
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
)
def compact_history_task(self, turn_pk: int, trigger: str = "threshold") -> str:
    """Compact; the turn's memoryWrite learns the end (an attempt that will be retried reports nothing)."""
    retries = self.request.retries or 0
    try:
        outcome = compaction_for_turn(
            turn_pk=turn_pk, trigger=trigger, attempt=retries, retries_left=MAX_RETRIES - retries
        )
    except Exception as exc:
        if not (isinstance(exc, RETRIED) and retries < MAX_RETRIES):
            memory_write_finish(turn_pk=turn_pk, work=WORK, failure=failure_reason(exc))
        raise
    # "conflict" (another compaction was kept) and "range_changed" (a regeneration; the next prepare rebuilds)
    # leave nothing to do; "failed" (the budget leaves no room for a summary) is a failure.
    memory_write_finish(turn_pk=turn_pk, work=WORK, failure=outcome.reason if outcome.outcome == "failed" else None)
    return outcome.outcome


def enqueue_compaction(turn_pk: int, trigger: str) -> None:
    """The one place a compaction is enqueued: an outbox row in the turn-commit transaction (none on a
    rollback), sent once it commits and re-sent by the outbox relay until a worker has run it."""
    name = compact_history_task.name
    outbox.schedule(name, {"turn_pk": turn_pk, "trigger": trigger}, dedup_key=f"{name}:{turn_pk}")


def schedule_compaction(turn_pk: int) -> bool:
    """The commit hook: a checkpoint round, or history past 80 % of the budget, schedules a compaction."""
    turn = Turn.objects.select_related("product", "scenario").filter(pk=turn_pk).first()
    if turn is None or not scenario_uses_history(turn.scenario):
        return False
    address = ConversationAddress(turn.product, turn.user_id, turn.conversation_id)
    trigger = compaction_due(address=address, policy=scenario_policy(turn.scenario), round_number=turn.round)
    if trigger is None:
        return False
    enqueue_compaction(turn_pk, trigger)
    return True
