"""Conversation state writes: a candidate is validated, version-checked and committed by compare-and-set.

Order (issue 11): validation first (422 `invalid_state_candidate`, nothing stored), then the version check
(409 `revision_conflict` with currentRevision), then the commit → revision + 1, its history row, the
`state.committed` event and the operationId's run-once record in one transaction. The working-set entry of
`conversationState` is invalidated before the write (memoryhub.cas), so a prepare never serves an old state.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memories.models import Turn
from memories.services import runonce
from memories.services.events import event_emit
from memories.services.runonce import RunOnce
from memoryhub import cas, working_set
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import Conflict
from memoryhub.events import publish as publish_event

from .models import ConversationState, ConversationStateRevision
from .selectors import conversation_rounds, scenario_state_config, state_row, state_rules
from .validation import (
    Candidate,
    InvalidStateCandidate,
    StateConfig,
    check_against_config,
    check_edit,
    check_record_counts,
    edit_as_candidate,
    parse_candidate,
    validate_records,
)

STATE_VARIABLE = "conversationState"
COMMITTED_EVENT = "state.committed"


def state_scope(address: ConversationAddress) -> working_set.Scope:
    return address.scope(STATE_VARIABLE)


@dataclass(frozen=True)
class StateOutcome:
    revision: int
    replayed: bool = False


RESULT = runonce.Codec[StateOutcome](
    encode=lambda outcome: {"revision": outcome.revision},
    decode=lambda stored: StateOutcome(stored["revision"], replayed=True),
)


def state_candidate_submit(
    *, address: ConversationAddress, body: object, actor: Actor, request_hash: str
) -> StateOutcome:
    """Validate, version-check and commit one candidate (the body as the client sent it)."""
    candidate = parse_candidate(body)
    operation = (
        RunOnce.operation(address.product, address.user_id, candidate.operation_id, "state.candidate", request_hash)
        if candidate.operation_id
        else None
    )
    replayed = runonce.replay(operation, RESULT)
    if replayed is not None:
        return replayed
    config = scenario_state_config(address.product, candidate.scenario_id)
    if config is None:
        raise InvalidStateCandidate([("scenarioId", f"scenario {candidate.scenario_id!r} has no state section")])
    check_against_config(candidate, config)
    turn = _candidate_turn(address, candidate.turn_id)
    return runonce.commit(
        operation, lambda: _commit(address, candidate, config, actor, candidate.operation_id or "", turn), RESULT
    )


def _candidate_turn(address: ConversationAddress, turn_id: int | None) -> Turn | None:
    """The turn a candidate names: one of this conversation's, and not superseded (its writes were taken back)."""
    if turn_id is None:
        return None
    turn = Turn.objects.filter(
        pk=turn_id, product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    ).first()
    if turn is None:
        raise InvalidStateCandidate([("turnId", f"no turn {turn_id} in this conversation")])
    if turn.status == "superseded":
        raise Conflict(
            f"turn {turn_id} was superseded; derive the candidate from the current reply",
            code="turn_superseded",
            details={"turnId": turn_id},
        )
    return turn


def state_edit_check(
    *, address: ConversationAddress, base_revision: int, text: str, records: object
) -> tuple[Candidate, StateConfig | None]:
    """An operator's edit (the admin) as the candidate it amounts to, refused where the API refuses that candidate.

    The records' shape is checked like upserts; the text, the added or changed records and the counts per
    category against the state's scenario (selectors.state_rules) with the API's own checks. Raises
    InvalidStateCandidate; the admin form calls it so a refused edit is a form error, and state_replace again.
    """
    clean = validate_records(records)
    row = state_row(address)
    before = row.records if row else []
    rules = state_rules(address)
    edit = edit_as_candidate(
        scenario_id=rules[0] if rules else "",
        base_revision=base_revision,
        text=text,
        records=clean,
        before_text=row.text if row else "",
        before=before,
    )
    if rules is not None:
        check_edit(edit, rules[1], before)
    return edit.candidate, rules[1] if rules else None


def state_replace(
    *, address: ConversationAddress, base_revision: int, text: str, records: object, actor: Actor
) -> StateOutcome:
    """An operator's edit (the admin): the whole text and records, checked by state_edit_check, compare-and-set
    on `base_revision`."""
    candidate, _config = state_edit_check(address=address, base_revision=base_revision, text=text, records=records)
    with transaction.atomic():
        # No config for _commit: the counts were checked on the row as read above, and the CAS refuses the
        # write unless the row is still at base_revision, i.e. unless those were the records at base_revision.
        return _commit(address, candidate, None, actor, "")


def _commit(
    address: ConversationAddress,
    candidate: Candidate,
    config: StateConfig | None,
    actor: Actor,
    operation_id: str,
    turn: Turn | None = None,
) -> StateOutcome:
    """Inside the caller's transaction: the row (created at revision 0 on first use), the counts, the CAS."""
    if turn is not None:  # locked: a supersede running now finishes first, and then this candidate is refused
        status = Turn.objects.select_for_update(no_key=True).filter(pk=turn.pk).values_list("status", flat=True)
        if status.first() == "superseded":
            raise Conflict(f"turn {turn.pk} was superseded", code="turn_superseded", details={"turnId": turn.pk})
    row, _ = ConversationState.objects.get_or_create(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )
    round_number = conversation_rounds(address)
    if config is not None:
        check_record_counts(candidate, config, row.records)
    records = apply(row.records, candidate, round_number)
    text = row.text if candidate.text is None else candidate.text
    changes = {
        "textChanged": text != row.text,
        "upserted": [[r["category"], r["key"]] for r in candidate.upsert],
        "deleted": [list(pair) for pair in candidate.delete],
    }
    revision = cas.compare_and_set(
        cas.Versioned(
            ConversationState,
            {"pk": row.pk},
            kind="conversation_state",
            conflict_message="the state is at revision {current}; re-read it and decide again",
        ),
        candidate.base_revision,
        changes={"text": text, "records": records, "updated_at": timezone.now()},
        history=lambda revision: ConversationStateRevision.objects.create(
            product=address.product,
            state=row,
            revision=revision,
            text=text,
            records=records,
            changes=changes,
            scenario_slug=candidate.scenario_id,
            round=round_number,
            actor=str(actor)[:200],
            operation_id=operation_id,
            turn=turn,
        ),
        invalidate=[state_scope(address)],
    )
    event_emit(
        product=address.product,
        user_id=address.user_id,
        conversation_id=address.conversation_id,
        type=COMMITTED_EVENT,
        details={
            "revision": revision,
            "baseRevision": candidate.base_revision,
            **changes,
            "actor": str(actor),
            **({"operationId": operation_id} if operation_id else {}),
            **({"turnId": turn.pk} if turn else {}),
        },
        turn=turn,
    )
    publish_event(
        address.product,
        "state.committed",
        user=address.user_id,
        conversation=address.conversation_id,
        data={"revision": revision, "baseRevision": candidate.base_revision},
    )
    return StateOutcome(revision)


def apply(records: list[dict], candidate: Candidate, round_number: int) -> list[dict]:
    """The records after the candidate: upserts replace by (category, key), deletes remove; sorted."""
    by_pair = {(r["category"], r["key"]): r for r in records}
    for pair in candidate.delete:
        by_pair.pop(pair, None)
    for record in candidate.upsert:
        pair = (record["category"], record["key"])
        previous = by_pair.get(pair)
        kept = previous["updatedRound"] if previous is not None and previous["value"] == record["value"] else None
        by_pair[pair] = {**record, "updatedRound": round_number if kept is None else kept}
    return [by_pair[pair] for pair in sorted(by_pair)]
