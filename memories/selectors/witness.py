"""Witness scopes: the messages a character witnessed, for every recall that reads a conversation's messages.

A message witnessed by character X is one X said (`name` = X), one said with X among `present`, or one
that names nobody present (`present` = []: a scene without scopes, seen by everyone). History recall,
lorebook scans, diaries and tables narrow their messages with `witnessed_by` (docs/roleplay.md).
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from memories.models import Message
from memoryhub.addresses import ConversationAddress

MAX_NAME = 100


def witnessed_by(messages: QuerySet[Message], character: str | None) -> QuerySet[Message]:
    """`messages` narrowed to those `character` witnessed; all of them when no character is named."""
    if not character:
        return messages
    return messages.filter(Q(present=[]) | Q(name=character) | Q(present__has_name=character))


def live_messages(address: ConversationAddress, *, before_round: int | None = None) -> QuerySet[Message]:
    """The conversation's visible (not superseded) messages, optionally only those before a round."""
    rows = Message.objects.filter(
        product=address.product,
        user_id=address.user_id,
        conversation_id=address.conversation_id,
        superseded=False,
    )
    return rows if before_round is None else rows.filter(round__lt=before_round)


def recent_witnessed(
    address: ConversationAddress, *, character: str | None, before_round: int, limit: int
) -> list[dict]:
    """The newest `limit` messages before the round that `character` witnessed, newest first."""
    rows = witnessed_by(live_messages(address, before_round=before_round), character)
    newest_first = rows.order_by("-round", "-id")  # an edited round's new messages have later ids: order by round
    return [dict(row) for row in newest_first.values("id", "round", "role", "name", "content")[:limit]]


def unwitnessed_rounds(address: ConversationAddress, *, character: str, before_round: int | None = None) -> set[int]:
    """Rounds with a visible message `character` did not witness: what a diary or table derived from them holds."""
    rows = live_messages(address, before_round=before_round)
    seen = witnessed_by(rows, character).values("pk")
    return set(rows.exclude(pk__in=seen).values_list("round", flat=True).distinct())


def witnessed_count(address: ConversationAddress, *, character: str | None, before_round: int) -> int:
    return witnessed_by(live_messages(address, before_round=before_round), character).count()
