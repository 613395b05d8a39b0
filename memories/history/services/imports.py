"""Bulk import of a conversation's past messages (docs/recall.md, History import).

Idempotent by `clientId` within the conversation: a message already imported with the same role, name,
content and time is skipped, one with the same id and anything else refuses the whole request (422,
nothing written). Rounds are counted on the Conversation row under its lock, as a turn counts them: each
new user message opens a round, an assistant message joins the open one (or opens one when there is none),
so turns that follow the import continue after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from memories.history.models import HistoryEntry
from memories.history.text import keyword_text
from memories.models import Conversation
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import RejectedByPolicy

from .indexing import EMBED_IMPORTED_TASK, schedule_embedding

MAX_MESSAGES = 1000


@dataclass(frozen=True)
class ImportedMessage:
    client_id: str
    role: str
    content: str
    created_at: datetime
    name: str = ""


@dataclass(frozen=True)
class ImportOutcome:
    created: list[HistoryEntry]
    existing: int
    rounds: int


class ClientIdConflict(RejectedByPolicy):
    code = "client_id_conflict"


def _same(entry: HistoryEntry, message: ImportedMessage) -> bool:
    return (entry.role, entry.name, entry.content, entry.created_at) == (
        message.role,
        message.name,
        message.content,
        message.created_at,
    )


def _refuse_repeats(messages: list[ImportedMessage]) -> None:
    seen: dict[str, int] = {}
    for position, message in enumerate(messages):
        if message.client_id in seen:
            raise ClientIdConflict(
                f"clientId {message.client_id!r} appears twice in the request",
                details={"clientId": message.client_id, "positions": [seen[message.client_id], position]},
            )
        seen[message.client_id] = position


def history_import(address: ConversationAddress, messages: list[ImportedMessage]) -> ImportOutcome:
    _refuse_repeats(messages)
    # Segmenting is the slow part: done before the write lock is taken (SQLite has one writer).
    texts = {
        m.client_id: keyword_text(role=m.role, name=m.name, content=m.content, created_at=m.created_at)
        for m in messages
    }
    with transaction.atomic():
        Conversation.objects.get_or_create(
            product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        conversation = Conversation.objects.select_for_update(no_key=True).get(
            product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        known = {
            entry.client_id: entry
            for entry in HistoryEntry.objects.filter(
                product=address.product,
                user_id=address.user_id,
                conversation_id=address.conversation_id,
                client_id__in=[message.client_id for message in messages],
            )
        }
        for position, message in enumerate(messages):
            entry = known.get(message.client_id)
            if entry is not None and not _same(entry, message):
                raise ClientIdConflict(
                    f"clientId {message.client_id!r} was imported before with other content",
                    details={"clientId": message.client_id, "position": position},
                )
        new, open_round = [], None
        for message in messages:
            entry = known.get(message.client_id)
            if entry is not None:
                open_round = entry.round
                continue
            if message.role == "user" or open_round is None:
                conversation.rounds += 1
                open_round = conversation.rounds
            new.append(_entry(address, message, open_round, texts[message.client_id]))
        if new:
            conversation.save(update_fields=["rounds", "updated_at"])
            HistoryEntry.objects.bulk_create(new)
            schedule_embedding([entry.pk for entry in new if entry.pk is not None], task=EMBED_IMPORTED_TASK)
    return ImportOutcome(created=new, existing=len(known), rounds=conversation.rounds)


def _entry(address: ConversationAddress, message: ImportedMessage, round_number: int, search_text: str) -> HistoryEntry:
    return HistoryEntry(
        product=address.product,
        user_id=address.user_id,
        conversation_id=address.conversation_id,
        client_id=message.client_id,
        round=round_number,
        role=message.role,
        name=message.name,
        content=message.content,
        created_at=message.created_at,
        search_text=search_text,
    )
