"""Domain events published by the apps' services for whoever subscribed (webhooks, docs/webhooks.md).

    from memoryhub import events
    events.publish(product, "diary.written", user=turn.user_id, conversation=turn.conversation_id,
                   data={"entryId": entry.pk})

The core knows no subscriber: an app subscribes in its AppConfig.ready (memories.webhooks does), so the
services that publish import only this module. Publish inside the transaction that writes what the event
reports: a subscriber's rows then commit or roll back with it. `data` holds ids and small facts, never
secrets or prompts; a subscriber must not change the caller's data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TURN_COMPLETED = "turn.completed"
MEMORY_UPDATED = "memory.updated"
LONGTERM_CREATED = "longterm.created"
LONGTERM_UPDATED = "longterm.updated"
LONGTERM_DELETED = "longterm.deleted"
DIARY_WRITTEN = "diary.written"
TABLE_UPDATED = "table.updated"
STATE_COMMITTED = "state.committed"
STORY_SETTLED = "story.settled"
EXPORT_READY = "export.ready"
USER_ERASED = "user.erased"
# A superseded turn's writes taken back, written again by a select, or left because someone wrote after them
# (docs/roleplay.md): one of each per kind that records its turn.
ROLLBACK_EVENTS = tuple(
    f"{kind}.{what}"
    for kind in ("table", "state", "story", "diary", "longterm")
    for what in ("rolled_back", "reapplied", "rollback_conflict")
)

EVENT_TYPES: tuple[str, ...] = (
    TURN_COMPLETED,
    MEMORY_UPDATED,
    LONGTERM_CREATED,
    LONGTERM_UPDATED,
    LONGTERM_DELETED,
    DIARY_WRITTEN,
    TABLE_UPDATED,
    STATE_COMMITTED,
    STORY_SETTLED,
    EXPORT_READY,
    USER_ERASED,
    *ROLLBACK_EVENTS,
)


@dataclass(frozen=True)
class DomainEvent:
    """One thing that happened to a product's user (and conversation), as its publisher described it."""

    product: Any  # a memories.Product, or its primary key
    type: str
    user: str
    conversation: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def product_id(self) -> Any:
        return getattr(self.product, "pk", self.product)


Subscriber = Callable[[DomainEvent], None]
_subscribers: dict[str, Subscriber] = {}


def subscribe(name: str, subscriber: Subscriber) -> None:
    """Call `subscriber` for every published event; subscribing the same name again replaces it."""
    _subscribers[name] = subscriber


def unsubscribe(name: str) -> None:
    _subscribers.pop(name, None)


def publish(
    product: Any, type: str, *, user: str, conversation: str | None = None, data: dict[str, Any] | None = None
) -> None:
    """Hand the event to every subscriber, in the caller's transaction. An unknown type is a programming error."""
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}; add it to memoryhub.events.EVENT_TYPES")
    event = DomainEvent(product=product, type=type, user=user, conversation=conversation, data=dict(data or {}))
    for subscriber in list(_subscribers.values()):
        subscriber(event)
