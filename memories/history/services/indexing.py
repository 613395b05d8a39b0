"""Writing the history index: a turn's messages as they are stored, imported messages, the backfill.

Keyword text is written with the row, in the caller's transaction: a message is searchable by keyword as
soon as it commits. Its vector follows in background work (`history.embed_entries`, scheduled through the
outbox in the same transaction), so a turn or an import never waits for the embedder.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import transaction

from memories.history.models import HistoryEntry
from memories.history.text import keyword_text
from memories.models import Message
from memoryhub import outbox

EMBED_TASK = "history.embed_entries"
# Imported messages (up to 1,000 a request) are embedded off the request, even when tasks run in-process.
EMBED_IMPORTED_TASK = "history.embed_imported_entries"


def entry_for_message(message: Message) -> HistoryEntry:
    return HistoryEntry(
        product_id=message.product_id,
        user_id=message.user_id,
        conversation_id=message.conversation_id,
        message=message,
        round=message.round,
        role=message.role,
        name=message.name,
        content=message.content,
        created_at=message.created_at,
        search_text=keyword_text(
            role=message.role, name=message.name, content=message.content, created_at=message.created_at
        ),
    )


def schedule_embedding(pks: Sequence[int], *, task: str = EMBED_TASK) -> None:
    """Inside the writing transaction: embed these entries after it commits (one outbox row per batch)."""
    if pks:
        outbox.schedule(task, {"entry_pks": list(pks)}, dedup_key=f"{task}:{min(pks)}-{max(pks)}")


def history_index_messages(messages: Iterable[Message]) -> list[HistoryEntry]:
    """Index a turn's freshly stored messages (call inside the transaction that stored them)."""
    entries = HistoryEntry.objects.bulk_create([entry_for_message(message) for message in messages])
    schedule_embedding([entry.pk for entry in entries if entry.pk is not None])
    return entries


def history_backfill(*, batch_size: int = 500, progress=None) -> int:
    """Index every stored message not yet in the index (messages stored before the index existed)."""
    total = 0
    while True:
        with transaction.atomic():
            batch = list(
                Message.objects.exclude(
                    pk__in=HistoryEntry.objects.filter(message__isnull=False).values("message_id")
                ).order_by("id")[:batch_size]
            )
            if not batch:
                return total
            history_index_messages(batch)
        total += len(batch)
        if progress:
            progress(len(batch))


def unindexed_message_count() -> int:
    return Message.objects.exclude(
        pk__in=HistoryEntry.objects.filter(message__isnull=False).values("message_id")
    ).count()
