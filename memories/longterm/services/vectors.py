"""Vector backends: where a long-term memory's vector lives and how it is searched (docs/long-term-memories.md).

- pgvector (PostgreSQL): the vector is a column of the memory row, written in the same UPDATE as the
  content. Each embedding index has its own partial HNSW index (`vector_cosine_ops`) on
  `embedding::vector(n)` restricted to its rows, so vectors of two identities are never compared. A user
  with few rows (EXACT_SCAN_MAX_ROWS) is searched exactly on the btree; a larger one through HNSW.
- sqlite-exact (the embedded default): the same column, as text; search is an exact cosine scan of
  the user's rows in numpy.
- qdrant (QDRANT_URL): one collection per embedding identity; each point's payload is the full record
  and only searchable kinds carry a vector. Writes wait (`wait=True`) before the SQL transaction
  commits; a Qdrant failure rolls the SQL write back (503). The two are not one transaction: a crash
  between them leaves Qdrant ahead, which search detects by comparing versions.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.longterm.models import EmbeddingIndex, LongTermMemory, current
from memoryhub.clients.embeddings import EmbeddingIdentity
from memoryhub.clients.errors import DependencyUnavailable
from memoryhub.timefmt import iso

PGVECTOR, SQLITE_EXACT, QDRANT = "pgvector", "sqlite-exact", "qdrant"
TABLE = LongTermMemory._meta.db_table
# HNSW graph and search breadth. bench/search.py measures recall@10 against an exact scan on 100,000
# densely clustered preferences: m=16/ef_construction=64 plateaus near 0.91 however wide the search;
# m=32/ef_construction=128 with ef_search=300 reaches 0.96 for about 12 ms of SQL.
HNSW_M, HNSW_EF_CONSTRUCTION, EF_SEARCH = 32, 128, 300
# The plan of a pgvector search is chosen here, not left to the planner: a user with at most this many
# rows of the searched kinds is scanned exactly (btree on product/user, every distance computed: exact,
# ~1 ms at a few hundred rows); above it the HNSW index answers, with iterative scans so the user filter
# never starves the result (docs/performance.md shows both plans and where the threshold comes from).
EXACT_SCAN_MAX_ROWS = 2000
# Iterative scans stop after this many tuples; a user just above the threshold in a large table needs about
# limit × table rows / user rows of them, so pgvector's default (20,000) is raised.
HNSW_MAX_SCAN_TUPLES = 200_000
QDRANT_VECTOR = "text"


@dataclass(frozen=True)
class Hit:
    pk: int
    score: float  # cosine similarity, 1 = same direction
    version: int | None = None  # the record version stored with the vector, when the backend keeps one


def identity_of(index: EmbeddingIndex) -> EmbeddingIdentity:
    return EmbeddingIdentity(index.provider, index.model, index.dimension, index.preprocessing)


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{float(value):.8g}" for value in vector) + "]"


class VectorBackend(Protocol):
    name: str
    stores_in_row: bool

    def storage_name(self, index: EmbeddingIndex) -> str: ...
    def prepare(self, index: EmbeddingIndex) -> None: ...
    def drop(self, index: EmbeddingIndex) -> None: ...
    def upsert(self, index: EmbeddingIndex, memory: LongTermMemory, vector: list[float] | None) -> None: ...
    def delete(self, index: EmbeddingIndex, pks: list[int]) -> None: ...
    def vectors(self, index: EmbeddingIndex, pks: list[int]) -> dict[int, list[float]]: ...
    def search(
        self,
        index: EmbeddingIndex,
        *,
        product_id: str,
        user_id: str,
        kinds: Sequence[str],
        vector: Sequence[float],
        limit: int,
        offset: int,
        now: datetime | None = None,  # expired and superseded memories are never hits; default: now
    ) -> list[Hit]: ...


class _RowBackend:
    """The vector is the memory row's `embedding` column, written by the same SQL statement as the content."""

    stores_in_row = True

    def upsert(self, index: EmbeddingIndex, memory: LongTermMemory, vector: list[float] | None) -> None:
        return None  # already written with the row

    def delete(self, index: EmbeddingIndex, pks: list[int]) -> None:
        return None  # gone with the row

    def vectors(self, index: EmbeddingIndex, pks: list[int]) -> dict[int, list[float]]:
        rows = LongTermMemory.objects.filter(pk__in=pks, embedding_index=index, embedding__isnull=False)
        return {pk: list(vector or ()) for pk, vector in rows.values_list("pk", "embedding")}


def _fire_deferred_checks() -> None:
    """PostgreSQL refuses DDL on a table with pending deferred-constraint events in the same transaction."""
    if connection.in_atomic_block:
        connection.check_constraints()  # SET CONSTRAINTS ALL IMMEDIATE, then back to DEFERRED


# Raw connections whose session already carries the HNSW settings (set once, outside any transaction).
_configured_sessions: weakref.WeakSet = weakref.WeakSet()
_HNSW_SETTINGS = (
    f"SET {{scope}}hnsw.ef_search = {EF_SEARCH}; "
    # pgvector >= 0.8: keep scanning the graph until enough rows pass the product/user filter.
    "SET {scope}hnsw.iterative_scan = strict_order; "
    f"SET {{scope}}hnsw.max_scan_tuples = {HNSW_MAX_SCAN_TUPLES}"
)


def _hnsw_session(cursor) -> None:
    """Search settings for this connection: once per session in autocommit, per transaction inside one.

    A session-level SET inside a transaction would be undone by a rollback, so only an autocommit
    connection is remembered as configured; saving the round trips matters for every search.
    """
    if connection.in_atomic_block:
        cursor.execute(_HNSW_SETTINGS.format(scope="LOCAL "))
    elif connection.connection not in _configured_sessions:
        cursor.execute(_HNSW_SETTINGS.format(scope=""))
        _configured_sessions.add(connection.connection)


class PgvectorBackend(_RowBackend):
    name = PGVECTOR

    def storage_name(self, index: EmbeddingIndex) -> str:
        return f"longterm_hnsw_{int(index.pk)}"

    def prepare(self, index: EmbeddingIndex) -> None:
        # A partial index per embedding index: its rows only, at its own dimension.
        _fire_deferred_checks()
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {self.storage_name(index)} ON {TABLE} USING hnsw "
                f"((embedding::vector({int(index.dimension)})) vector_cosine_ops) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                f"WHERE embedding_index_id = {int(index.pk)}"
            )

    def drop(self, index: EmbeddingIndex) -> None:
        _fire_deferred_checks()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS {self.storage_name(index)}")

    def search(self, index, *, product_id, user_id, kinds, vector, limit, offset, now=None) -> list[Hit]:
        rows = self.search_rows(
            index,
            product_id=product_id,
            user_id=user_id,
            kinds=kinds,
            vector=vector,
            limit=limit,
            offset=offset,
            now=now,
        )
        return [Hit(row.pk, score) for row, score in rows]

    def search_rows(
        self, index, *, product_id, user_id, kinds, vector, limit, offset, now=None
    ) -> list[tuple[LongTermMemory, float]]:
        """The nearest current rows of the user with their cosine similarity, in one statement (one round trip)."""
        sql, params = search_statement(
            index,
            product_id=product_id,
            user_id=user_id,
            kinds=kinds,
            vector=vector,
            limit=limit,
            offset=offset,
            now=now,
        )
        with connection.cursor() as cursor:
            _hnsw_session(cursor)  # once per session (autocommit); SET LOCAL inside a transaction
        return [(row, 1.0 - float(row.distance)) for row in LongTermMemory.objects.raw(sql, params)]  # type: ignore[attr-defined]


# What a search answers of a row: everything but the vector and the keyword tokens (never part of an answer).
_ROW_COLUMNS = [f.column for f in LongTermMemory._meta.concrete_fields if f.name not in ("embedding", "search_text")]


def search_statement(
    index: EmbeddingIndex,
    *,
    product_id: str,
    user_id: str,
    kinds: Sequence[str],
    vector: Sequence[float],
    limit: int,
    offset: int,
    now: datetime | None = None,
) -> tuple[str, dict]:
    """One statement choosing its plan by the user's size: the exact scan or the HNSW index, then the rows.

    `counted` counts the user's rows of these kinds on the btree (product, user_id, kind, id), stopping at
    EXACT_SCAN_MAX_ROWS + 1: an upper bound of what the exact scan reads, never more than that many entries.
    Both branches sit behind one-time filters of that count, so only one of them runs ("never executed" in
    EXPLAIN ANALYZE for the other): the exact branch computes every distance of the user's rows read through
    the btree (the MATERIALIZED CTE keeps the HNSW index out of it) and orders by (distance, id); the HNSW
    branch walks the index in distance order with iterative scans (session settings) until enough rows pass.
    The index id and dimension are integers from our own row, inlined so the planner can match the partial
    index predicate; everything from a request is a parameter. Expired and superseded rows never match.
    """
    dim, threshold = int(index.dimension), int(EXACT_SCAN_MAX_ROWS)
    mine = (
        f"embedding_index_id = {int(index.pk)} AND product_id = %(product)s AND user_id = %(user)s "
        "AND kind = ANY(%(kinds)s) AND superseded_by = '' AND (expires_at IS NULL OR expires_at > %(now)s)"
    )
    distance = f"(embedding::vector({dim})) <=> %(vector)s::vector({dim})"
    columns = ", ".join(f"m.{column}" for column in _ROW_COLUMNS)
    sql = (
        f"WITH counted AS (SELECT count(*) <= {threshold} AS few FROM (SELECT 1 FROM {TABLE} "
        f"WHERE product_id = %(product)s AND user_id = %(user)s AND kind = ANY(%(kinds)s) LIMIT {threshold + 1}) c), "
        f"mine AS MATERIALIZED (SELECT id, embedding FROM {TABLE} WHERE {mine} AND embedding IS NOT NULL "
        "AND (SELECT few FROM counted)), "
        f"hits AS ((SELECT id, {distance} AS distance FROM mine "
        "ORDER BY distance, id LIMIT %(limit)s OFFSET %(offset)s) "
        # No tie-breaker column here: `ORDER BY distance, id` makes the planner sort instead of using HNSW.
        f"UNION ALL (SELECT id, {distance} AS distance FROM {TABLE} WHERE {mine} AND NOT (SELECT few FROM counted) "
        "ORDER BY distance LIMIT %(limit)s OFFSET %(offset)s)) "
        f"SELECT {columns}, hits.distance FROM hits JOIN {TABLE} m ON m.id = hits.id ORDER BY hits.distance, m.id"
    )
    params = {
        "vector": vector_literal(vector),
        "product": product_id,
        "user": user_id,
        "kinds": list(kinds),
        "now": now or timezone.now(),
        "limit": limit,
        "offset": offset,
    }
    return sql, params


class SqliteExactBackend(_RowBackend):
    name = SQLITE_EXACT

    def storage_name(self, index: EmbeddingIndex) -> str:
        return ""

    def prepare(self, index: EmbeddingIndex) -> None:
        return None

    def drop(self, index: EmbeddingIndex) -> None:
        return None

    def search(self, index, *, product_id, user_id, kinds, vector, limit, offset, now=None) -> list[Hit]:
        now = now or timezone.now()
        rows = list(
            LongTermMemory.objects.filter(
                current(now),
                embedding_index=index,
                product_id=product_id,
                user_id=user_id,
                kind__in=list(kinds),
                embedding__isnull=False,
            ).values_list("pk", "embedding")
        )
        if not rows:
            return []
        matrix = np.asarray([embedding for _, embedding in rows], dtype=np.float64)
        query = np.asarray(vector, dtype=np.float64)
        scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
        ranked = sorted(zip(scores.tolist(), (pk for pk, _ in rows)), key=lambda item: (-item[0], item[1]))
        return [Hit(pk, score) for score, pk in ranked[offset : offset + limit]]


# ---------------------------------------------------------------------------------------------
# Qdrant
# ---------------------------------------------------------------------------------------------

_qdrant_lock = threading.Lock()
_qdrant_clients: dict[str, object] = {}


def qdrant_client(url: str):
    """One client per URL per process; ":memory:" is qdrant-client's in-process mode (tests)."""
    from qdrant_client import QdrantClient

    with _qdrant_lock:
        if url not in _qdrant_clients:
            # No version probe at start-up: an unreachable Qdrant must fail the request that needs it (503).
            kwargs = (
                {"location": ":memory:"}
                if url == ":memory:"
                else {"url": url, "timeout": 5, "check_compatibility": False}
            )
            _qdrant_clients[url] = QdrantClient(**kwargs)
        return _qdrant_clients[url]


def reset_qdrant_clients() -> None:
    with _qdrant_lock:
        _qdrant_clients.clear()


@contextmanager
def _qdrant_errors() -> Iterator[None]:
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except (UnexpectedResponse, ResponseHandlingException, httpx.HTTPError, OSError) as exc:
        raise DependencyUnavailable(
            f"the vector store (Qdrant) is unavailable: {exc.__class__.__name__}", service="qdrant"
        ) from exc


def record_payload(memory: LongTermMemory) -> dict:
    """What Qdrant stores with a point: its own copy of the record (a storage format, not the API's)."""
    return {
        "product": memory.product_id,
        "userId": memory.user_id,
        "id": memory.memory_id,
        "key": memory.key,
        "kind": memory.kind,
        "content": memory.content,
        "evidence": memory.evidence,
        "source": memory.source,
        "version": memory.version,
        "createdAt": iso(memory.created_at),
        "updatedAt": iso(memory.updated_at),
        "expiresAt": iso(memory.expires_at) if memory.expires_at else None,
        "supersededBy": memory.superseded_by or None,
        "supersededAt": iso(memory.superseded_at) if memory.superseded_at else None,
        "expiresAtTs": memory.expires_at.timestamp() if memory.expires_at else None,  # search's range filter
    }


class QdrantBackend:
    name = QDRANT
    stores_in_row = False

    def __init__(self, url: str):
        self.url = url

    @property
    def client(self):
        return qdrant_client(self.url)

    def storage_name(self, index: EmbeddingIndex) -> str:
        return f"memoryhub_{identity_of(index).slug}"

    def prepare(self, index: EmbeddingIndex) -> None:
        from qdrant_client import models

        name = self.storage_name(index)
        with _qdrant_errors():
            if self.client.collection_exists(name):
                return
            self.client.create_collection(
                name,
                vectors_config={
                    QDRANT_VECTOR: models.VectorParams(size=int(index.dimension), distance=models.Distance.COSINE)
                },
            )
            if self.url != ":memory:":  # payload indexes are a server feature; local mode ignores them
                for field in ("product", "userId", "kind"):
                    self.client.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD, wait=True)

    def drop(self, index: EmbeddingIndex) -> None:
        with _qdrant_errors():
            self.client.delete_collection(self.storage_name(index))

    def upsert(self, index: EmbeddingIndex, memory: LongTermMemory, vector: list[float] | None) -> None:
        from qdrant_client import models

        point = models.PointStruct(
            id=int(memory.pk),
            vector={QDRANT_VECTOR: list(vector)} if vector is not None else {},
            payload=record_payload(memory),
        )
        with _qdrant_errors():
            self.client.upsert(self.storage_name(index), points=[point], wait=True)

    def delete(self, index: EmbeddingIndex, pks: list[int]) -> None:
        from qdrant_client import models

        with _qdrant_errors():
            self.client.delete(
                self.storage_name(index),
                points_selector=models.PointIdsList(points=list[models.ExtendedPointId](pks)),
                wait=True,
            )

    def vectors(self, index: EmbeddingIndex, pks: list[int]) -> dict[int, list[float]]:
        with _qdrant_errors():
            points = self.client.retrieve(self.storage_name(index), ids=pks, with_vectors=[QDRANT_VECTOR])
        return {int(p.id): list(p.vector[QDRANT_VECTOR]) for p in points if p.vector and QDRANT_VECTOR in p.vector}

    def search(self, index, *, product_id, user_id, kinds, vector, limit, offset, now=None) -> list[Hit]:
        now = now or timezone.now()
        from qdrant_client import models

        not_expired = models.Filter(
            should=[
                models.IsNullCondition(is_null=models.PayloadField(key="expiresAtTs")),
                models.IsEmptyCondition(is_empty=models.PayloadField(key="expiresAtTs")),
                models.FieldCondition(key="expiresAtTs", range=models.Range(gt=now.timestamp())),
            ]
        )
        must: list[models.Condition] = [
            models.FieldCondition(key="product", match=models.MatchValue(value=product_id)),
            models.FieldCondition(key="userId", match=models.MatchValue(value=user_id)),
            models.FieldCondition(key="kind", match=models.MatchAny(any=list(kinds))),
            not_expired,
        ]
        # Superseded memories keep no vector (see memory services), so they are never a hit.
        with _qdrant_errors():
            response = self.client.query_points(
                self.storage_name(index),
                query=list(vector),
                using=QDRANT_VECTOR,
                query_filter=models.Filter(must=must),
                limit=limit,
                offset=offset,
                with_payload=["version"],
            )
        return [Hit(int(p.id), float(p.score), (p.payload or {}).get("version")) for p in response.points]


def backend_named(name: str) -> VectorBackend:
    if name == QDRANT:
        if not settings.QDRANT_URL:
            raise DependencyUnavailable("this index lives in Qdrant, but QDRANT_URL is not set", service="qdrant")
        return QdrantBackend(settings.QDRANT_URL)
    return PgvectorBackend() if name == PGVECTOR else SqliteExactBackend()


def configured_backend() -> VectorBackend:
    """Qdrant when QDRANT_URL is set; otherwise the database's own (pgvector or the SQLite exact scan)."""
    if settings.QDRANT_URL:
        return QdrantBackend(settings.QDRANT_URL)
    return PgvectorBackend() if connection.vendor == "postgresql" else SqliteExactBackend()
