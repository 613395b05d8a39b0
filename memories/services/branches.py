"""Branches of a conversation: superseding a turn takes its derived writes back; a select writes them again.

A turn is superseded when a regenerated reply replaces it (`replacesTurnId`), when one of its messages is
edited (the edit is a new turn of the same round) or deleted, and when a select makes another reply of its round
the current one (a swipe back). Each app's supersede hook then undoes what the turn wrote (tables, state, story,
compactions…) as a new revision, each kind in its own savepoint; a select then runs the reapply hooks for the
selected turn. What each kind did is kept on the turn (`Turn.rollback`, shown as `rollback` on the turn) and in
its events; a kind that could not undo because someone wrote after the turn reports `conflict` (docs/roleplay.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memories.models import Conversation, Message, Turn
from memories.services.events import event_emit_for_turn
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import Conflict, NotFound
from memoryhub.runtimes import registry
from memoryhub.timefmt import iso

LIVE = ("completed", "committed")


def awaits_accept(turn: Turn) -> bool:
    """A regeneration completed in a `commitOn: "accepted"` scenario: its reply is stored but not yet its round's
    current one (its messages are stored superseded), so the accepted reply stays current until it is accepted."""
    return (
        turn.status == "completed"
        and turn.replaces_id is not None
        and Message.objects.filter(turn_id=turn.pk, superseded=True, deleted=False).exists()
    )


def turn_supersede(turn_pk: int, *, by_turn_pk: int | None, cause: str) -> dict:
    """Inside the caller's transaction: the turn and its messages superseded, then every kind's writes undone."""
    Turn.objects.filter(pk=turn_pk).update(status="superseded")
    Message.objects.filter(turn_id=turn_pk).update(superseded=True)
    kinds = registry.run_supersede_hooks(turn_pk, by_turn_pk)
    return _record(turn_pk, "rolled_back", cause, by_turn_pk, kinds)


def _record(turn_pk: int, action: str, cause: str, other_pk: int | None, kinds: dict[str, dict]) -> dict:
    conflict = any(report.get("status") == "conflict" for report in kinds.values())
    report = {
        "action": action,
        "cause": cause,
        "byTurnId" if action == "rolled_back" else "displacedTurnId": other_pk,
        "status": "conflict" if conflict else "ok",
        "kinds": kinds,
        "at": iso(timezone.now()),
    }
    Turn.objects.filter(pk=turn_pk).update(rollback=report)
    return report


def _turns(address: ConversationAddress):
    return Turn.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )


def _locked_conversation(address: ConversationAddress) -> None:
    Conversation.objects.select_for_update(no_key=True).filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    ).first()


@dataclass(frozen=True)
class Selection:
    turn: Turn
    changed: bool
    displaced: list[dict]  # {"turnId", "rollback"} of each reply of the round it superseded


def turn_select(*, address: ConversationAddress, turn_id: int) -> Selection:
    """Make a reply of its round the current one: the round's current reply is superseded (its writes undone),
    then the selected turn's writes are applied again. Selecting the current reply changes nothing."""
    with transaction.atomic():
        _locked_conversation(address)
        turn = _turns(address).select_for_update(of=("self",), no_key=True).filter(pk=turn_id).first()
        if turn is None:
            raise NotFound(f"no turn {turn_id} in this conversation")
        if turn.status in LIVE and not awaits_accept(turn):
            return Selection(turn, False, [])
        _check_selectable(turn)
        current = list(_turns(address).filter(round=turn.round, status__in=LIVE).exclude(pk=turn.pk).order_by("pk"))
        displaced = [
            {"turnId": other.pk, "rollback": turn_supersede(other.pk, by_turn_pk=turn.pk, cause="select")}
            for other in current
        ]
        Turn.objects.filter(pk=turn.pk).update(status="committed")
        # The round shows the selected reply's messages only: also not a user message kept by its reply's delete.
        round_messages = Message.objects.filter(turn__conversation_row_id=turn.conversation_row_id, round=turn.round)
        round_messages.exclude(turn_id=turn.pk).update(superseded=True)
        Message.objects.filter(turn_id=turn.pk, deleted=False).update(superseded=False)
        other_pk = current[0].pk if current else None
        kinds = registry.run_reapply_hooks(turn.pk, other_pk)
        report = _record(turn.pk, "reapplied", "select", other_pk, kinds)
        event_emit_for_turn(
            turn, "turn.selected", {"round": turn.round, "displacedTurnIds": [d["turnId"] for d in displaced], **report}
        )
    turn.refresh_from_db()
    return Selection(turn, True, displaced)


def _check_selectable(turn: Turn) -> None:
    if turn.status != "superseded" or turn.committed_at is None:  # a regeneration awaiting accept: accept it
        raise Conflict(
            f"turn {turn.pk} is {turn.status}; only a committed reply that was superseded can be selected",
            code="turn_not_selectable",
            details={"turnId": turn.pk, "status": turn.status},
        )
    if Message.objects.filter(turn_id=turn.pk, role="assistant", deleted=True).exists():
        raise Conflict(f"turn {turn.pk}'s reply was deleted", code="turn_not_selectable", details={"turnId": turn.pk})
