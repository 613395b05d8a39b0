"""Re-sending a failed Hinos commit (the admin action): explicit, once per acknowledgement, never blind.

The `memory.write_failed` event keeps the claim id. A re-send posts the turn's commit again; on
`committed: true` the receipt is stored on the turn (so nothing sends it a third time) and a turn
left "completed" by `memoryIngest: required` is committed now — hooks and `turn.completed` included.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Literal

from django.utils import timezone

from memories.hinos.runtime import (
    FAILED_EVENT,
    commit_acknowledged,
    hinos_state,
    mark_acknowledged,
    record_commit_failure,
    send_commit,
)
from memories.models import Event, Turn
from memories.services.events import event_emit_for_turn
from memories.services.turns import turn_commit
from memoryhub.admin_base import log_actions
from memoryhub.clients.errors import UpstreamError
from memoryhub.errors import Conflict

Status = Literal["committed", "already_committed", "failed", "not_resendable"]


@dataclass(frozen=True)
class ResendOutcome:
    status: Status
    message: str


def hinos_commit_resend(*, event: Event, actor: str) -> ResendOutcome:
    turns = Turn.objects.select_related("scenario", "product")
    turn = None if event.turn_id is None else turns.filter(pk=event.turn_id, product_id=event.product_id).first()
    refusal = _refusal(event, turn)
    if refusal or turn is None:
        return ResendOutcome("not_resendable", refusal or "the turn of this event is gone")
    if commit_acknowledged(turn):
        return ResendOutcome("already_committed", f"turn {turn.pk}: the Hinos service acknowledged this claim already")
    try:
        send_commit(turn)
    except UpstreamError as exc:
        record_commit_failure(turn, exc, resendOf=event.pk, actor=actor)
        return ResendOutcome("failed", f"turn {turn.pk}: the re-sent commit failed again: {exc.message}")
    mark_acknowledged(turn)
    event_emit_for_turn(
        turn, "memory.write_resent", {"claim_id": hinos_state(turn)["claim_id"], "actor": actor, "eventId": event.pk}
    )
    _finish(turn, actor)
    return ResendOutcome("committed", f"turn {turn.pk}: the Hinos service acknowledged the re-sent commit")


def _refusal(event: Event, turn: Turn | None) -> str | None:
    if event.type != FAILED_EVENT or turn is None or turn.runtime != "hinos":
        return f"event {event.pk} is not a failed Hinos commit of an existing turn"
    if event.details.get("claim_id") != hinos_state(turn).get("claim_id"):
        return f"event {event.pk}: its claim id is not the turn's"
    if turn.status not in ("completed", "committed"):
        return f"event {event.pk}: the turn is {turn.status}"
    return None


def _finish(turn: Turn, actor: str) -> None:
    if turn.status == "completed":  # memoryIngest "required" held the turn back: commit it now
        with contextlib.suppress(Conflict):  # committed meanwhile (e.g. by /accept)
            turn_commit(turn=turn)  # the runtime sees the stored receipt and does not send again
        return
    write = {"status": "committed", "reason": f"re-sent by {actor} at {timezone.now().isoformat()}"}
    Turn.objects.filter(pk=turn.pk).update(memory_write=write)


# The permission a re-send needs: the change permission of the failed commit (view is never enough).
RESEND_PERMISSION = "hinos.change_failedhinoscommit"


def hinos_commit_resend_audited(*, event: Event, user) -> ResendOutcome:
    """Re-send the commit of a failed Hinos event as the operator `user`, recorded as an admin LogEntry."""
    outcome = hinos_commit_resend(event=event, actor=f"operator:{user.get_username()}")
    log_actions(user, [event], f"Re-sent the Hinos commit: {outcome.status} — {outcome.message}")
    return outcome
