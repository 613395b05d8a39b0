"""Celery interface of long-term memories: the periodic sweep of expired memories (CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from memories.longterm.services.memories import memories_expired_delete

BATCH = 500


@shared_task(name="longterm.delete_expired_memories", acks_late=True)
def delete_expired_memories(batch_size: int = BATCH) -> int:
    """Delete every memory whose expiresAt has passed, batch by batch; idempotent (a second run finds none)."""
    total = 0
    while True:
        deleted = memories_expired_delete(batch_size=batch_size)
        total += deleted
        if deleted < batch_size:
            return total
