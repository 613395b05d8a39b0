"""Reads of diary data; every selector takes the product, so another product's rows are simply not there."""

from __future__ import annotations

from datetime import datetime

from memories.models import Product, Scenario, Turn
from memoryhub import working_set
from memoryhub.pagination import keyset_page

from .models import KIND_SUMMARY_AND_DIARY, DiaryEntry, DiaryPlanRecord
from .planning import FREE_CATEGORY

COMPASS_VARIABLE = "compassMemory"
DIARY_SECTION = "diary"


def _live_entries(product: Product, user_id: str, conversation_id: str):
    """The entries that are recalled: not rolled back with a superseded turn."""
    return _conversation(DiaryEntry, product, user_id, conversation_id).filter(rolled_back_at__isnull=True)


def _conversation(model, product: Product, user_id: str, conversation_id: str):
    return model.objects.filter(product=product, user_id=user_id, conversation_id=conversation_id)


def diary_entries_page(
    *, product: Product, user_id: str, conversation_id: str, cursor: str | None, limit: int, newest_first: bool = True
) -> tuple[list[DiaryEntry], str | None]:
    entries = _live_entries(product, user_id, conversation_id)
    return keyset_page(entries, field="id", descending=newest_first, cursor=cursor, limit=limit)


def diary_recent_summaries(
    *, product: Product, user_id: str, conversation_id: str, limit: int, agent_ref: str | None = None
) -> list[dict]:
    """The newest `limit` entries as plain dicts, newest first; `agent_ref=None` means any source."""
    entries = _live_entries(product, user_id, conversation_id)
    if agent_ref is not None:
        entries = entries.filter(agent_ref=agent_ref)
    rows = entries.order_by("-id").values("id", "round_from", "round_to", "summary")[:limit]
    return [dict(row) for row in rows]


def diary_plan_records(
    *, product: Product, user_id: str, conversation_id: str, limit: int = 50
) -> list[DiaryPlanRecord]:
    return list(_conversation(DiaryPlanRecord, product, user_id, conversation_id).order_by("-id")[:limit])


def diary_quota_used(*, product: Product, user_id: str, since: datetime) -> int:
    """Full diaries written for the user in the free category since `since` (all conversations)."""
    return DiaryEntry.objects.filter(
        product=product,
        user_id=user_id,
        kind=KIND_SUMMARY_AND_DIARY,
        subscription_category=FREE_CATEGORY,
        created_at__gte=since,
    ).count()


def diary_agent_ref(scenario: Scenario | None) -> str | None:
    """agentRef of the scenario's compassMemory source; None when it has none."""
    if scenario is None:
        return None
    return scenario.sources.filter(variable=COMPASS_VARIABLE).values_list("agent_ref", flat=True).first()


def scenario_uses_diaries(scenario: Scenario | None) -> bool:
    """Diaries are planned for scenarios with a compassMemory source or an explicit diary section."""
    if scenario is None:
        return False
    return DIARY_SECTION in (scenario.sections or {}) or diary_agent_ref(scenario) is not None


def diary_transcript(turn: Turn, round_from: int, round_to: int) -> list[dict]:
    """The committed user/assistant messages of the round range, in order, as chat messages."""
    turns = (
        Turn.objects.filter(
            product_id=turn.product_id,
            conversation_row_id=turn.conversation_row_id,
            status="committed",
            round__gte=round_from,
            round__lte=round_to,
        )
        .order_by("round", "id")
        .values_list("user_message", "assistant_message")
    )
    messages: list[dict] = []
    for user_message, assistant_message in turns:
        messages.append({"role": "user", "content": user_message})
        messages.append({"role": "assistant", "content": assistant_message})
    return messages


def latest_committed_turn(*, product: Product, user_id: str, conversation_id: str) -> Turn | None:
    return (
        Turn.objects.filter(product=product, user_id=user_id, conversation_id=conversation_id, status="committed")
        .order_by("-round", "-id")
        .first()
    )


def compass_scope(*, product_id: object, user_id: str, conversation_id: str, agent_ref: str) -> working_set.Scope:
    """The working-set entry holding a conversation's newest summaries for one compassMemory source."""
    return working_set.Scope(str(product_id), user_id, conversation_id, f"{COMPASS_VARIABLE}:{agent_ref}")
