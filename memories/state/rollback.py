"""A superseded turn's state commits taken back, and a selected turn's written again (docs/roleplay.md).

A candidate sent with `turnId` records its turn on its revision. When that turn is superseded, the state returns
to the revision before the turn's first live commit, as a new revision (`cause: rollback`), compare-and-set on the
revision read under the row's lock; a later commit by anyone else is a conflict, reported and not forced. A select
writes the turn's content back (`cause: reapply`) when the state is still what its rollback left.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memories.models import Turn
from memories.services.events import event_emit_for_turn
from memoryhub import cas
from memoryhub.addresses import ConversationAddress
from memoryhub.events import publish as publish_event
from memoryhub.rollback import REAPPLY, ROLLBACK, Plan, Step, plan_redo, plan_undo

from .models import ConversationState, ConversationStateRevision
from .selectors import conversation_rounds
from .services import state_scope

KIND = "state"


def state_undo_turn(turn_pk: int, by_turn_pk: int | None) -> dict[str, Any] | None:
    """The supersede hook: take the turn's live commits back (None when it committed nothing)."""
    return _run(turn_pk, by_turn_pk, ROLLBACK)


def state_redo_turn(turn_pk: int, displaced_turn_pk: int | None) -> dict[str, Any] | None:
    """The reapply hook: write the selected turn's commits back (None when none was rolled back)."""
    return _run(turn_pk, displaced_turn_pk, REAPPLY)


def _run(turn_pk: int, other_pk: int | None, cause: str) -> dict[str, Any] | None:
    turn = Turn.objects.select_related("product").filter(pk=turn_pk).first()
    if turn is None:
        return None
    row = (
        ConversationState.objects.select_for_update()
        .filter(product=turn.product, user_id=turn.user_id, conversation_id=turn.conversation_id)
        .first()
    )
    if row is None:
        return None
    history = _history(row)
    plan = plan_undo(history, turn_pk, row.revision) if cause == ROLLBACK else plan_redo(history, turn_pk, row.revision)
    if plan.status == "nothing":
        return None
    if plan.status == "apply" and cause == REAPPLY and _content(row) != _content_at(row, plan.revisions[0]):
        plan = Plan("conflict", revisions=plan.revisions, current=row.revision, reason=_CHANGED)
    if plan.status == "conflict":
        return _conflict(turn, other_pk, cause, plan)
    return _write(turn, row, other_pk, cause, plan)


_CHANGED = "the state changed after this turn's rollback"


def _history(row: ConversationState) -> list[Step]:
    revisions = ConversationStateRevision.objects.filter(state=row).values_list("revision", "turn_id", "cause")
    return [Step(revision, turn_id, cause) for revision, turn_id, cause in revisions]


def state_as_rolled_back(address: ConversationAddress, turn_pk: int) -> dict[str, Any] | None:
    """The state as superseding `turn_pk` will leave it (what a regeneration of its reply is prompted with), or
    None when that rollback would change nothing: the turn committed nothing live, or someone wrote after it."""
    row = (
        ConversationState.objects.filter(
            product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        .only("pk", "revision")
        .first()
    )
    if row is None:
        return None
    history = _history(row)
    plan = plan_undo(history, turn_pk, row.revision)
    if plan.status != "apply" or plan.restore is None:
        return None
    text, records = _content_at(row, plan.restore)
    return {"revision": row.revision, "text": text, "records": records}


def _content(row: ConversationState | ConversationStateRevision) -> tuple[str, list]:
    return row.text, row.records


def _content_at(row: ConversationState, revision: int) -> tuple[str, list]:
    if revision == 0:
        return "", []
    stored = ConversationStateRevision.objects.get(state=row, revision=revision)
    return _content(stored)


def _write(turn: Turn, row: ConversationState, other_pk: int | None, cause: str, plan: Plan) -> dict[str, Any]:
    assert plan.restore is not None
    text, records = _content_at(row, plan.restore)
    address = ConversationAddress(turn.product, turn.user_id, turn.conversation_id)
    revision = cas.compare_and_set(
        cas.Versioned(ConversationState, {"pk": row.pk}, kind="conversation_state"),
        row.revision,
        changes={"text": text, "records": records, "updated_at": timezone.now()},
        history=lambda revision: ConversationStateRevision.objects.create(
            product=turn.product,
            state=row,
            revision=revision,
            text=text,
            records=records,
            changes={"textChanged": text != row.text, "revisions": list(plan.revisions)},
            scenario_slug=turn.scenario_slug,
            round=conversation_rounds(address),
            actor=f"turn:{other_pk}" if other_pk else "delete",
            cause=cause,
            turn=turn,
            restored_from=plan.restore,
        ),
        invalidate=[state_scope(address)],
    )
    report = {
        "status": "rolled_back" if cause == ROLLBACK else "reapplied",
        "fromRevision": row.revision,
        "revision": revision,
        "restoredFrom": plan.restore,
        "revisions": list(plan.revisions),
    }
    _emit(turn, f"{KIND}.{report['status']}", report, other_pk, cause)
    return report


def _conflict(turn: Turn, other_pk: int | None, cause: str, plan: Plan) -> dict[str, Any]:
    report = {
        "status": "conflict",
        "action": cause,
        "currentRevision": plan.current,
        "revisions": list(plan.revisions),
        "reason": plan.reason,
    }
    _emit(turn, f"{KIND}.rollback_conflict", report, other_pk, cause)
    return report


def _emit(turn: Turn, type: str, report: dict[str, Any], other_pk: int | None, cause: str) -> None:
    other = {"byTurnId" if cause == ROLLBACK else "displacedTurnId": other_pk}
    event_emit_for_turn(turn, type, {**report, **other, "round": turn.round})
    data = {"turnId": turn.pk, **other, **{k: v for k, v in report.items() if k != "reason"}}
    publish_event(turn.product, type, user=turn.user_id, conversation=turn.conversation_id, data=data)
