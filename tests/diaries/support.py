"""Helpers of the diary tests (rows are built by tests/factories.py: DiaryScenarioFactory, TurnFactory)."""

from __future__ import annotations

from memories.models import Event, Product

SMALL_POLICY = {"minRounds": 3, "freeRoundsPerDiary": 2}


def events(product: Product, type: str, conversation_id: str = "c1") -> list[Event]:
    return list(Event.objects.filter(product=product, conversation_id=conversation_id, type=type).order_by("id"))
