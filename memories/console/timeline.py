"""A conversation's timeline: its rounds in order, each with the messages, turns and artefacts it produced.

Rows that carry their round are placed by it (messages, turns, diary entries by the last round they cover,
state revisions by the rounds completed at their commit, story versions by their anchor's round, table
versions by their turn's round); rows without one (an operator's table edit, a JSON memory write) go to the
round whose turn was the newest when they were written. Round 0 is "before the first turn".
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from diaries.models import DiaryEntry
from memories.models import Conversation, MemoryDocument, MemoryRevision, Message, Product, Turn
from memories.state.models import ConversationStateRevision
from memories.story.models import StoryVersion
from memoryhub.errors import NotFound
from tables.models import MemoryTableVersion

# Order of the kinds inside one round: what was said, the turns, then what they wrote.
KINDS = ("message", "turn", "table", "diary", "document", "state", "story")


@dataclass(frozen=True)
class Item:
    kind: str
    created_at: Any
    row: Any


@dataclass
class Round:
    number: int
    items: list[Item] = field(default_factory=list)

    def of(self, kind: str) -> list[Item]:
        return [item for item in self.items if item.kind == kind]


@dataclass(frozen=True)
class Timeline:
    conversation: Conversation
    rounds: list[Round]
    document: MemoryDocument | None

    def count(self, kind: str) -> int:
        return sum(len(r.of(kind)) for r in self.rounds)


def conversation_timeline(*, product: Product, conversation_pk: int) -> Timeline:
    conversation = Conversation.objects.filter(product=product, pk=conversation_pk).first()
    if conversation is None:
        raise NotFound(f"no conversation {conversation_pk} in this product")
    where = {"product": product, "user_id": conversation.user_id, "conversation_id": conversation.conversation_id}
    turns = list(Turn.objects.filter(**where).order_by("pk"))
    messages = list(Message.objects.filter(**where).order_by("pk"))
    by_time = _RoundByTime(turns)
    placed = [(m.round, Item("message", m.created_at, m)) for m in messages]
    placed += [(t.round, Item("turn", t.created_at, t)) for t in turns]
    placed += _diary(where)
    placed += _tables(where, by_time)
    placed += _states(where)
    placed += _stories(where, {m.pk: m.round for m in messages}, by_time)
    revisions = MemoryRevision.objects.filter(**where)
    placed += [(by_time(r.created_at), Item("document", r.created_at, r)) for r in revisions]
    return Timeline(conversation, _rounds(placed), MemoryDocument.objects.filter(**where).first())


class _RoundByTime:
    """The round of the newest turn prepared at or before a moment (0 before the first turn)."""

    def __init__(self, turns: list[Turn]) -> None:
        ordered = sorted(turns, key=lambda t: t.created_at)
        self.times = [t.created_at for t in ordered]
        self.rounds = [t.round for t in ordered]

    def __call__(self, moment) -> int:
        index = bisect.bisect_right(self.times, moment)
        return self.rounds[index - 1] if index else 0


def _diary(where: dict) -> list[tuple[int, Item]]:
    rows = DiaryEntry.objects.filter(**where)
    return [(e.round_to, Item("diary", e.created_at, e)) for e in rows]


def _tables(where: dict, by_time: _RoundByTime) -> list[tuple[int, Item]]:
    rows = MemoryTableVersion.objects.filter(
        product=where["product"], table__user_id=where["user_id"], table__conversation_id=where["conversation_id"]
    ).select_related("table", "turn")
    return [(v.turn.round if v.turn else by_time(v.created_at), Item("table", v.created_at, v)) for v in rows]


def _states(where: dict) -> list[tuple[int, Item]]:
    rows = ConversationStateRevision.objects.filter(
        product=where["product"], state__user_id=where["user_id"], state__conversation_id=where["conversation_id"]
    )
    return [(r.round, Item("state", r.created_at, r)) for r in rows]


def _stories(where: dict, message_rounds: dict[int, int], by_time: _RoundByTime) -> list[tuple[int, Item]]:
    rows = StoryVersion.objects.filter(
        product=where["product"],
        snapshot__user_id=where["user_id"],
        snapshot__conversation_id=where["conversation_id"],
    )
    return [
        (message_rounds.get(v.anchor_message_id or 0, by_time(v.created_at)), Item("story", v.created_at, v))
        for v in rows
    ]


def _rounds(placed: list[tuple[int, Item]]) -> list[Round]:
    rounds: dict[int, Round] = {}
    for number, item in placed:
        rounds.setdefault(number, Round(number)).items.append(item)
    for one in rounds.values():
        one.items.sort(key=lambda i: (KINDS.index(i.kind), i.created_at, i.row.pk))
    return [rounds[n] for n in sorted(rounds)]
