"""Reads of long-term memories, memory kinds and tasks; every query is scoped to the product (and the user).

Search is honest about what it is: `keyword` matches jieba-segmented words in SQL (a GIN-indexed
`simple` tsvector on PostgreSQL, LIKE over the same tokens on SQLite), `semantic` ranks by cosine
distance of real embeddings in the vector backend. Only searchable kinds (`preference` and the
product's kinds defined `searchable`) take part, and only current memories: an expired or superseded
memory is filtered out by the query itself, on every path. Task checkpoints are other tables and never appear.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from memories.longterm import admission, hybrid_postgres, keyword, resident, resident_rank
from memories.longterm.kinds import KindSpec, builtin_spec, single_valued_of
from memories.longterm.models import (
    LongTermMemory,
    MemoryKind,
    Task,
    TaskCheckpoint,
    TaskReport,
    current,
    unexpired,
)
from memories.longterm.services.embedding_index import (
    IndexInUse,
    forget_index_last_seen,
    index_in_use,
    index_last_seen,
    query_embedding_scope,
)
from memories.longterm.services.vectors import (
    TABLE,
    PgvectorBackend,
    answered_columns,
    builtin_searchable_kinds,
    configured_backend,
    index_replaced,
    memory_of,
)
from memories.models import Product
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.clients.embeddings import get_embedder
from memoryhub.errors import InvalidRequest, NotFound
from memoryhub.pagination import decode_cursor, encode_cursor, keyset_page
from memoryhub.ranking import fuse_and_place, script
from memoryhub.timefmt import sql_time

KEYWORD, SEMANTIC, HYBRID = "keyword", "semantic", "hybrid"
MAX_RESULTS = 1000  # deepest position a search cursor may reach
HYBRID_DEPTH = 100  # each signal's list fused by a hybrid search (deeper pages fuse deeper lists)


@dataclass(frozen=True)
class SearchPage:
    mode: str
    results: list[tuple[LongTermMemory, float]]
    next: str | None
    embedding_identity: str | None = None
    # Per result (same order): each signal's rank and score, and the fused score (docs/recall.md).
    why: list[dict] | None = None


# ---------------------------------------------------------------------------------------------
# Kinds
# ---------------------------------------------------------------------------------------------


def kinds_scope(product: Product) -> working_set.Scope:
    """The working-set entry of a product's kind definitions (no user: it cannot share a user's key)."""
    return working_set.Scope(product.pk, "", "", "memoryKinds")


def kind_list(product: Product) -> QuerySet[MemoryKind]:
    return MemoryKind.objects.filter(product=product).order_by("name")


def kinds_page(product: Product, *, cursor: str | None, limit: int) -> tuple[list[MemoryKind], str | None]:
    """A page of the product's own kinds (the built-in ones are not rows) by name: a name is unique per product."""
    return keyset_page(
        MemoryKind.objects.filter(product=product),
        field="name",
        descending=False,
        cursor=cursor,
        limit=limit,
        key_type=str,
    )


def kind_get(product: Product, name: str, *, for_update: bool = False) -> MemoryKind:
    queryset = MemoryKind.objects.filter(product=product, name=name)
    kind = (queryset.select_for_update() if for_update else queryset).first()
    if kind is None:
        raise NotFound(f"no memory kind {name[:64]!r}")
    return kind


def spec_of(kind: MemoryKind) -> KindSpec:
    return KindSpec(
        name=kind.name,
        searchable=kind.searchable,
        single_valued=single_valued_of(kind.content_schema),
        text_field=kind.text_field,
        max_per_user=kind.max_per_user,
        default_ttl_days=kind.default_ttl_days,
        content_schema=kind.content_schema,
        stated_fields=tuple(kind.stated_fields or ()),
        definition_id=kind.pk,
        description=kind.description,
        evidence_policy=kind.evidence_policy,
    )


def product_kind_specs(product: Product) -> dict[str, KindSpec]:
    """The product's own kinds, from the working set (every kind write invalidates it)."""
    specs, _ = working_set.get_or_build(
        kinds_scope(product), lambda: {kind.name: spec_of(kind) for kind in kind_list(product)}
    )
    return specs


def kind_spec(product: Product, name: str) -> KindSpec | None:
    """A built-in kind or one of the product's; None when neither exists."""
    return builtin_spec(name) or product_kind_specs(product).get(name)


def kind_names(product: Product) -> list[str]:
    """Every kind a product can write and read: the built-in ones and its own (what export and admin walk)."""
    return sorted({*admission.KINDS, *product_kind_specs(product)})


def searchable_kinds(product: Product) -> list[str]:
    own = {name for name, spec in product_kind_specs(product).items() if spec.searchable}
    return sorted(set(builtin_searchable_kinds()) | own)


# ---------------------------------------------------------------------------------------------
# Memories
# ---------------------------------------------------------------------------------------------


def _scoped(scope: UserAddress):
    # The vector (kilobytes of text to parse per row) and the token list are never part of an answer.
    return LongTermMemory.objects.filter(product=scope.product, user_id=scope.user_id).defer("embedding", "search_text")


def memory_get(scope: UserAddress, memory_id: str) -> LongTermMemory:
    """A memory by id, superseded ones included (they are history); an expired memory is gone."""
    memory = _scoped(scope).filter(unexpired(timezone.now()), memory_id=memory_id).first()
    if memory is None:
        raise NotFound(f"no memory {memory_id!r} for this user")
    return memory


def memory_list_page(
    scope: UserAddress, *, kind: str | None, cursor: str | None, limit: int, include_superseded: bool = False
):
    now = timezone.now()
    queryset = _scoped(scope).filter(unexpired(now) if include_superseded else current(now))
    if kind:
        queryset = queryset.filter(kind=kind)
    return keyset_page(queryset, field="pk", descending=True, cursor=cursor, limit=limit)


# ---------------------------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------------------------


def _query_tag(mode: str, query: str) -> str:
    return hashlib.sha256(f"{mode}\x00{query}".encode()).hexdigest()[:12]


def _offset(cursor: str | None, mode: str, query: str) -> int:
    """A cursor is bound to its mode and query: another search's cursor is a 400, not a wrong page."""
    state = decode_cursor(cursor)
    if state is None:
        return 0
    valid = isinstance(state, dict) and state.get("q") == _query_tag(mode, query)
    offset = state.get("o") if valid and isinstance(state, dict) else None
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 < offset < MAX_RESULTS:
        raise InvalidRequest("cursor does not belong to this search", details={"field": "cursor"})
    return offset


def _next(mode: str, query: str, offset: int, limit: int, more: bool) -> str | None:
    if not more or offset + limit >= MAX_RESULTS:
        return None
    return encode_cursor({"o": offset + limit, "q": _query_tag(mode, query)})


def memory_search(
    scope: UserAddress, *, mode: str, query: str, limit: int, cursor: str | None, min_score: float | None = None
) -> SearchPage:
    """`min_score` floors the semantic cosine (semantic and hybrid modes): a hit below it is not semantic.

    A hybrid search without one uses SEARCH_MIN_SCORE; a cursor is bound to the mode, query and floor.
    """
    floor = hybrid_floor(min_score) if mode == HYBRID else min_score
    tag = mode if floor is None else f"{mode}:{floor}"
    offset = _offset(cursor, tag, query)
    if mode == HYBRID:
        return _hybrid(scope, query, limit, offset, cast(float, floor), tag)
    if mode == SEMANTIC:
        page = _semantic(scope, query, limit, offset, tag)
        if floor is not None:
            kept = [(row, score) for row, score in page.results if score >= floor]
            more = page.next if len(kept) == len(page.results) else None  # the rest of the ranking is lower
            page = SearchPage(page.mode, kept, more, page.embedding_identity)
    else:
        page = _keyword(scope, query, limit, offset, tag)
    why = [{mode: {"rank": offset + rank, "score": round(score, 6)}} for rank, (_, score) in enumerate(page.results, 1)]
    return SearchPage(page.mode, page.results, page.next, page.embedding_identity, why)


def hybrid_floor(min_score: float | None) -> float:
    """The request's floor, else SEARCH_MIN_SCORE, else the one measured for the configured embedder."""
    from django.conf import settings

    if min_score is not None:
        return min_score
    configured = getattr(settings, "SEARCH_MIN_SCORE", None)
    return float(configured) if configured is not None else get_embedder().min_score


MIN_SCORE_ERROR = "must be a number from -1 to 1"


def valid_min_score(value: object) -> bool:
    """A source's `minScore` (`preferences`, `history-search`), checked at scenario save: a cosine, -1 to 1."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and -1 <= value <= 1


def hybrid_weights() -> dict[str, float]:
    from django.conf import settings

    return {KEYWORD: float(settings.SEARCH_KEYWORD_WEIGHT), SEMANTIC: 1.0}


def hybrid_rrf_k() -> int:
    from django.conf import settings

    return int(settings.SEARCH_RRF_K)


def _hybrid(scope: UserAddress, query: str, limit: int, offset: int, floor: float, tag: str) -> SearchPage:
    """Weighted RRF of the keyword and the semantic rankings (memoryhub.ranking), each hit with its `why`.

    A semantic hit below the floor does not count as semantic; a hit neither signal keeps is not returned.
    """
    depth = min(MAX_RESULTS, max(HYBRID_DEPTH, offset + limit + 1))
    ranked, rows_of, identity = _hybrid_rankings(scope, query, depth)
    rankings = {KEYWORD: ranked.keyword, SEMANTIC: [(pk, score) for pk, score in ranked.semantic if score >= floor]}
    # Another script than the query's: the keyword signal cannot read it, so it keeps its semantic place.
    unreadable = ranked.unreadable(script(query))
    fused = fuse_and_place(
        rankings, hybrid_weights(), rrf_k=hybrid_rrf_k(), anchor=SEMANTIC, unreadable=unreadable,
        limit=offset + limit + 1,
    )  # fmt: skip
    window = fused[offset : offset + limit]
    rows = rows_of([hit.key for hit in window])
    shown = [hit for hit in window if hit.key in rows]  # a row gone since the ranking is not shown
    return SearchPage(
        HYBRID,
        [(rows[hit.key], hit.score) for hit in shown],
        _next(tag, query, offset, limit, len(fused) > offset + limit),
        identity,
        [hit.why() for hit in shown],
    )


def _hybrid_rankings(
    scope: UserAddress, query: str, depth: int
) -> tuple[hybrid_postgres.Rankings, Callable[[list[int]], dict[int, LongTermMemory]], str | None]:
    """Both rankings with each ranked row's content, how to read the page's rows, and the index's identity.

    PostgreSQL with pgvector: the user's memories held in this process, brought up to date by one statement
    (resident.py); or one statement, and the page's rows read afterwards (hybrid_postgres). Otherwise, or when
    that statement cannot read the semantic half: a keyword and a semantic search, rows included.
    """
    if connection.vendor == "postgresql" and isinstance(configured_backend(), PgvectorBackend):
        in_use, now = index_last_seen(), timezone.now()
        vector = in_use.embed_query_array(scope.product.pk, query)  # cached; 503/502 when the embedder fails
        terms = keyword.query_terms(query)
        held = resident.load(scope, terms, in_use)
        if held is not None:  # the user's memories held in this process, up to date (resident.py)
            ranked, cols = resident_rank.rankings(held, held.searchable_kinds, int(in_use.index.pk), vector, depth, now)
            return ranked, lambda ids: {pk: cols.by_id[pk].answer() for pk in ids}, in_use.index.identity_key
        kinds = searchable_kinds(scope.product)
        in_sql = hybrid_postgres.rankings(scope, terms, kinds, in_use, vector, depth, now)
        if in_sql is not None:
            return in_sql, lambda ids: hybrid_postgres.page_rows(scope, ids, now), in_use.index.identity_key
    keyword_page = _keyword(scope, query, depth, 0)
    semantic_page = _semantic(scope, query, depth, 0)
    rows = {row.pk: row for row, _ in [*keyword_page.results, *semantic_page.results]}
    found = hybrid_postgres.Rankings(
        keyword=[(row.pk, score) for row, score in keyword_page.results],
        semantic=[(row.pk, score) for row, score in semantic_page.results],
        scripts={pk: hybrid_postgres.content_script(row.content) for pk, row in rows.items()},
    )
    return found, lambda ids: rows, semantic_page.embedding_identity


def _keyword(scope: UserAddress, query: str, limit: int, offset: int, tag: str = KEYWORD) -> SearchPage:
    terms = keyword.query_terms(query)
    if not terms:
        return SearchPage(KEYWORD, [], None)
    now = timezone.now()
    if connection.vendor == "postgresql":
        found = _keyword_postgres(scope, terms, limit + 1, offset, now)
        more = len(found) > limit
    else:
        ranked = _keyword_portable(scope, terms, limit + 1, offset, now)
        rows = _scoped(scope).filter(current(now)).in_bulk([pk for pk, _ in ranked])
        # A row gone since the ranking leaves its place empty: the next page starts after the places shown.
        found = [(rows[pk], score) for pk, score in ranked[:limit] if pk in rows]
        more = len(ranked) > limit
    return SearchPage(KEYWORD, found[:limit], _next(tag, query, offset, limit, more))


def _keyword_postgres(
    scope: UserAddress, terms: list[str], limit: int, offset: int, now: datetime
) -> list[tuple[LongTermMemory, float]]:
    """The BM25 ranking with each ranked row's answered columns: one statement, no second read of the rows."""
    where, params = hybrid_postgres.keyword_selection(scope, searchable_kinds(scope.product), now)
    ranking, params = keyword.bm25_statement(TABLE, where, params, terms, limit, offset)
    sql = (
        f"SELECT k.score, {answered_columns('m')} FROM ({ranking}) k JOIN {TABLE} m ON m.id = k.id "
        "ORDER BY k.score DESC, k.id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(memory_of(row[1:]), float(row[0])) for row in cursor.fetchall()]


FTS_TABLE = f"{TABLE}_fts"  # SQLite FTS5 over search_text (migration 0004)


def _fts_match(terms: list[str]) -> str:
    """An FTS5 query: any of the terms, each a quoted string (never FTS syntax from the user)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _keyword_portable(
    scope: UserAddress, terms: list[str], limit: int, offset: int, now: datetime
) -> list[tuple[int, float]]:
    """SQLite: FTS5 `bm25()` over the token lists (negated: higher is better), the user's current rows only.

    bm25's document statistics are the whole table's, so a score depends on other rows too; only the
    order of this user's own matches is returned.
    """
    kinds = searchable_kinds(scope.product)
    sql = (
        f"SELECT m.id, -bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} JOIN {TABLE} m ON m.id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH %s AND m.product_id = %s AND m.user_id = %s "
        f"AND m.kind IN ({', '.join(['%s'] * len(kinds))}) "
        "AND m.superseded_by = '' AND m.rolled_back_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > %s) "
        "ORDER BY score DESC, m.id DESC LIMIT %s OFFSET %s"
    )
    params = [_fts_match(terms), scope.product.pk, scope.user_id, *kinds, sql_time(now), limit, offset]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(pk, float(score)) for pk, score in cursor.fetchall()]


def _semantic(scope: UserAddress, query: str, limit: int, offset: int, tag: str = SEMANTIC) -> SearchPage:
    if isinstance(configured_backend(), PgvectorBackend):
        return _semantic_pgvector(scope, query, limit, offset, tag)
    in_use = index_in_use()  # 503 when the index was built for another identity
    entry = query_embedding_scope(scope.product.pk, in_use.embedder.identity, query)
    with working_set.batch([entry, kinds_scope(scope.product)]):  # both working-set reads in one round trip
        vector = in_use.embed_query(scope.product.pk, query)  # cached; 503/502 when the embedder fails
        kinds = searchable_kinds(scope.product)
    now = timezone.now()
    found = dict(
        product_id=scope.product.pk, user_id=scope.user_id, kinds=kinds, vector=vector, limit=limit + 1, offset=offset
    )
    hits = in_use.backend.search(in_use.index, **found, now=now)
    rows = _scoped(scope).filter(current(now)).in_bulk([hit.pk for hit in hits])
    # A vector whose stored version is not the row's (Qdrant ahead of a rolled-back write) is not served.
    more = len(hits) > limit
    results = [(rows[h.pk], h.score) for h in hits[:limit] if h.pk in rows and h.version in (None, rows[h.pk].version)]
    return SearchPage(SEMANTIC, results, _next(tag, query, offset, limit, more), in_use.index.identity_key)


def _semantic_pgvector(scope: UserAddress, query: str, limit: int, offset: int, tag: str) -> SearchPage:
    """The search checks inside its own statement that the index this process last saw is still active.

    It reads the product's searchable kinds itself, so the query vector is the only working-set read.
    When the statement says the index was replaced, the active one is read again and the search repeated.
    """
    in_use = index_last_seen()
    held = _held_semantic(scope, query, limit, offset, tag, in_use)
    if held is not None:
        return held
    for _attempt in range(2):
        vector = in_use.embed_query(scope.product.pk, query)  # cached; 503/502 when the embedder fails
        found = cast(PgvectorBackend, in_use.backend).search_rows(
            in_use.index,
            product_id=scope.product.pk,
            user_id=scope.user_id,
            kinds=builtin_searchable_kinds(),  # and the product's own, read by the statement
            vector=vector,
            limit=limit + 1,
            offset=offset,
        )
        if found.live:
            more, results = len(found.rows) > limit, found.rows[:limit]
            return SearchPage(SEMANTIC, results, _next(tag, query, offset, limit, more), in_use.index.identity_key)
        forget_index_last_seen()
        in_use = index_in_use()  # 503 embedding_index_mismatch when the new index is for another identity
    raise index_replaced()


def _held_semantic(
    scope: UserAddress, query: str, limit: int, offset: int, tag: str, in_use: IndexInUse
) -> SearchPage | None:
    """The page ranked from the user's memories held in this process (resident.py); None: search in SQL.

    The ranking is `memoryhub_search_exact`'s (a held user has fewer rows than its exact-scan bound).
    """
    held = resident.load(scope, [], in_use)
    if held is None:  # the SQL path reads the query's vector itself: it is read once either way
        return None
    vector = in_use.embed_query_array(scope.product.pk, query)  # cached; 503/502 when the embedder fails
    hits, cols = resident_rank.semantic_ranking(
        held, held.searchable_kinds, int(in_use.index.pk), vector, offset + limit + 1, timezone.now()
    )
    results = [(cols.by_id[pk].answer(), score) for pk, score in hits[offset : offset + limit]]
    more = len(hits) > offset + limit
    return SearchPage(SEMANTIC, results, _next(tag, query, offset, limit, more), in_use.index.identity_key)


# ---------------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskState:
    """A task as a resuming client reads it; a never-written task has no input, no stages and no report."""

    task_id: str
    key: str
    input: dict | None
    checkpoints: list[TaskCheckpoint]  # in commit order, each with its task
    report: TaskReport | None


def task_get(scope: UserAddress, task_id: str) -> TaskState:
    """The task with its committed stages in commit order; a never-written task is the empty shape."""
    task = Task.objects.filter(product=scope.product, user_id=scope.user_id, task_id=task_id).first()
    key = f"{scope.product.pk}:{scope.user_id}:task:{task_id}"
    if task is None:
        return TaskState(task_id, key, None, [], None)
    checkpoints = list(task.checkpoints.select_related("task").order_by("id"))
    return TaskState(task_id, key, task.input, checkpoints, TaskReport.objects.filter(task=task).first())
