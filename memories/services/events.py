"""Conversation events: outcomes are recorded as data, not only as log lines."""

from __future__ import annotations

from memories.models import Event, Product, Turn


def event_emit(
    *,
    product: Product,
    user_id: str,
    conversation_id: str,
    type: str,
    details: dict | None = None,
    turn: Turn | None = None,
) -> Event:
    return Event.objects.create(
        product=product, user_id=user_id, conversation_id=conversation_id, type=type, details=details or {}, turn=turn
    )


def event_emit_for_turn(turn: Turn, type: str, details: dict | None = None) -> Event:
    return event_emit(
        product=turn.product,
        user_id=turn.user_id,
        conversation_id=turn.conversation_id,
        type=type,
        details=details,
        turn=turn,
    )
