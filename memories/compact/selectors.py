"""Reads of compact history: the history a prepare carries, the compactions of a conversation."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.db.models import Q

from memories.models import Conversation, Message
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.pagination import keyset_page

from .models import Compaction
from .planning import HistoryMessage, history_chars, history_text

VARIABLE = "history"
AGENT_REF = "history"


@dataclass(frozen=True)
class CompactionRef:
    """What a prepare needs of the compaction it uses."""

    id: int
    version: int
    summary: str
    from_message_id: int
    through_message_id: int
    from_round: int
    through_round: int
    message_count: int

    @property
    def through_position(self) -> Position:
        return (self.through_round, self.through_message_id)

    def as_details(self) -> dict:
        return {"id": self.id, "version": self.version, "throughMessageId": self.through_message_id}


@dataclass(frozen=True)
class HistoryView:
    """The current compaction (if any) and the non-superseded messages it does not cover, oldest first."""

    compaction: CompactionRef | None
    messages: tuple[HistoryMessage, ...]
    rebuild_pending: bool = False

    @property
    def summary(self) -> str:
        return self.compaction.summary if self.compaction else ""

    @property
    def chars(self) -> int:
        return history_chars(self.summary, self.messages)

    @property
    def text(self) -> str:
        return history_text(self.summary, self.messages)

    def before_round(self, round_number: int) -> HistoryView:
        return replace(self, messages=tuple(m for m in self.messages if m.round < round_number))


def history_scope(address: ConversationAddress) -> working_set.Scope:
    """The working-set entry of the whole history view; every message or compaction write invalidates it."""
    return address.scope(VARIABLE)


def history_scope_of(product_id: str, user_id: str, conversation_id: str) -> working_set.Scope:
    return working_set.Scope(product_id, user_id, conversation_id, VARIABLE)


def _where(address: ConversationAddress) -> dict:
    return {"product": address.product, "user_id": address.user_id, "conversation_id": address.conversation_id}


def history_view_cached(address: ConversationAddress) -> tuple[HistoryView, bool]:
    """(the view of every stored round, was_cached) from the working set."""
    return working_set.get_or_build(history_scope(address), lambda: history_view(address))


def history_view(address: ConversationAddress, *, before_round: int | None = None) -> HistoryView:
    """From the database: the newest valid compaction covering only rounds before `before_round` (None: any).

    A rebuild is pending when the newest compaction was invalidated (by a regeneration) and none replaced it yet.
    """
    newest = _compactions(address, before_round).values_list(*_REF_FIELDS, "invalidated").first()
    rebuild_pending = bool(newest and newest[-1])
    if rebuild_pending:
        compaction = compaction_current(address, before_round=before_round)
    else:
        compaction = CompactionRef(*newest[:-1]) if newest else None
    messages = uncovered_messages(
        address, after=compaction.through_position if compaction else None, before_round=before_round
    )
    return HistoryView(compaction, tuple(messages), rebuild_pending)


_REF_FIELDS = (
    "id",
    "version",
    "summary",
    "from_message_id",
    "through_message_id",
    "from_round",
    "through_round",
    "message_count",
)


def _compactions(address: ConversationAddress, before_round: int | None):
    rows = Compaction.objects.filter(**_where(address))
    if before_round is not None:
        rows = rows.filter(through_round__lt=before_round)
    return rows.order_by("-version")


def compaction_current(address: ConversationAddress, *, before_round: int | None = None) -> CompactionRef | None:
    row = _compactions(address, before_round).filter(invalidated=False).values_list(*_REF_FIELDS).first()
    return CompactionRef(*row) if row else None


# A message's place in its conversation: (round, id). An edited or regenerated round's new messages have later
# ids than the rounds after it but keep their round, so ids alone do not give the conversation's order.
Position = tuple[int, int]


def after_position(position: Position | None) -> Q:
    if position is None:
        return Q()
    round_number, message_id = position
    return Q(round__gt=round_number) | Q(round=round_number, id__gt=message_id)


def at_or_before(position: Position) -> Q:
    round_number, message_id = position
    return Q(round__lt=round_number) | Q(round=round_number, id__lte=message_id)


def uncovered_messages(
    address: ConversationAddress, *, after: Position | None, before_round: int | None = None
) -> list[HistoryMessage]:
    """The non-superseded messages after a compaction's last one, in conversation order."""
    rows = Message.objects.filter(after_position(after), **_where(address), superseded=False)
    if before_round is not None:
        rows = rows.filter(round__lt=before_round)
    columns = ("id", "round", "role", "content")
    return [HistoryMessage(*row) for row in rows.order_by("round", "id").values_list(*columns)]


def covered_count(address: ConversationAddress, *, through: Position) -> int:
    """Non-superseded messages up to `through` in conversation order: what a compaction through it must cover."""
    return Message.objects.filter(at_or_before(through), **_where(address), superseded=False).count()


def message_is_live(address: ConversationAddress, message_id: int) -> bool:
    return Message.objects.filter(**_where(address), pk=message_id, superseded=False).exists()


def conversation_exists(address: ConversationAddress) -> bool:
    return Conversation.objects.filter(**_where(address)).exists()


def compactions_page(address: ConversationAddress, *, cursor: str | None, limit: int) -> tuple[list, str | None]:
    """Every compaction of the conversation, newest first (invalidated ones included)."""
    rows = Compaction.objects.filter(**_where(address))
    return keyset_page(rows, field="id", descending=True, cursor=cursor, limit=limit)


def scenario_uses_history(scenario: object) -> bool:
    sources = getattr(scenario, "sources", None)
    return sources is not None and any(s.variable == VARIABLE for s in sources.all())
