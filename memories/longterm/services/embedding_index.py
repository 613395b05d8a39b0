"""The embedding index lifecycle (docs/contract.md): exactly one active index, pinned to an embedding identity.

Semantic search and writes use the active index only if the configured embedder has the same
identity (provider, model, dimension, preprocessing) and the configured vector backend is the one
the index lives in. Anything else — even a new model with the same dimension — is refused with 503
`embedding_index_mismatch` until `manage.py reindex_embeddings` has built and activated an index
for the new identity. Vectors of two indexes are never compared: every vector carries its index.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memories.longterm.models import EmbeddingIndex
from memoryhub import working_set
from memoryhub.clients.embeddings import Embedder, EmbeddingIdentity, embed_queries, get_embedder, preprocess

from .vectors import REINDEX_COMMAND, EmbeddingIndexMismatch, VectorBackend, configured_backend, index_replaced


@dataclass(frozen=True)
class IndexInUse:
    """The active index together with the embedder and backend that may read and write it."""

    index: EmbeddingIndex
    embedder: Embedder
    backend: VectorBackend

    def embed_one(self, text: str) -> list[float]:
        return self.embedder.embed([text])[0]

    def embed_query(self, product_id: str, text: str) -> list[float]:
        """A query's vector, from the working set when this identity embedded the same text before.

        Keyed by the embedder's identity and the preprocessed text (what the embedder really encodes),
        so a new identity never reads another's vectors; stored as float64 bytes, the exact vector the
        embedder returned. A cache outage propagates (503), like every working-set read.
        """
        return self.embed_query_array(product_id, text).tolist()

    def embed_query_array(self, product_id: str, text: str) -> np.ndarray:
        """`embed_query` as the float64 array it is stored as (read-only: it views the cached bytes)."""
        entry = query_embedding_scope(product_id, self.embedder.identity, text)
        cached, _ = working_set.get_or_build(entry, lambda: _packed(embed_queries(self.embedder, [text])[0]))
        return np.frombuffer(cached, dtype=np.float64)


def query_embedding_scope(product_id: str, identity: EmbeddingIdentity, text: str) -> working_set.Scope:
    """The working-set entry of one query text's vector: per product, per identity, per normalised text."""
    digest = hashlib.sha256(f"{identity.key}\n{preprocess(text)}".encode()).hexdigest()
    return working_set.Scope(product_id, "", "", f"queryEmbedding:{digest}")


def _packed(vector: list[float]) -> bytes:
    return np.asarray(vector, dtype=np.float64).tobytes()


def active_index() -> EmbeddingIndex | None:
    return EmbeddingIndex.objects.filter(status="active").first()


# The active index's pk as a working-set entry (0: none), so a prepare need not query for it.
ACTIVE_INDEX_SCOPE = working_set.Scope("*", "", "", "activeEmbeddingIndex")


def active_index_pk() -> int | None:
    """The active index, from the working set (hot paths: a search checks its index again in its statement)."""
    pk, _ = working_set.get_or_build(ACTIVE_INDEX_SCOPE, lambda: stored_active_index_pk() or 0)
    return pk or None


def stored_active_index_pk() -> int | None:
    """The active index as the database has it now. A reindex run by a management command cannot reach a server's
    local-memory working set (the embedded default), so a status that reports it reads this."""
    return EmbeddingIndex.objects.filter(status="active").values_list("pk", flat=True).first()


def forget_active_index() -> None:
    """Call inside the transaction that changes which index is active."""
    forget_index_last_seen()
    working_set.invalidate(ACTIVE_INDEX_SCOPE)


def _mismatch(active: EmbeddingIndex | None, identity: EmbeddingIdentity, backend: VectorBackend) -> Exception:
    current = f"{active.identity_key} on {active.backend}" if active else "none"
    return EmbeddingIndexMismatch(
        f"the vector index was built for {current}, but {identity.key} on {backend.name} is configured; "
        f"semantic search and writes are refused until `{REINDEX_COMMAND}` has rebuilt the index",
        details={
            "activeIndex": {"identity": active.identity_key, "backend": active.backend} if active else None,
            "configured": {"identity": identity.key, "backend": backend.name},
            "command": REINDEX_COMMAND,
        },
        service="embedder",
    )


def index_in_use() -> IndexInUse:
    """The active index if it matches the configuration; bootstraps the first one on an empty store."""
    global _last_in_use
    embedder, backend = get_embedder(), configured_backend()
    identity = embedder.identity
    active = active_index() or _bootstrap(identity, backend)
    if active is None or active.identity_key != identity.key or active.backend != backend.name:
        raise _mismatch(active, identity, backend)
    _last_in_use = IndexInUse(active, embedder, backend)
    return _last_in_use


# The index this process last found active, for a search that checks it again in its own statement.
_last_in_use: IndexInUse | None = None


def index_last_seen() -> IndexInUse:
    """`index_in_use()` as this process last read it, without a query — only for a caller that verifies it.

    Another process may have activated another index since: a caller must check inside its own statement
    that this index is still the active one for this identity (`memoryhub_search_exact` does) and call
    `index_in_use()` again when it is not. The configured embedder and backend are compared here, so a
    change of settings is never served from the last index.
    """
    last = _last_in_use
    if last is None or last.embedder is not get_embedder() or last.backend.name != configured_backend().name:
        return index_in_use()
    return last


def forget_index_last_seen() -> None:
    global _last_in_use
    _last_in_use = None


def index_get_or_create(identity: EmbeddingIdentity, backend: VectorBackend) -> EmbeddingIndex:
    """The index row of this identity on this backend (a new one starts as `building`)."""
    fields = dict(
        provider=identity.provider,
        model=identity.model,
        dimension=identity.dimension,
        preprocessing=identity.preprocessing,
    )
    try:
        with transaction.atomic():
            index, created = EmbeddingIndex.objects.get_or_create(
                identity_key=identity.key, backend=backend.name, defaults=fields
            )
    except IntegrityError:  # a concurrent creator won
        index, created = EmbeddingIndex.objects.get(identity_key=identity.key, backend=backend.name), False
    if created or not index.storage_name:
        EmbeddingIndex.objects.filter(pk=index.pk).update(storage_name=backend.storage_name(index))
        index.refresh_from_db()
    return index


def _bootstrap(identity: EmbeddingIdentity, backend: VectorBackend) -> EmbeddingIndex | None:
    """On a fresh install (no index was ever built) activate the configured identity.

    Only operator-made state decides: a tenant can create long-term memories (or import them), so their
    existence must not stop every product's writes; once any index row exists, only a reindex activates one.
    """
    if EmbeddingIndex.objects.exists():
        return None
    index = index_get_or_create(identity, backend)
    backend.prepare(index)
    try:
        with transaction.atomic():
            EmbeddingIndex.objects.filter(pk=index.pk).exclude(status="active").update(
                status="active", activated_at=timezone.now(), retired_at=None
            )
            forget_active_index()
    except IntegrityError:  # another process activated an index first; use whatever is active now
        pass
    return active_index()


def lock_for_write(index: EmbeddingIndex) -> None:
    """Inside a write's transaction: hold the index active until commit (the reindex flip waits for us)."""
    with connection.cursor() as cursor:
        lock = " FOR SHARE" if connection.vendor == "postgresql" else ""  # SQLite writers are serialised
        cursor.execute(f"SELECT status FROM {EmbeddingIndex._meta.db_table} WHERE id = %s{lock}", [index.pk])
        row = cursor.fetchone()
    if row is None or row[0] != "active":
        raise index_replaced()
