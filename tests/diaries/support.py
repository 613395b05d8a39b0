"""Rows the diary tests need before the turn pipeline is involved: scenarios and committed turns."""
from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from memories.models import Conversation, Event, MemorySource, Product, Scenario, Turn

SMALL_POLICY = {"minRounds": 3, "freeRoundsPerDiary": 2}
AGENT_REF = "diary-orchestrator"


def make_scenario(
    product: Product, *, slug: str = "rp", diary: dict | None = None, compass: bool = True,
    agent_ref: str = AGENT_REF, runtime: str = "axon_go",
) -> Scenario:
    sections = {"diary": diary} if diary is not None else {}
    scenario = Scenario.objects.create(
        product=product, slug=slug, name=slug, memory_runtime=runtime,
        template="Diary:\n{{compassMemory}}\nUser: {{userMessage}}", sections=sections,
    )
    if compass:
        MemorySource.objects.create(scenario=scenario, source_id="diary", agent_ref=agent_ref, variable="compassMemory")
    return scenario


def commit_turn(
    product: Product, scenario: Scenario, *, user_id: str = "u1", conversation_id: str = "c1", category: str = "",
    user_message: str | None = None, assistant_message: str | None = None,
) -> Turn:
    """A committed turn at the conversation's next round, as the pipeline leaves it."""
    conversation, _ = Conversation.objects.get_or_create(
        product=product, user_id=user_id, conversation_id=conversation_id
    )
    Conversation.objects.filter(pk=conversation.pk).update(rounds=F("rounds") + 1)
    conversation.refresh_from_db()
    number = conversation.rounds
    return Turn.objects.create(
        product=product, conversation=conversation, user_id=user_id, conversation_key=conversation_id,
        scenario=scenario, scenario_slug=scenario.slug, scenario_version=scenario.version,
        runtime=scenario.memory_runtime, round=number, status="committed", subscription_category=category,
        user_message=user_message or f"Round {number}: the lighthouse keeper asks about the storm.",
        assistant_message=assistant_message or f"Round {number}: the storm broke the lighthouse lamp again.",
        prompt="", completed_at=timezone.now(), committed_at=timezone.now(),
    )


def events(product: Product, type: str, conversation_id: str = "c1") -> list[Event]:
    return list(Event.objects.filter(product=product, conversation_id=conversation_id, type=type).order_by("id"))
