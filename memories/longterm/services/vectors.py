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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np
import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models import signals
from django.db.models.base import ModelState
from django.utils import timezone
from pgvector import Vector
from pgvector.psycopg.vector import VectorBinaryDumper

from memories.longterm.admission import KINDS
from memories.longterm.models import EmbeddingIndex, LongTermMemory, MemoryKind, current
from memoryhub.clients.embeddings import EmbeddingIdentity
from memoryhub.clients.errors import DependencyUnavailable
from memoryhub.prepared import binding_cursor
from memoryhub.timefmt import iso

PGVECTOR, SQLITE_EXACT, QDRANT = "pgvector", "sqlite-exact", "qdrant"
TABLE = LongTermMemory._meta.db_table
INDEX_TABLE, KIND_TABLE = EmbeddingIndex._meta.db_table, MemoryKind._meta.db_table
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


REINDEX_COMMAND = "python manage.py reindex_embeddings"


class EmbeddingIndexMismatch(DependencyUnavailable):
    """The configured embedder or backend is not the one the active vector index was built with.

    A dependency error (503), so that it fails a turn too instead of becoming an empty source.
    """

    code = "embedding_index_mismatch"


def index_replaced() -> EmbeddingIndexMismatch:
    return EmbeddingIndexMismatch(
        "the vector index was replaced while this request used it; retry the request",
        service="embedder",
        details={"command": REINDEX_COMMAND},
    )


@dataclass(frozen=True)
class Hit:
    pk: int
    score: float  # cosine similarity, 1 = same direction
    version: int | None = None  # the record version stored with the vector, when the backend keeps one


def identity_of(index: EmbeddingIndex) -> EmbeddingIdentity:
    return EmbeddingIdentity(index.provider, index.model, index.dimension, index.preprocessing)


def builtin_searchable_kinds() -> list[str]:
    return sorted(name for name, rules in KINDS.items() if rules.searchable)


# Query vectors travel in pgvector's binary format (a header and float4s: no float formatting or parsing,
# ~5 µs against ~0.3 ms for the text of a 512-d vector). OID 0: the server takes the type from `::vector`.
# Registered globally at import, which Django's app loading does (the longterm app's producers) before any
# connection is opened: every connection starts from the global adapters.
psycopg.adapters.register_dumper(Vector, VectorBinaryDumper)


def vector_param(vector: Sequence[float]) -> Vector:
    """A query vector as a statement parameter (`%(vector)s::vector`), sent in binary."""
    return Vector(np.asarray(vector, dtype=np.float32))


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


def _hnsw_settings(cursor) -> None:
    """The HNSW search settings for the current transaction only (SET LOCAL).

    Never for the session: behind a transaction-pooling PgBouncer a session setting would stay with a
    server connection that other clients then use, and this one might search on a connection without it.
    """
    cursor.execute(
        f"SET LOCAL hnsw.ef_search = {int(EF_SEARCH)}; "
        # pgvector >= 0.8: keep scanning the graph until enough rows pass the product/user filter.
        "SET LOCAL hnsw.iterative_scan = strict_order; "
        f"SET LOCAL hnsw.max_scan_tuples = {int(HNSW_MAX_SCAN_TUPLES)}"
    )


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
        found = self.search_rows(
            index,
            product_id=product_id,
            user_id=user_id,
            kinds=kinds,
            vector=vector,
            limit=limit,
            offset=offset,
            now=now,
        )
        if not found.live:
            raise index_replaced()
        return [Hit(row.pk, score) for row, score in found.rows]

    def search_rows(self, index, *, product_id, user_id, kinds, vector, limit, offset, now=None) -> RowSearch:
        """The nearest current rows of the user with their cosine similarity.

        One round trip while the user has at most EXACT_SCAN_MAX_ROWS rows (`memoryhub_search_exact`: the
        gate, the exact scan on the btree, the rows); a second one, through the HNSW index, above that.
        `RowSearch.live` is False when `index` is no longer the active index of its identity (checked by the
        function itself): the caller read it from memory (embedding_index.index_last_seen) and must read it
        again. The product's own searchable kinds are searched besides `kinds` (the statement reads them).
        """
        asked = dict(product_id=product_id, user_id=user_id, kinds=kinds, vector=vector, limit=limit, offset=offset)
        sql, params = exact_statement(index, **asked, now=now)
        with binding_cursor(connection) as cursor:  # the vector goes in binary
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        live, scanned = rows[0][0], rows[0][1]
        if not live:
            return RowSearch(False, "none", [])
        if scanned <= EXACT_SCAN_MAX_ROWS:
            return RowSearch(True, "exact", [_pair(row[2:]) for row in rows[1:]])  # (distance, columns…)
        sql, params = hnsw_statement(index, **asked, now=now)
        with transaction.atomic(using=connection.alias), binding_cursor(connection) as cursor:
            _hnsw_settings(cursor)
            cursor.execute(sql, params)  # the vector goes in binary
            return RowSearch(True, "hnsw", [_pair(row) for row in cursor.fetchall()])


@dataclass(frozen=True)
class RowSearch:
    live: bool  # False: the index searched is not the active one any more (nothing was searched)
    branch: str  # "exact" (the user's rows scanned on the btree) or "hnsw" (the index, iterative scan)
    rows: list[tuple[LongTermMemory, float]]  # with the cosine similarity, nearest first


# What a search answers of a row: everything but the vector and the keyword tokens (never part of an answer).
_ROW_FIELDS = [f for f in LongTermMemory._meta.concrete_fields if f.name not in ("embedding", "search_text")]
_ROW_COLUMNS = [f.column for f in _ROW_FIELDS]
_ROW_ATTNAMES = [f.attname for f in _ROW_FIELDS]
_row_converters: list[tuple[int, list]] | None = None


def _converters() -> list[tuple[int, list]]:
    """Per answered column, the converters the ORM would apply to it (e.g. JSON text → dict)."""
    global _row_converters
    if _row_converters is None:
        found = []
        for i, field in enumerate(_ROW_FIELDS):
            col = field.get_col(TABLE)
            functions = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
            if functions:
                found.append((i, [(function, col) for function in functions]))
        _row_converters = found
    return _row_converters


def answered_columns(alias: str) -> str:
    """The columns a search answers of a row (`memory_of` reads them in this order), qualified by `alias`."""
    return ", ".join(f"{alias}.{column}" for column in _ROW_COLUMNS)


def memory_of(columns: Sequence) -> LongTermMemory:
    """The memory from its answered columns (`answered_columns`), converted as the ORM would."""
    values = list(columns)
    for i, converters in _converters():
        for function, col in converters:
            values[i] = function(values[i], col, connection)
    return _instance(values)


def _pair(row: Sequence) -> tuple[LongTermMemory, float]:
    """(memory, cosine similarity) from a row of distance then the answered columns."""
    return memory_of(row[1:]), 1.0 - float(row[0])


def _instance(values: list) -> LongTermMemory:
    """What `LongTermMemory.from_db` makes of these columns (the others deferred), without `Model.__init__`.

    Building eleven instances through `__init__` was a tenth of a search's time; the attributes, state and
    deferred fields are the same. `from_db` itself is used whenever init signals are connected.
    """
    if signals.pre_init.has_listeners(LongTermMemory) or signals.post_init.has_listeners(LongTermMemory):
        return LongTermMemory.from_db(connection.alias, _ROW_ATTNAMES, values)
    memory = LongTermMemory.__new__(LongTermMemory)
    memory.__dict__.update(zip(_ROW_ATTNAMES, values))
    memory._state = ModelState()
    memory._state.adding, memory._state.db = False, connection.alias
    return memory


def _params(index: EmbeddingIndex, *, product_id, user_id, kinds, vector, limit, offset, now) -> dict:
    return {
        "index": int(index.pk),
        "identity": index.identity_key,
        "backend": index.backend,
        "vector": vector_param(vector),
        "product": product_id,
        "user": user_id,
        "kinds": list(kinds),
        "now": now or timezone.now(),
        "limit": limit,
        "offset": offset,
        "max": EXACT_SCAN_MAX_ROWS,
    }


def exact_statement(index: EmbeddingIndex, **asked) -> tuple[str, dict]:
    """The gate, the exact scan and the answered rows: one call of `memoryhub_search_exact` (migration 0003).

    Its first row has no memory: the gate and how many of the user's rows there are (more than
    EXACT_SCAN_MAX_ROWS: no hits, the caller goes to the HNSW index); the hits follow, nearest first.
    """
    sql = (
        "SELECT * FROM memoryhub_search_exact(%(index)s, %(identity)s, %(backend)s, %(product)s, %(user)s, "
        "%(kinds)s, %(vector)s::vector, %(now)s, %(limit)s, %(offset)s, %(max)s)"
    )
    return sql, _params(index, **asked)


def hnsw_statement(index: EmbeddingIndex, **asked) -> tuple[str, dict]:
    """A large user's search through the index's own partial HNSW index, with iterative scans (_hnsw_settings).

    The index id and dimension are integers from our own row, inlined so the planner can match the partial
    index predicate; everything from a request is a parameter. Expired and superseded rows never match.
    """
    dim = int(index.dimension)
    distance = f"(embedding::vector({dim})) <=> %(vector)s::vector({dim})"
    columns = ", ".join(f"m.{column}" for column in _ROW_COLUMNS)
    kinds = (
        f"%(kinds)s::text[] || ARRAY(SELECT name::text FROM {KIND_TABLE} WHERE product_id = %(product)s AND searchable)"
    )
    sql = (
        # No tie-breaker column in the inner ORDER BY: `ORDER BY distance, id` makes the planner sort instead.
        f"SELECT hits.distance, {columns} FROM (SELECT id, {distance} AS distance FROM {TABLE} "
        f"WHERE embedding_index_id = {int(index.pk)} AND product_id = %(product)s AND user_id = %(user)s "
        f"AND kind = ANY({kinds}) AND superseded_by = '' AND rolled_back_at IS NULL "
        "AND (expires_at IS NULL OR expires_at > %(now)s) "
        "ORDER BY distance LIMIT %(limit)s OFFSET %(offset)s) hits "
        f"JOIN {TABLE} m ON m.id = hits.id ORDER BY hits.distance, m.id"
    )
    return sql, _params(index, **asked)


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
        "turnId": memory.turn_id,
        "rolledBackAt": iso(memory.rolled_back_at) if memory.rolled_back_at else None,
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
