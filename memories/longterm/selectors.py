"""Reads of long-term memories, memory kinds and tasks; every query is scoped to the product (and the user).

Search is honest about what it is: `keyword` matches jieba-segmented words in SQL (a GIN-indexed
`simple` tsvector on PostgreSQL, LIKE over the same tokens on SQLite), `semantic` ranks by cosine
distance of real embeddings in the vector backend. Only searchable kinds (`preference` and the
product's kinds defined `searchable`) take part, and only current memories: an expired or superseded
memory is filtered out by the query itself, on every path. Task checkpoints are other tables and never appear.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.db import connection
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.utils import timezone

from memories.longterm import admission, keyword
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
    forget_index_last_seen,
    index_in_use,
    index_last_seen,
    query_embedding_scope,
)
from memories.longterm.services.vectors import (
    TABLE,
    PgvectorBackend,
    builtin_searchable_kinds,
    configured_backend,
    index_replaced,
)
from memories.models import Product
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.errors import InvalidRequest, NotFound
from memoryhub.pagination import decode_cursor, encode_cursor, keyset_page

KEYWORD, SEMANTIC = "keyword", "semantic"
MAX_RESULTS = 1000  # deepest position a search cursor may reach


@dataclass(frozen=True)
class SearchPage:
    mode: str
    results: list[tuple[LongTermMemory, float]]
    next: str | None
    embedding_identity: str | None = None


# ---------------------------------------------------------------------------------------------
# Kinds
# ---------------------------------------------------------------------------------------------


def kinds_scope(product: Product) -> working_set.Scope:
    """The working-set entry of a product's kind definitions (no user: it cannot share a user's key)."""
    return working_set.Scope(product.pk, "", "", "memoryKinds")


def kind_list(product: Product) -> QuerySet[MemoryKind]:
    return MemoryKind.objects.filter(product=product).order_by("name")


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


def memory_search(scope: UserAddress, *, mode: str, query: str, limit: int, cursor: str | None) -> SearchPage:
    offset = _offset(cursor, mode, query)
    if mode == SEMANTIC:
        return _semantic(scope, query, limit, offset)
    return _keyword(scope, query, limit, offset)


def _keyword(scope: UserAddress, query: str, limit: int, offset: int) -> SearchPage:
    terms = keyword.query_terms(query)
    if not terms:
        return SearchPage(KEYWORD, [], None)
    search = _keyword_postgres if connection.vendor == "postgresql" else _keyword_portable
    now = timezone.now()
    ranked = search(scope, terms, limit + 1, offset, now)
    rows = _scoped(scope).filter(current(now)).in_bulk([pk for pk, _ in ranked])
    results = [(rows[pk], score) for pk, score in ranked[:limit] if pk in rows]
    return SearchPage(KEYWORD, results, _next(KEYWORD, query, offset, limit, len(ranked) > limit))


def _keyword_postgres(
    scope: UserAddress, terms: list[str], limit: int, offset: int, now: datetime
) -> list[tuple[int, float]]:
    # OR of the terms, each parsed by plainto_tsquery: every term is a bound parameter, never SQL text.
    tsquery = "(" + " || ".join(["plainto_tsquery('simple'::regconfig, %s)"] * len(terms)) + ")"
    kinds = searchable_kinds(scope.product)
    sql = (
        f"SELECT id, ts_rank({keyword.TSVECTOR_SQL}, {tsquery}) AS score FROM {TABLE} "
        f"WHERE product_id = %s AND user_id = %s AND kind IN ({', '.join(['%s'] * len(kinds))}) "
        "AND superseded_by = '' AND rolled_back_at IS NULL AND (expires_at IS NULL OR expires_at > %s) "
        f"AND {keyword.TSVECTOR_SQL} @@ {tsquery} ORDER BY score DESC, id DESC LIMIT %s OFFSET %s"
    )
    params = [*terms, scope.product.pk, scope.user_id, *kinds, now, *terms, limit, offset]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(pk, float(score)) for pk, score in cursor.fetchall()]


def _keyword_portable(
    scope: UserAddress, terms: list[str], limit: int, offset: int, now: datetime
) -> list[tuple[int, float]]:
    """SQLite: count the query's tokens present in the space-padded token list (LIKE, escaped by Django)."""
    hits = sum(
        (
            Case(When(search_text__contains=f" {term} ", then=Value(1)), default=Value(0), output_field=IntegerField())
            for term in terms
        ),
        Value(0),
    )
    rows = (
        _scoped(scope)
        .filter(current(now), kind__in=searchable_kinds(scope.product))
        .annotate(hits=hits)
        .filter(hits__gt=0)
        .order_by("-hits", "-pk")
        .values_list("pk", "hits")[offset : offset + limit]
    )
    return [(pk, matched / len(terms)) for pk, matched in rows]


def _semantic(scope: UserAddress, query: str, limit: int, offset: int) -> SearchPage:
    if isinstance(configured_backend(), PgvectorBackend):
        return _semantic_pgvector(scope, query, limit, offset)
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
    return SearchPage(SEMANTIC, results, _next(SEMANTIC, query, offset, limit, more), in_use.index.identity_key)


def _semantic_pgvector(scope: UserAddress, query: str, limit: int, offset: int) -> SearchPage:
    """The search checks inside its own statement that the index this process last saw is still active.

    It reads the product's searchable kinds itself, so the query vector is the only working-set read.
    When the statement says the index was replaced, the active one is read again and the search repeated.
    """
    in_use = index_last_seen()
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
            return SearchPage(SEMANTIC, results, _next(SEMANTIC, query, offset, limit, more), in_use.index.identity_key)
        forget_index_last_seen()
        in_use = index_in_use()  # 503 embedding_index_mismatch when the new index is for another identity
    raise index_replaced()


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
