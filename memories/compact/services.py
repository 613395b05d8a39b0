"""Compaction: summarise the oldest uncovered messages, check the result, keep it by compare-and-set.

Checks before anything is kept, in this order: the plan leaves room for the current message (else 422
budget_exceeded); the summary fits the room the plan gave it, so the rendered input fits the budget; then, in one
transaction, the compare-and-set on the conversation's compaction version (the previous compaction's version: of
two concurrent compactions one is kept) and, with the head row locked by it, the covered range is still the
contiguous run of non-superseded messages through `throughMessageId`. A summariser failure keeps nothing and
emits `compact.failed`; a prepare that had to compact fails with the summariser's 502/504.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max, Min, Q
from django.utils import timezone

from diaries.summarizers import (
    ExtractiveSummarizer,
    Summarizer,
    SummarizerConfigError,
    SummaryParseError,
    get_summarizer,
)
from memories.models import Message, Turn
from memories.services.events import event_emit
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.cas import Versioned, compare_and_set
from memoryhub.clients.errors import UpstreamError, UpstreamProtocolError, UpstreamUnavailable
from memoryhub.clients.summarizer import SERVICE
from memoryhub.errors import RevisionConflict

from . import selectors
from .models import Compaction, CompactionHead
from .planning import BudgetExceeded, CompactionPlan, check_message_fits, history_chars, plan_compaction
from .policy import CompactPolicy, scenario_policy
from .selectors import CompactionRef, HistoryView

GenerationError = (UpstreamError, SummarizerConfigError)
CREATED, FAILED = "compact.created", "compact.failed"


class RangeChanged(Exception):
    """The messages a compaction covers changed while it was summarised (a regenerated reply): nothing kept."""


class SummaryTooLong(UpstreamProtocolError):
    """The summariser answered with more than the room the budget leaves for the summary."""


@dataclass(frozen=True)
class CompactionOutcome:
    """created, nothing_to_compact, below_threshold, conflict (another was kept), range_changed, failed, …"""

    outcome: str
    compaction: Compaction | None = None
    reason: str = ""


@dataclass(frozen=True)
class PreparedHistory:
    """The history a prepare carries, and what the prepare did to get it."""

    view: HistoryView
    cached: bool
    compacted: str | None = None  # "inline" or "rebuild" when this prepare saved a compaction
    failure: str | None = None  # a rebuild that failed while the raw history still fitted


def _where(address: ConversationAddress) -> dict[str, Any]:
    return {"product": address.product, "user_id": address.user_id, "conversation_id": address.conversation_id}


# --- the prepare ----------------------------------------------------------------------------------------------


def history_for_prepare(
    *, address: ConversationAddress, policy: CompactPolicy, user_message: str, round_number: int
) -> PreparedHistory:
    """The history for a turn of `round_number`, compacted inline only when the input must fit (or a compaction
    invalidated by a regeneration waits to be rebuilt); never a history that does not fit."""
    user_chars = len(user_message)
    check_message_fits(policy, user_chars)
    view, cached = _view_for_round(address, round_number)
    must = view.chars + user_chars > policy.budget_chars
    want = view.rebuild_pending and view.chars > policy.trigger_chars
    compacted = failure = None
    if must or want:
        trigger = "inline" if must else "rebuild"
        for _attempt in range(2):  # a lost race: read the winner; compact again only if it still does not fit
            try:
                outcome = compaction_run(
                    address=address,
                    policy=policy,
                    trigger=trigger,
                    user_chars=user_chars,
                    before_round=round_number,
                    force=must,
                )
            except GenerationError as exc:
                if must and isinstance(exc, UpstreamError):
                    raise  # the prepare fails with the summariser's 502/504: nothing is dropped to fit
                if must:
                    raise UpstreamUnavailable(
                        f"the summariser is misconfigured: {exc}", service=SERVICE, details={"reason": str(exc)}
                    ) from exc
                failure = f"{type(exc).__name__}: {exc}"[:300]  # a rebuild only: the raw history still fits
                break
            view, cached = selectors.history_view(address, before_round=round_number), False
            if outcome.outcome == "created":
                compacted = trigger
                break
            if view.chars + user_chars <= policy.budget_chars:
                break
    if view.chars + user_chars > policy.budget_chars:  # never drop messages to fit
        raise BudgetExceeded(
            "the history does not fit the budget and could not be compacted",
            details={"budgetChars": policy.budget_chars, "inputChars": view.chars + user_chars},
        )
    return PreparedHistory(view, cached, compacted, failure)


def _view_for_round(address: ConversationAddress, round_number: int) -> tuple[HistoryView, bool]:
    full, cached = selectors.history_view_cached(address)
    if full.compaction is None or full.compaction.through_round < round_number:
        return full.before_round(round_number), cached
    # A regeneration of a round the newest compaction covers: use one that covers only earlier rounds.
    return selectors.history_view(address, before_round=round_number), False


# --- after a commit -------------------------------------------------------------------------------------------


def compaction_due(*, address: ConversationAddress, policy: CompactPolicy, round_number: int) -> str | None:
    """Which compaction a commit schedules: "checkpoint" at a checkpoint round with messages before the recent
    window, "threshold" once the history passes 80 % of the budget, else None."""
    view, _ = selectors.history_view_cached(address)
    if policy.is_checkpoint(round_number) and len(view.messages) > policy.keep_recent_messages:
        return "checkpoint"
    if view.chars > policy.trigger_chars:
        return "threshold"
    return None


def compaction_for_turn(*, turn_pk: int, trigger: str, attempt: int = 0, retries_left: int = 0) -> CompactionOutcome:
    """The background compaction scheduled by a turn's commit (idempotent: a redelivery finds nothing to do)."""
    turn = Turn.objects.select_related("product", "scenario").filter(pk=turn_pk).first()
    if turn is None:
        return CompactionOutcome("turn_missing", reason="the turn no longer exists")
    if turn.scenario is None:
        return CompactionOutcome("not_configured", reason="the scenario was deleted")
    address = ConversationAddress(turn.product, turn.user_id, turn.conversation_id)
    return compaction_run(
        address=address,
        policy=scenario_policy(turn.scenario),
        trigger=trigger,
        turn=turn,
        attempt=attempt,
        retries_left=retries_left,
    )


# --- one compaction -------------------------------------------------------------------------------------------


def compaction_run(
    *,
    address: ConversationAddress,
    policy: CompactPolicy,
    trigger: str,
    turn: Turn | None = None,
    user_chars: int = 0,
    before_round: int | None = None,
    force: bool = False,
    attempt: int = 0,
    retries_left: int = 0,
) -> CompactionOutcome:
    """Plan, summarise, check and keep one compaction. Summariser failures are recorded, then re-raised."""
    head, _ = CompactionHead.objects.get_or_create(**_where(address))
    expected = head.version  # read before anything else: a compaction saved meanwhile wins the race
    base = selectors.compaction_current(address, before_round=before_round)
    pending = selectors.uncovered_messages(address, after=base.through_position if base else None)
    if before_round is None:
        eligible, summarizable = pending, len(pending)
    else:
        eligible = [m for m in pending if m.round < before_round]
        summarizable = next((i for i, m in enumerate(pending) if m.round >= before_round), len(pending))
    base_summary = base.summary if base else ""
    if trigger == "threshold" and history_chars(base_summary, eligible) <= policy.trigger_chars:
        return CompactionOutcome("below_threshold", reason="the history no longer passes the trigger")

    def failed(exc: Exception, retries_left: int = 0) -> None:
        _failed(address=address, trigger=trigger, turn=turn, attempt=attempt, exc=exc, retries_left=retries_left)

    try:
        plan = plan_compaction(
            messages=eligible,
            summarizable=summarizable,
            has_summary=base is not None,
            policy=policy,
            user_chars=user_chars,
            force=force,
        )
    except BudgetExceeded as exc:
        if force:
            raise
        failed(exc)
        return CompactionOutcome("failed", reason=exc.message)
    if plan is None:
        return CompactionOutcome("nothing_to_compact", reason="no message before the recent window is uncovered")
    try:
        summary, summarizer = _summarise(base, plan)
    except GenerationError as exc:
        failed(exc, retries_left)
        raise
    try:
        compaction = _save(address, head.pk, expected, base, plan, summary, summarizer, policy, trigger, turn)
    except RevisionConflict as exc:
        return CompactionOutcome("conflict", reason=exc.message)
    except RangeChanged as exc:
        failed(exc)
        return CompactionOutcome("range_changed", reason=str(exc))
    return CompactionOutcome("created", compaction)


def compaction_summarizer(limit: int) -> Summarizer:
    """The configured summariser (diaries.summarizers): the extractive one writes up to `limit` characters."""
    summarizer = get_summarizer()
    return ExtractiveSummarizer(summary_max_chars=limit) if isinstance(summarizer, ExtractiveSummarizer) else summarizer


def _summarise(base: CompactionRef | None, plan: CompactionPlan) -> tuple[str, str]:
    """The previous summary and the newly covered messages, summarised into at most plan.summary_limit characters."""
    messages = [{"role": "assistant", "content": base.summary}] if base else []
    messages += [{"role": m.role, "content": m.content} for m in plan.summarize]
    round_from = base.from_round if base else plan.summarize[0].round
    round_to = plan.summarize[-1].round if plan.summarize else (base.through_round if base else round_from)
    result = compaction_summarizer(plan.summary_limit).summarize(messages, round_from, round_to, False)
    summary = result.summary.strip() if isinstance(result.summary, str) else ""
    if not summary:
        raise SummaryParseError(f"{result.summarizer} returned an empty summary")
    if len(summary) > plan.summary_limit:
        raise SummaryTooLong(
            f"{result.summarizer} returned a summary of {len(summary)} characters; the budget leaves "
            f"{plan.summary_limit}",
            service=SERVICE,
            details={"summaryChars": len(summary), "summaryLimit": plan.summary_limit},
        )
    return summary, result.summarizer


def _save(
    address: ConversationAddress,
    head_pk: int,
    expected: int,
    base: CompactionRef | None,
    plan: CompactionPlan,
    summary: str,
    summarizer: str,
    policy: CompactPolicy,
    trigger: str,
    turn: Turn | None,
) -> Compaction:
    last = plan.summarize[-1] if plan.summarize else None
    through_id = last.id if last else base.through_message_id if base else 0
    through_round = last.round if last else base.through_round if base else 0
    count = (base.message_count if base else 0) + len(plan.summarize)
    saved: dict[str, Compaction] = {}

    def keep(version: int) -> None:
        # After the head row is locked by the compare-and-set: a regeneration committed meanwhile is visible here.
        if not selectors.message_is_live(address, through_id) or (
            selectors.covered_count(address, through=(through_round, through_id)) != count
        ):
            raise RangeChanged(
                f"the messages through {through_id} changed while they were summarised (a regenerated reply)"
            )
        saved["row"] = Compaction.objects.create(
            **_where(address),
            version=version,
            previous_id=base.id if base else None,
            summary=summary,
            from_message_id=base.from_message_id if base else plan.summarize[0].id,
            through_message_id=through_id,
            message_count=count,
            from_round=base.from_round if base else plan.summarize[0].round,
            through_round=through_round,
            summarizer=summarizer,
            trigger=trigger,
            turn=turn,
            budget_chars=policy.budget_chars,
            history_chars=history_chars(summary, plan.keep),
        )

    head = Versioned(
        CompactionHead,
        {"pk": head_pk},
        kind="compaction",
        field="version",
        conflict_message="another compaction was kept first (version {current}); this one is discarded",
    )
    with transaction.atomic():
        compare_and_set(
            head,
            expected,
            changes={"updated_at": timezone.now()},
            history=keep,
            invalidate=[selectors.history_scope(address)],
        )
        row = saved["row"]
        event_emit(**_where(address), type=CREATED, details=_created_details(row, len(plan.keep)), turn=turn)
    return row


def _created_details(row: Compaction, kept: int) -> dict:
    return {
        "compactionId": row.pk,
        "version": row.version,
        "trigger": row.trigger,
        "fromMessageId": row.from_message_id,
        "throughMessageId": row.through_message_id,
        "messageCount": row.message_count,
        "roundFrom": row.from_round,
        "roundTo": row.through_round,
        "keptMessages": kept,
        "summaryChars": len(row.summary),
        "historyChars": row.history_chars,
        "summarizer": row.summarizer,
    }


def _failed(
    *,
    address: ConversationAddress,
    trigger: str,
    turn: Turn | None,
    attempt: int,
    exc: Exception,
    retries_left: int,
) -> None:
    details = {
        "trigger": trigger,
        "code": getattr(exc, "code", "compaction_failed"),
        "reason": f"{type(exc).__name__}: {exc}"[:500],
        "attempt": attempt + 1,
        "willRetry": isinstance(exc, UpstreamError) and retries_left > 0,
    }
    event_emit(**_where(address), type=FAILED, details=details, turn=turn)


# --- regeneration ---------------------------------------------------------------------------------------------


def compaction_supersede_hook(superseded_turn_pk: int, new_turn_pk: int | None) -> dict | None:
    hit = compaction_invalidate_superseded(superseded_turn_pk=superseded_turn_pk, new_turn_pk=new_turn_pk)
    return {"status": "invalidated", "compactionIds": hit} if hit else None


def compaction_reapply_hook(selected_turn_pk: int, displaced_turn_pk: int | None) -> None:
    """A select brings the turn's messages back: the history entry is rebuilt from the messages now visible."""
    turn = Turn.objects.select_related("product").filter(pk=selected_turn_pk).first()
    if turn is not None:
        working_set.invalidate(
            selectors.history_scope(ConversationAddress(turn.product, turn.user_id, turn.conversation_id))
        )
    return None


def _starts_at_or_before(position: selectors.Position) -> Q:
    round_number, message_id = position
    return Q(from_round__lt=round_number) | Q(from_round=round_number, from_message_id__lte=message_id)


def _ends_at_or_after(position: selectors.Position) -> Q:
    round_number, message_id = position
    return Q(through_round__gt=round_number) | Q(through_round=round_number, through_message_id__gte=message_id)


def compaction_invalidate_superseded(*, superseded_turn_pk: int, new_turn_pk: int | None) -> list[int]:
    """The supersede hook: compactions covering the superseded messages are invalidated in the transaction that
    stores the new reply; with the newest compaction invalidated, a rebuild is pending (the task of the new reply's
    commit or the next prepare builds one). Returns the invalidated compactions' ids."""
    turn = Turn.objects.select_related("product").filter(pk=superseded_turn_pk).first()
    if turn is None:
        return []
    address = ConversationAddress(turn.product, turn.user_id, turn.conversation_id)
    working_set.invalidate(selectors.history_scope(address))  # the history lost these messages either way
    span = Message.objects.filter(turn_id=superseded_turn_pk).aggregate(first=Min("id"), last=Max("id"))
    if span["first"] is None:
        return []
    first, last = (turn.round, span["first"]), (turn.round, span["last"])  # a turn's messages are of its round
    # Lock the head: a compaction being saved now either committed before (and is found below) or waits and then
    # finds these messages superseded.
    CompactionHead.objects.get_or_create(**_where(address))
    CompactionHead.objects.select_for_update().get(**_where(address))
    hit = list(
        Compaction.objects.filter(
            **_where(address),
            invalidated=False,
        )
        .filter(_starts_at_or_before(last), _ends_at_or_after(first))
        .values_list("id", flat=True)
    )
    if not hit:
        return []
    Compaction.objects.filter(pk__in=hit).update(
        invalidated=True, invalidated_at=timezone.now(), invalidated_by_turn_id=new_turn_pk
    )
    event_emit(
        **_where(address),
        type="compact.invalidated",
        details={"compactionIds": hit, "supersededTurnId": superseded_turn_pk, "byTurnId": new_turn_pk},
        turn=Turn.objects.filter(pk=new_turn_pk or superseded_turn_pk).first(),
    )
    return hit
