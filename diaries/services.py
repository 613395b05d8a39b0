"""Diary planning and writing (docs/diaries.md): plan under a per-conversation lock, generate, append.

Every plan holds the conversation's DiaryState row lock (select_for_update) from planning to
append, generation included: two concurrent completions are serialized, and the second one sees
the first one's entry and skips. A redelivered task for an already planned turn writes nothing.
The lock spans the summariser call on purpose: the alternative (release, generate, re-lock) lets
two workers pay for the same generation and then race to append it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memories.models import Turn
from memories.services.events import event_emit_for_turn
from memories.state.selectors import background_text
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.clients.errors import UpstreamError
from memoryhub.events import publish as publish_event

from . import selectors
from .models import DiaryEntry, DiaryPlanRecord, DiaryQuotaLock, DiaryState
from .planning import (
    FREE_CATEGORY,
    DiaryPlan,
    DiaryPolicy,
    normalize_subscription_category,
    parse_diary_policy,
    plan_diary,
    quota_window_start,
)
from .planning import DiaryState as PlanState
from .summarizers import SummarizerConfigError, SummaryParseError, SummaryResult, get_summarizer

GenerationError = (UpstreamError, SummarizerConfigError)


@dataclass(frozen=True)
class DiaryOutcome:
    """What one planning call did: written, skipped, failed, already_planned, not_configured, turn_missing, …"""

    outcome: str
    reason: str = ""
    decision: str | None = None
    entry_id: int | None = None


@dataclass(frozen=True)
class _Failed:
    outcome: DiaryOutcome
    error: Exception


def diary_plan_and_write(
    *, turn_pk: int, trigger: str = "task", attempt: int = 0, retries_left: int = 0, force: bool = False
) -> DiaryOutcome:
    """Plan the diary for a committed turn and, when due, generate and append it.

    Generation failures are recorded (plan record + `diary.failed`) and committed, then the
    error is re-raised so the Celery task can retry. `force` re-plans a turn planned before
    (the admin's re-plan); without it a redelivered task for a planned turn does nothing.
    """
    turn = Turn.objects.select_related("product", "scenario").filter(pk=turn_pk).first()
    early = _not_plannable(turn)
    if early is not None:
        return early
    assert turn is not None and turn.scenario is not None  # _not_plannable answered for the rest
    policy = parse_diary_policy(turn.scenario.sections.get(selectors.DIARY_SECTION))
    with transaction.atomic():
        result = _plan_locked(turn, policy, trigger=trigger, attempt=attempt, retries_left=retries_left, force=force)
    if isinstance(result, _Failed):
        raise result.error
    return result


def diary_replan_conversation(*, state: DiaryState) -> DiaryOutcome:
    """Plan again for the conversation's latest committed turn (the admin action); it appends, never edits."""
    turn = selectors.latest_committed_turn(
        product=state.product, user_id=state.user_id, conversation_id=state.conversation_id
    )
    if turn is None:
        return DiaryOutcome("no_turns", "the conversation has no committed turn")
    return diary_plan_and_write(turn_pk=turn.pk, trigger="admin", force=True)


def _not_plannable(turn: Turn | None) -> DiaryOutcome | None:
    if turn is None:
        return DiaryOutcome("turn_missing", "the turn no longer exists")
    if turn.status != "committed":
        return DiaryOutcome("not_committed", f"the turn is {turn.status}")
    if not selectors.scenario_uses_diaries(turn.scenario):
        return DiaryOutcome("not_configured", "the scenario has no compassMemory source and no diary policy")
    return None


def _plan_locked(
    turn: Turn, policy: DiaryPolicy, *, trigger: str, attempt: int, retries_left: int, force: bool
) -> DiaryOutcome | _Failed:
    state = _lock_state(turn)
    if not force and _already_planned(turn):
        return DiaryOutcome("already_planned", "this turn was planned before")
    if trigger == "task":
        _plan_earlier_rounds(turn, state)
    return _plan_turn(turn, state, policy, trigger=trigger, attempt=attempt, retries_left=retries_left)


def _plan_earlier_rounds(turn: Turn, state: DiaryState) -> None:
    """Plan first, in round order, the committed turns between the last planned round and this one whose own
    task has not run yet (held back by an outage, then released with later rounds' tasks in any order).

    The entries then come out exactly as planning every round in order gives, whatever order the tasks run in;
    the held-back turn's own task later finds it planned. Costs nothing in order (no gap, no query). A turn whose
    plan failed has its record and is left to its own retries (and to the "at least" rule).
    """
    if turn.round <= state.rounds + 1:
        return
    planned = DiaryPlanRecord.objects.filter(turn_id=OuterRef("pk"))
    earlier = (
        Turn.objects.select_related("product", "scenario")
        .filter(
            product_id=turn.product_id,
            user_id=turn.user_id,
            conversation_id=turn.conversation_id,
            status="committed",
            round__gt=state.rounds,
            round__lt=turn.round,
        )
        .exclude(Exists(planned))
        .order_by("round", "pk")
    )
    for other in earlier:
        if _not_plannable(other) is not None:
            continue
        assert other.scenario is not None  # _not_plannable answered for the rest
        policy = parse_diary_policy(other.scenario.sections.get(selectors.DIARY_SECTION))
        # retries_left=1: its own task is still to come. A generation failure stops the catch-up; this turn's
        # own plan then covers everything since the last entry, as after any failure.
        if isinstance(_plan_turn(other, state, policy, trigger="task", attempt=0, retries_left=1), _Failed):
            return


def _plan_turn(
    turn: Turn, state: DiaryState, policy: DiaryPolicy, *, trigger: str, attempt: int, retries_left: int
) -> DiaryOutcome | _Failed:
    if turn.round > state.rounds:
        state.rounds = turn.round
        state.save(update_fields=["rounds", "updated_at"])
    category = _category(turn)
    plan_state = PlanState(turn.round, state.last_diary_round, _quota_used(turn, policy, category))
    plan = plan_diary(plan_state, policy, category)
    if not plan.writes_summary:
        return _skip(turn, plan, category, trigger)
    try:
        result = _generate(turn, plan)
    except GenerationError as exc:
        return _fail(turn, plan, category, exc, trigger=trigger, attempt=attempt, retries_left=retries_left)
    return _write(turn, state, plan, category, result, trigger)


def _lock_state(turn: Turn) -> DiaryState:
    key: dict[str, Any] = {
        "product_id": turn.product_id,
        "user_id": turn.user_id,
        "conversation_id": turn.conversation_id,
    }
    # get_or_create first: select_for_update cannot lock a row that does not exist yet. A concurrent
    # creator blocks on the unique index until the first transaction ends, which is the lock we want.
    DiaryState.objects.get_or_create(**key)
    return DiaryState.objects.select_for_update().get(**key)


def _already_planned(turn: Turn) -> bool:
    return DiaryPlanRecord.objects.filter(turn=turn, outcome__in=["written", "skipped"]).exists()


def _category(turn: Turn) -> str:
    return normalize_subscription_category(turn.subscription_category or None)


def _quota_used(turn: Turn, policy: DiaryPolicy, category: str) -> int:
    """Free full diaries of the user in the quota window, counted under the user's quota lock."""
    if category != FREE_CATEGORY or policy.free_diary_quota.count is None:
        return 0
    DiaryQuotaLock.objects.get_or_create(product_id=turn.product_id, user_id=turn.user_id)
    DiaryQuotaLock.objects.select_for_update().get(product_id=turn.product_id, user_id=turn.user_id)
    since = quota_window_start(timezone.now(), policy)
    return selectors.diary_quota_used(product=turn.product, user_id=turn.user_id, since=since)


def _generate(turn: Turn, plan: DiaryPlan) -> SummaryResult:
    messages = selectors.diary_transcript(turn, plan.round_from, plan.round_to)
    # The conversation state's background projection (notes + every record) is the summariser's context.
    context = background_text(ConversationAddress(turn.product, turn.user_id, turn.conversation_id))
    result = get_summarizer().summarize(messages, plan.round_from, plan.round_to, plan.writes_diary, context=context)
    return _checked(result, plan.writes_diary)


def _checked(result: SummaryResult, want_diary: bool) -> SummaryResult:
    """Refuse an empty summary, or a missing diary when one was asked for, from any summariser."""
    if not isinstance(result.summary, str) or not result.summary.strip():
        raise SummaryParseError(f"{result.summarizer} returned an empty summary")
    if want_diary and (not isinstance(result.diary, str) or not result.diary.strip()):
        raise SummaryParseError(f"{result.summarizer} returned no diary although one was planned")
    diary = result.diary.strip() if want_diary and isinstance(result.diary, str) else None
    return SummaryResult(result.summary.strip(), diary, result.summarizer)


def _record(turn: Turn, plan: DiaryPlan, category: str, outcome: str, trigger: str, reason: str = "", entry=None):
    return DiaryPlanRecord.objects.create(
        product_id=turn.product_id,
        user_id=turn.user_id,
        conversation_id=turn.conversation_id,
        turn=turn,
        round=turn.round,
        subscription_category=category,
        decision=plan.decision,
        reason=reason or plan.reason,
        round_from=plan.round_from,
        round_to=plan.round_to,
        outcome=outcome,
        entry=entry,
        trigger=trigger,
    )


def _skip(turn: Turn, plan: DiaryPlan, category: str, trigger: str) -> DiaryOutcome:
    _record(turn, plan, category, "skipped", trigger)
    event_emit_for_turn(turn, "diary.skipped", {"reason": plan.reason, "round": turn.round, "trigger": trigger})
    return DiaryOutcome("skipped", plan.reason, plan.decision)


def _fail(
    turn: Turn, plan: DiaryPlan, category: str, exc: Exception, *, trigger: str, attempt: int, retries_left: int
) -> _Failed:
    reason = f"{type(exc).__name__}: {exc}"
    _record(turn, plan, category, "failed", trigger, reason=f"{plan.reason}; generation failed: {reason}")
    details = {
        "reason": reason,
        "code": getattr(exc, "code", "summarizer_misconfigured"),
        "decision": plan.decision,
        "roundFrom": plan.round_from,
        "roundTo": plan.round_to,
        "attempt": attempt + 1,
        "willRetry": isinstance(exc, UpstreamError) and retries_left > 0,
        "trigger": trigger,
    }
    event_emit_for_turn(turn, "diary.failed", details)
    return _Failed(DiaryOutcome("failed", reason, plan.decision), exc)


def _write(
    turn: Turn, state: DiaryState, plan: DiaryPlan, category: str, result: SummaryResult, trigger: str
) -> DiaryOutcome:
    entry, created = diary_append(turn=turn, plan=plan, category=category, result=result)
    state.last_diary_round = max(state.last_diary_round, plan.round_to)
    state.save(update_fields=["last_diary_round", "updated_at"])
    _record(turn, plan, category, "written", trigger, entry=entry)
    if created:
        event_emit_for_turn(
            turn,
            "diary.written",
            {
                "kind": entry.kind,
                "entryId": entry.pk,
                "roundFrom": entry.round_from,
                "roundTo": entry.round_to,
                "summarizer": entry.summarizer,
                "reason": plan.reason,
                "trigger": trigger,
            },
        )
        publish_event(
            turn.product,
            "diary.written",
            user=turn.user_id,
            conversation=turn.conversation_id,
            data={"entryId": entry.pk, "kind": entry.kind, "roundFrom": entry.round_from, "roundTo": entry.round_to},
        )
    return DiaryOutcome("written", plan.reason, plan.decision, entry.pk)


def diary_append(*, turn: Turn, plan: DiaryPlan, category: str, result: SummaryResult) -> tuple[DiaryEntry, bool]:
    """Append the entry for the plan's round range once; (entry, created). Call inside a transaction.

    The unique (conversation, round range) constraint makes a repeated append return the stored
    entry instead of a second one. The compassMemory working set is invalidated in the same
    transaction, so a cache outage aborts the append instead of leaving stale recall behind.
    """
    agent_ref = selectors.diary_agent_ref(turn.scenario) or ""
    try:
        with transaction.atomic():
            entry = DiaryEntry.objects.create(
                product_id=turn.product_id,
                user_id=turn.user_id,
                conversation_id=turn.conversation_id,
                agent_ref=agent_ref,
                round_from=plan.round_from,
                round_to=plan.round_to,
                kind=plan.decision,
                summary=result.summary,
                body=result.diary,
                summarizer=result.summarizer,
                subscription_category=category,
                turn=turn,
            )
    except IntegrityError:
        return _existing_entry(turn, plan), False
    working_set.invalidate(
        selectors.compass_scope(
            product_id=turn.product_id, user_id=turn.user_id, conversation_id=turn.conversation_id, agent_ref=agent_ref
        )
    )
    return entry, True


def _existing_entry(turn: Turn, plan: DiaryPlan) -> DiaryEntry:
    return DiaryEntry.objects.get(
        product_id=turn.product_id,
        user_id=turn.user_id,
        conversation_id=turn.conversation_id,
        round_from=plan.round_from,
        round_to=plan.round_to,
        rolled_back_at__isnull=True,
    )
