"""Helpers of the table tests (rows are built by tests/factories.py: TableScenarioFactory, TurnFactory)."""

from __future__ import annotations

from memories.models import Event, Product
from memoryhub.addresses import ConversationAddress


def address(product: Product, user_id: str = "u1", conversation_id: str = "c1") -> ConversationAddress:
    return ConversationAddress(product, user_id, conversation_id)


def events(product: Product, type: str | None = None, conversation_id: str = "c1") -> list[Event]:
    rows = Event.objects.filter(product=product, conversation_id=conversation_id)
    if type:
        rows = rows.filter(type=type)
    return list(rows.order_by("id"))


def edit(*calls: str) -> str:
    """A reply with prose around one `<tableEdit>` block wrapped in an HTML comment, as models write it."""
    body = "\n".join(calls)
    return f"她推开门，雨还在下。\n<tableEdit>\n<!--\n{body}\n-->\n</tableEdit>"
