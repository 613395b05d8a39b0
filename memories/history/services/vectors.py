"""Message vectors of the history index, in the message row (pgvector on PostgreSQL, text on SQLite).

Vectors belong to the active embedding index (memories.longterm: one identity at a time); a row embedded
under another identity is never compared with a query of this one, and is embedded again by the backfill
(`manage.py backfill_history`) after a reindex. On PostgreSQL each index has a partial HNSW index on this
table too (`history_hnsw_<pk>`), created when the first vectors of that index are written. A deployment
whose long-term vectors live in Qdrant still keeps history vectors here, in its database.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import OperationalError, connection, transaction

from memories.history.models import HistoryEntry
from memories.history.text import unit_text
from memories.longterm.models import EmbeddingIndex
from memories.longterm.services.embedding_index import IndexInUse, index_in_use, lock_for_write

TABLE = HistoryEntry._meta.db_table
BATCH = 64
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 64
_prepared: set[int] = set()


def hnsw_name(index: EmbeddingIndex) -> str:
    return f"history_hnsw_{int(index.pk)}"


def prepare_hnsw(index: EmbeddingIndex) -> None:
    """The partial HNSW index of this embedding index's rows (PostgreSQL; once per process).

    Only a speed-up (search scans exactly without it): when it cannot be built inside the caller's transaction
    (e.g. an import with pending deferred checks), it is skipped in a savepoint and tried again next time.
    """
    if connection.vendor != "postgresql" or index.pk in _prepared:
        return
    name = hnsw_name(index)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE tablename = %s AND indexname = %s", [TABLE, name])
        if cursor.fetchone() is None:
            try:
                with transaction.atomic():
                    cursor.execute(
                        f"CREATE INDEX IF NOT EXISTS {name} ON {TABLE} USING hnsw "
                        f"((embedding::vector({int(index.dimension)})) vector_cosine_ops) "
                        f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                        f"WHERE embedding_index_id = {int(index.pk)}"
                    )
            except OperationalError:
                return
    _prepared.add(int(index.pk))


def passage(entry: HistoryEntry) -> str:
    return unit_text(role=entry.role, name=entry.name, content=entry.content, created_at=entry.created_at)


def history_embed(entry_pks: Sequence[int], in_use: IndexInUse | None = None) -> int:
    """Embed the given entries that have no vector of the active index yet; idempotent. Returns how many."""
    in_use = in_use or index_in_use()  # 503 when the embedder does not match the active index: retried later
    prepare_hnsw(in_use.index)
    done = 0
    pending = list(
        HistoryEntry.objects.filter(pk__in=list(entry_pks))
        .exclude(embedding_index=in_use.index)
        .only("pk", "role", "name", "content", "created_at")
        .order_by("pk")
    )
    for start in range(0, len(pending), BATCH):
        batch = pending[start : start + BATCH]
        vectors = in_use.embedder.embed([passage(entry) for entry in batch])  # outside the transaction
        with transaction.atomic():
            lock_for_write(in_use.index)  # the index must still be active when the vectors commit
            for entry, vector in zip(batch, vectors, strict=True):
                # Written only if the row still exists; erasure may have deleted it meanwhile.
                HistoryEntry.objects.filter(pk=entry.pk).update(embedding=vector, embedding_index=in_use.index)
        done += len(batch)
    return done


def unembedded(index: EmbeddingIndex | None = None):
    rows = HistoryEntry.objects.all()
    return rows.exclude(embedding_index=index) if index is not None else rows.filter(embedding_index__isnull=True)
