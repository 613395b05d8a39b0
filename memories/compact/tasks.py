"""Compaction, this app's job after a turn: the commit hook schedules it, the job calls one service
(memoryhub/turn_jobs.py runs it, retrying the database's or Redis's blips and, here, the summariser's failures)."""

from __future__ import annotations

from memories.models import Turn
from memoryhub import turn_jobs
from memoryhub.addresses import ConversationAddress
from memoryhub.clients.errors import UpstreamError

from .policy import scenario_policy
from .selectors import scenario_uses_history
from .services import compaction_due, compaction_for_turn

MAX_RETRIES = 3
# The summariser's failures, retried under this job's policy: the attempt rolled back, running it again is safe.
RETRY = turn_jobs.RetryPolicy(max_retries=MAX_RETRIES, backoff_seconds=5, backoff_max_seconds=300)
RETRIED: tuple[type[Exception], ...] = (UpstreamError,)
# The job's name: the turn's memoryWrite.work names it, and its commit hook is registered under it.
WORK = "compact"


def compaction_run(turn_pk: int, attempt: turn_jobs.Attempt, trigger: str = "threshold") -> turn_jobs.Outcome:
    """Compact; the turn's memoryWrite learns the end through turn_jobs."""
    outcome = compaction_for_turn(
        turn_pk=turn_pk, trigger=trigger, attempt=attempt.number, retries_left=attempt.retries_left
    )
    # "conflict" (another compaction was kept) and "range_changed" (a regeneration; the next prepare rebuilds)
    # leave nothing to do; "failed" (the budget leaves no room for a summary) is a failure.
    return turn_jobs.Outcome(outcome.outcome, outcome.reason if outcome.outcome == "failed" else None)


# Rows and messages written under the former task name still run (see turn_jobs.legacy_task).
compact_history_task = turn_jobs.legacy_task("compact.compact_history", WORK, params=("trigger",))


def enqueue_compaction(turn_pk: int, trigger: str) -> None:
    """The one place a compaction is enqueued: an outbox row in the turn-commit transaction (none on a
    rollback), sent once it commits and re-sent by the outbox relay until a worker has run it."""
    turn_jobs.schedule(WORK, turn_pk, trigger=trigger)


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
