"""A conversation's timeline: its rounds in order, each with the messages, turns and artefacts it produced.

Rows that carry their round are placed by it (messages, turns, diary entries by the last round they cover,
state revisions by the rounds completed at their commit, story versions by their anchor's round, table
versions by their turn's round); rows without one (an operator's table edit, a JSON memory write) go to the
round the conversation was at when they were written. Round 0 is "before the first turn". A page shows
ROUNDS_PER_PAGE rounds, the newest first loaded, so a long conversation stays cheap to open.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from diaries.models import DiaryEntry
from memories.models import Conversation, MemoryDocument, MemoryRevision, Message, Product, Turn
from memories.state.models import ConversationStateRevision
from memories.story.models import StoryVersion
from memoryhub.errors import NotFound
from tables.models import MemoryTableVersion

ROUNDS_PER_PAGE = 50
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
    """Rounds `first`..`last` of the conversation (round 0 too when `first` is 1); `latest` is its newest round."""

    conversation: Conversation
    rounds: list[Round]
    document: MemoryDocument | None
    first: int
    last: int
    latest: int

    def count(self, kind: str) -> int:
        return sum(len(r.of(kind)) for r in self.rounds)

    @property
    def earlier(self) -> int | None:
        """The `until` of the page before this one, if any."""
        return self.first - 1 if self.first > 1 else None

    @property
    def later(self) -> int | None:
        return min(self.last + ROUNDS_PER_PAGE, self.latest) if self.last < self.latest else None


def conversation_timeline(
    *, product: Product, conversation_pk: int, until: int | None = None, size: int = ROUNDS_PER_PAGE
) -> Timeline:
    """One page of rounds, the newest `size` up to round `until` (default: the newest round)."""
    conversation = Conversation.objects.filter(product=product, pk=conversation_pk).first()
    if conversation is None:
        raise NotFound(f"no conversation {conversation_pk} in this product")
    where = {"product": product, "user_id": conversation.user_id, "conversation_id": conversation.conversation_id}
    by_time = _RoundByTime(list(Turn.objects.filter(**where).values_list("created_at", "round")))
    latest = max(conversation.rounds, by_time.latest)
    last = latest if until is None else max(0, min(until, latest))
    first = max(1, last - size + 1)
    rounds = (0 if first == 1 else first, last)
    timed = by_time.window(first, last)
    messages = Message.objects.filter(**where, round__range=rounds).order_by("round", "pk")
    placed = [(m.round, Item("message", m.created_at, m)) for m in messages]
    placed += [(t.round, Item("turn", t.created_at, t)) for t in Turn.objects.filter(**where, round__range=rounds)]
    placed += _diary(where, rounds)
    placed += _tables(where, timed, by_time)
    placed += _states(where, rounds)
    placed += _stories(where, timed, by_time)
    revisions = MemoryRevision.objects.filter(**where, **timed)
    placed += [(by_time(r.created_at), Item("document", r.created_at, r)) for r in revisions]
    shown = [(n, item) for n, item in placed if rounds[0] <= n <= rounds[1]]
    document = MemoryDocument.objects.filter(**where).first()
    return Timeline(conversation, _rounds(shown), document, first, last, latest)


class _RoundByTime:
    """The conversation's round at a moment: the highest round of the turns prepared by then (0 before any).

    A regeneration of an old round later on does not move the conversation back to that round.
    """

    def __init__(self, turns: list[tuple[Any, int]]) -> None:
        ordered = sorted(turns)
        self.times = [moment for moment, _ in ordered]
        self.rounds = list(accumulate((number for _, number in ordered), max))
        self.latest = self.rounds[-1] if self.rounds else 0

    def __call__(self, moment) -> int:
        index = bisect.bisect_right(self.times, moment)
        return self.rounds[index - 1] if index else 0

    def window(self, first: int, last: int) -> dict:
        """created_at bounds of the rows placed by time in rounds first..last (round 0 included when first is 1)."""
        bounds: dict = {}
        starts = [t for t, r in zip(self.times, self.rounds, strict=True) if r >= first]
        ends = [t for t, r in zip(self.times, self.rounds, strict=True) if r > last]
        if first > 1 and starts:
            bounds["created_at__gte"] = starts[0]
        if ends:
            bounds["created_at__lt"] = ends[0]
        return bounds


def _diary(where: dict, rounds: tuple[int, int]) -> list[tuple[int, Item]]:
    rows = DiaryEntry.objects.filter(**where, round_to__range=rounds)
    return [(e.round_to, Item("diary", e.created_at, e)) for e in rows]


def _tables(where: dict, timed: dict, by_time: _RoundByTime) -> list[tuple[int, Item]]:
    rows = MemoryTableVersion.objects.filter(
        product=where["product"],
        table__user_id=where["user_id"],
        table__conversation_id=where["conversation_id"],
        **timed,
    ).select_related("table", "turn")
    return [(v.turn.round if v.turn else by_time(v.created_at), Item("table", v.created_at, v)) for v in rows]


def _states(where: dict, rounds: tuple[int, int]) -> list[tuple[int, Item]]:
    rows = ConversationStateRevision.objects.filter(
        product=where["product"],
        state__user_id=where["user_id"],
        state__conversation_id=where["conversation_id"],
        round__range=rounds,
    )
    return [(r.round, Item("state", r.created_at, r)) for r in rows]


def _stories(where: dict, timed: dict, by_time: _RoundByTime) -> list[tuple[int, Item]]:
    rows = list(
        StoryVersion.objects.filter(
            product=where["product"],
            snapshot__user_id=where["user_id"],
            snapshot__conversation_id=where["conversation_id"],
            **timed,
        )
    )
    anchors = {v.anchor_message_id for v in rows if v.anchor_message_id}
    anchor_rounds = dict(Message.objects.filter(**where, pk__in=anchors).values_list("pk", "round"))
    return [
        (anchor_rounds.get(v.anchor_message_id or 0, by_time(v.created_at)), Item("story", v.created_at, v))
        for v in rows
    ]


def _rounds(placed: list[tuple[int, Item]]) -> list[Round]:
    rounds: dict[int, Round] = {}
    for number, item in placed:
        rounds.setdefault(number, Round(number)).items.append(item)
    for one in rounds.values():
        one.items.sort(key=lambda i: (KINDS.index(i.kind), i.created_at, i.row.pk))
    return [rounds[n] for n in sorted(rounds)]
