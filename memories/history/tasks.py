"""Celery interface of the history index: embedding messages after they are stored (scheduled via the outbox)."""

from __future__ import annotations

from celery import shared_task

from memories.history.services.indexing import EMBED_IMPORTED_TASK, EMBED_TASK
from memories.history.services.vectors import history_embed

__all__ = ["EMBED_IMPORTED_TASK", "EMBED_TASK", "embed_entries", "embed_imported_entries"]


@shared_task(name=EMBED_TASK, acks_late=True)
def embed_entries(entry_pks: list[int]) -> int:
    return history_embed(entry_pks)


@shared_task(name=EMBED_IMPORTED_TASK, acks_late=True)
def embed_imported_entries(entry_pks: list[int]) -> int:
    return history_embed(entry_pks)
