"""Rebuild the vector index for the configured embedding identity (`manage.py reindex_embeddings`).

Resumable by construction: a record belongs to the index its `embedding_index` names, so the work
left is "records not yet in the new index"; an interrupted run simply continues. Each batch is
embedded once, then written with a version check, so a record changed meanwhile stays pending and
is embedded again from its new content. The new index is activated — and the old one retired and
dropped — only when no record is pending, under a lock that waits for in-flight writes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from memories.longterm.models import EmbeddingIndex, LongTermMemory
from memories.longterm.selectors import kind_spec
from memoryhub.clients.embeddings import Embedder, get_embedder

from .embedding_index import forget_active_index, index_get_or_create
from .memories import embedding_text
from .vectors import VectorBackend, backend_named, configured_backend

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reindex:
    index: EmbeddingIndex
    embedder: Embedder
    backend: VectorBackend


def reindex_prepare() -> Reindex:
    """The index for the configured identity and backend, created (as `building`) if needed."""
    embedder, backend = get_embedder(), configured_backend()
    index = index_get_or_create(embedder.identity, backend)
    EmbeddingIndex.objects.filter(pk=index.pk, status="retired").update(status="building", retired_at=None)
    index.refresh_from_db()
    backend.prepare(index)
    return Reindex(index, embedder, backend)


def reindex_pending(index: EmbeddingIndex) -> QuerySet:
    # exclude() on a nullable foreign key also keeps the rows whose index is NULL.
    return LongTermMemory.objects.exclude(embedding_index=index)


def reindex_batch(job: Reindex, *, batch_size: int) -> int:
    """Embed and move one batch of pending records into the new index; return how many moved."""
    rows = list(reindex_pending(job.index).select_related("product").order_by("pk")[:batch_size])
    if not rows:
        return 0
    # Only current memories of searchable kinds carry a vector; a superseded one is history, never a hit.
    specs = {(row.product_id, row.kind): kind_spec(row.product, row.kind) for row in rows}
    searchable = [
        (row, spec)
        for row in rows
        if (spec := specs[(row.product_id, row.kind)]) is not None and spec.searchable and not row.superseded_by
    ]
    vectors = dict(
        zip(
            (row.pk for row, _ in searchable),
            job.embedder.embed([embedding_text(row.content, row.evidence, spec.text_field) for row, spec in searchable])
            if searchable
            else [],
        )
    )
    for row in rows:  # Qdrant first: a row is marked only once its point exists
        job.backend.upsert(job.index, row, vectors.get(row.pk))
    moved = 0
    with transaction.atomic():
        for row in rows:
            moved += LongTermMemory.objects.filter(pk=row.pk, version=row.version).update(
                embedding=vectors.get(row.pk) if job.backend.stores_in_row else None, embedding_index=job.index
            )
        EmbeddingIndex.objects.filter(pk=job.index.pk).update(records_indexed=F("records_indexed") + moved)
    return moved


def reindex_activate(job: Reindex) -> bool:
    """Make the new index the active one iff nothing is pending; False means "run more batches"."""
    with transaction.atomic():
        # FOR UPDATE on the active row waits for every write holding it FOR SHARE; new writes wait for us.
        previous = list(EmbeddingIndex.objects.select_for_update().filter(status="active").exclude(pk=job.index.pk))
        if reindex_pending(job.index).exists():
            return False
        now = timezone.now()
        EmbeddingIndex.objects.filter(pk__in=[i.pk for i in previous]).update(status="retired", retired_at=now)
        count = LongTermMemory.objects.filter(embedding_index=job.index).count()
        EmbeddingIndex.objects.filter(pk=job.index.pk).update(status="active", activated_at=now, records_indexed=count)
        forget_active_index()
    for old in previous:
        _drop_quietly(old)
    job.index.refresh_from_db()
    return True


def _drop_quietly(index: EmbeddingIndex) -> None:
    """Free the retired index's storage; its rows already point at the new index, so nothing reads it."""
    try:
        backend_named(index.backend).drop(index)
    except Exception as exc:  # the new index is active either way; say what was left behind
        logger.warning("could not drop retired index %s (%s): %s", index.pk, index.storage_name, exc)
