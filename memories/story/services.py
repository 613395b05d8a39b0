"""Story settlements and rollbacks, each one compare-and-set write on the conversation's snapshot.

A settlement (after the reply is confirmed) is checked in one transaction that holds the snapshot row's lock:
`expectedVersion` is current (else 409 `revision_conflict`); the anchor is an assistant message of this
conversation whose turn is committed, not superseded and later than the current anchor (else 409
`anchor_conflict`, `details.reason` saying which); then version + 1 with its history row, the `story.settled`
event and the operationId's run-once record. A regenerated reply rolls the snapshots anchored on the message
it supersedes back (`story_rollback_superseded`, the registered supersede hook), keeping every version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from memories.models import Message, Turn
from memories.services import runonce
from memories.services.events import event_emit
from memories.services.runonce import RunOnce
from memoryhub import cas, metrics, working_set
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import Conflict, RevisionConflict
from memoryhub.events import publish as publish_event

from .models import StorySnapshot, StoryVersion
from .selectors import assistant_message_ids, restore_point, snapshot_to_dict

STORY_VARIABLE = "story"
SETTLED_EVENT = "story.settled"
ROLLED_BACK_EVENT = "story.rolled_back"
REAPPLIED_EVENT = "story.reapplied"


class AnchorConflict(Conflict):
    """The settlement's anchor message is not a valid anchor now; `details.reason` says why."""

    code = "anchor_conflict"


def story_scope(address: ConversationAddress) -> working_set.Scope:
    return address.scope(STORY_VARIABLE)


@dataclass(frozen=True)
class Settlement:
    expected_version: int
    anchor_message_id: int
    set_facts: dict[str, Any] = field(default_factory=dict)
    unset_facts: tuple[str, ...] = ()
    append_events: tuple[str, ...] = ()
    narrative: dict[str, Any] | None = None
    operation_id: str | None = None


@dataclass(frozen=True)
class SettlementOutcome:
    story: dict[str, Any]
    replayed: bool = False


RESULT = runonce.Codec[SettlementOutcome](
    encode=lambda outcome: {"story": outcome.story},
    decode=lambda stored: SettlementOutcome(stored["story"], replayed=True),
)


def story_settle(
    *, address: ConversationAddress, settlement: Settlement, actor: Actor, request_hash: str
) -> SettlementOutcome:
    operation = (
        RunOnce.operation(address.product, address.user_id, settlement.operation_id, "story.settle", request_hash)
        if settlement.operation_id
        else None
    )
    return runonce.run_once(operation, lambda: _settle(address, settlement, actor), RESULT)


def _locked_snapshot(address: ConversationAddress) -> StorySnapshot:
    key = {"product": address.product, "user_id": address.user_id, "conversation_id": address.conversation_id}
    # get_or_create first: a row that does not exist cannot be locked; a concurrent creator waits on the index.
    StorySnapshot.objects.get_or_create(**key)
    return StorySnapshot.objects.select_for_update().get(**key)


def _versioned(row: StorySnapshot) -> cas.Versioned:
    return cas.Versioned(
        StorySnapshot,
        {"pk": row.pk},
        kind="story_snapshot",
        field="version",
        conflict_message="the story is at version {current}; re-read it and settle again",
    )


def _settle(address: ConversationAddress, settlement: Settlement, actor: Actor) -> SettlementOutcome:
    """Inside run_once's transaction: lock, check the version, check the anchor, compare-and-set."""
    row = _locked_snapshot(address)
    if row.version != settlement.expected_version:
        metrics.CONFLICTS.labels(kind="story_snapshot").inc()
        raise RevisionConflict(
            row.version, versioned=True, message=f"the story is at version {row.version}; re-read it and settle again"
        )
    anchor = _checked_anchor(address, row, settlement.anchor_message_id)
    facts = {k: v for k, v in row.world_facts.items() if k not in settlement.unset_facts} | settlement.set_facts
    events = list(row.events)
    new_ids = []
    for number, text in enumerate(settlement.append_events, start=row.event_sequence + 1):
        new_ids.append(f"ev-{number}")
        events.append({"id": f"ev-{number}", "text": text, "round": anchor.round, "messageId": anchor.pk})
    narrative = row.narrative if settlement.narrative is None else settlement.narrative
    changes = {
        "setFacts": sorted(settlement.set_facts),
        "unsetFacts": sorted(k for k in settlement.unset_facts if k in row.world_facts),
        "appendedEvents": new_ids,
        "narrativeChanged": narrative != row.narrative,
    }
    values = {
        "anchor_message_id": anchor.pk,
        "world_facts": facts,
        "events": events,
        "narrative": narrative,
    }
    version = cas.compare_and_set(
        _versioned(row),
        settlement.expected_version,
        changes={**values, "event_sequence": row.event_sequence + len(new_ids), "updated_at": timezone.now()},
        history=lambda version: StoryVersion.objects.create(
            product=address.product,
            snapshot=row,
            version=version,
            cause="settlement",
            changes=changes,
            actor=str(actor)[:200],
            operation_id=settlement.operation_id or "",
            **values,
        ),
        invalidate=[story_scope(address)],
    )
    event_emit(
        product=address.product,
        user_id=address.user_id,
        conversation_id=address.conversation_id,
        type=SETTLED_EVENT,
        turn=anchor.turn,
        details={
            "version": version,
            "anchorMessageId": anchor.pk,
            "round": anchor.round,
            **changes,
            "actor": str(actor),
            **({"operationId": settlement.operation_id} if settlement.operation_id else {}),
        },
    )
    publish_event(
        address.product,
        "story.settled",
        user=address.user_id,
        conversation=address.conversation_id,
        data={"version": version, "anchorMessageId": anchor.pk, "round": anchor.round},
    )
    return SettlementOutcome(
        {
            "version": version,
            "anchorMessageId": anchor.pk,
            "worldFacts": facts,
            "events": events,
            "narrative": narrative,
        }
    )


def _checked_anchor(address: ConversationAddress, row: StorySnapshot, message_id: int) -> Message:
    message = (
        Message.objects.select_related("turn__scenario")
        .filter(
            pk=message_id,
            product=address.product,
            user_id=address.user_id,
            conversation_id=address.conversation_id,
        )
        .first()
    )
    current = row.anchor_message_id
    details: dict[str, Any] = {"anchorMessageId": message_id, "currentAnchorMessageId": current}
    if message is None:
        raise AnchorConflict(
            f"message {message_id} is not a message of this conversation",
            details={**details, "reason": "not_in_conversation"},
        )
    details |= {"turnId": message.turn_id, "round": message.round}
    if message.role != "assistant":
        raise AnchorConflict(
            f"message {message_id} is a {message.role} message; a story is anchored on an assistant reply",
            details={**details, "reason": "not_assistant"},
        )
    if message.superseded:
        raise AnchorConflict(
            f"message {message_id} was superseded by a regenerated reply; settle on the new reply",
            details={**details, "reason": "superseded"},
        )
    turn = message.turn
    if turn.status != "committed":
        accepted = turn.scenario is not None and turn.scenario.commit_on == "accepted"
        hint = "accept the turn first (its scenario commits on accept)" if accepted else "its turn is not committed"
        raise AnchorConflict(
            f"message {message_id} is not confirmed: {hint}",
            details={**details, "reason": "uncommitted", "turnStatus": turn.status},
        )
    if current is not None and not _later(message, current):
        raise AnchorConflict(
            f"message {message_id} is not later than the story's current anchor {current}",
            details={**details, "reason": "not_later"},
        )
    return message


def _later(message: Message, current_id: int) -> bool:
    """Later in the conversation than the current anchor: by round, then id (a re-settled edited round's reply has
    a newer id than the rounds after it, and comes before them)."""
    current_round = Message.objects.filter(pk=current_id).values_list("round", flat=True).first()
    if current_round is None:
        return message.pk > current_id
    return (message.round, message.pk) > (current_round, current_id)


# --- rollback on regeneration ----------------------------------------------------------------------------


def story_rollback_superseded(superseded_turn_pk: int, new_turn_pk: int | None) -> dict[str, Any] | None:
    """The supersede hook: inside the transaction superseding a turn, roll the snapshots anchored on its reply back
    to the newest version whose anchor is still valid. Returns a report (None when nothing was anchored on it)."""
    turn = Turn.objects.select_related("product").filter(pk=superseded_turn_pk).first()
    if turn is None:
        return None
    address = ConversationAddress(turn.product, turn.user_id, turn.conversation_id)
    row = _locked_row(address)
    if row is None or row.version == 0:
        return None
    invalid = assistant_message_ids(superseded_turn_pk)
    point = restore_point(row, invalid)
    if point is None:
        return None
    restore, first_bad = point
    restored = snapshot_to_dict(restore)
    discarded = list(
        StoryVersion.objects.filter(snapshot=row, rolled_back=False, version__gte=first_bad.version)
        .order_by("version")
        .values_list("version", flat=True)
    )
    StoryVersion.objects.filter(snapshot=row, version__in=discarded).update(rolled_back=True)
    changes = {"rolledBack": discarded, "supersededMessageIds": invalid, "supersededTurnId": superseded_turn_pk}
    version = _restore(address, row, turn, restored, "rollback", changes, new_turn_pk)
    details = {
        "fromVersion": row.version,
        "version": version,
        "restoredFrom": restored["version"],
        "rolledBack": discarded,
        "supersededTurnId": superseded_turn_pk,
        "supersededMessageIds": invalid,
        "regeneratedBy": new_turn_pk,
    }
    _emit(address, turn, ROLLED_BACK_EVENT, details)
    return {"status": "rolled_back", **details}


def story_reapply_selected(selected_turn_pk: int, displaced_turn_pk: int | None) -> dict[str, Any] | None:
    """The reapply hook: a select made the turn current again; when the story is still as the turn's rollback
    left it, the version that rollback discarded comes back as a new version (`cause: reapply`)."""
    turn = Turn.objects.select_related("product").filter(pk=selected_turn_pk).first()
    if turn is None:
        return None
    address = ConversationAddress(turn.product, turn.user_id, turn.conversation_id)
    row = _locked_row(address)
    rollback = StoryVersion.objects.filter(snapshot=row, turn=turn).order_by("-version").first() if row else None
    if row is None or rollback is None or rollback.cause != "rollback":
        return None
    details: dict[str, Any] = {"fromVersion": row.version, "rollbackVersion": rollback.version}
    if _content(row) != _content(rollback):
        details |= {"status": "conflict", "reason": "the story was settled again after this turn's rollback"}
        _emit(address, turn, "story.rollback_conflict", {**details, "action": "reapply"})
        return details
    before = StoryVersion.objects.get(snapshot=row, version=rollback.version - 1)
    changes = {"restoredVersion": before.version, "selectedTurnId": selected_turn_pk}
    version = _restore(address, row, turn, snapshot_to_dict(before), "reapply", changes, displaced_turn_pk)
    details |= {"version": version, "restoredFrom": before.version, "displacedTurnId": displaced_turn_pk}
    _emit(address, turn, REAPPLIED_EVENT, details)
    return {"status": "reapplied", **details}


def _locked_row(address: ConversationAddress) -> StorySnapshot | None:
    return (
        StorySnapshot.objects.select_for_update()
        .filter(product=address.product, user_id=address.user_id, conversation_id=address.conversation_id)
        .first()
    )


def _content(row: StorySnapshot | StoryVersion) -> tuple:
    return row.anchor_message_id, row.world_facts, row.events, row.narrative


def _restore(
    address: ConversationAddress,
    row: StorySnapshot,
    turn: Turn,
    restored: dict[str, Any],
    cause: str,
    changes: dict[str, Any],
    other_pk: int | None,
) -> int:
    values = {
        "anchor_message_id": restored["anchorMessageId"],
        "world_facts": restored["worldFacts"],
        "events": restored["events"],
        "narrative": restored["narrative"],
    }
    return cas.compare_and_set(
        _versioned(row),
        row.version,
        changes={**values, "updated_at": timezone.now()},
        history=lambda version: StoryVersion.objects.create(
            product=address.product,
            snapshot=row,
            version=version,
            cause=cause,
            restored_from=restored["version"],
            changes=changes,
            actor=f"turn:{other_pk}" if other_pk else "delete",
            turn=turn,
            **values,
        ),
        invalidate=[story_scope(address)],
    )


def _emit(address: ConversationAddress, turn: Turn, type: str, details: dict[str, Any]) -> None:
    where = {"user_id": address.user_id, "conversation_id": address.conversation_id}
    event_emit(product=address.product, **where, type=type, details=details, turn=turn)
    data = {"turnId": turn.pk, **{k: v for k, v in details.items() if k != "reason"}}
    publish_event(address.product, type, user=address.user_id, conversation=address.conversation_id, data=data)
