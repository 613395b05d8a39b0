"""History search: keyword (BM25: FTS5 bm25() / in SQL on PostgreSQL), semantic (cosine) and their weighted RRF fusion.

Hybrid ranking (docs/recall.md, figures in docs/performance.md): weighted RRF with k 5 and equal weights;
a message in another script than the query keeps its semantic place (the keyword signal cannot read it);
then each of the best hits gives its adjacent messages in the same conversation a share of its score.
The semantic floor is long-term search's (docs/recall.md, "The floor"): a semantic hit below it is not semantic.

Every query is scoped to one product and user, and leaves out superseded messages (a turn's message whose
`memories.Message.superseded` is set) — read at search time from the message row, so whatever supersedes
a reply (a regeneration, a rollback) takes it out of search at once.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection

from memories.history import resident, resident_search, vector_cache
from memories.history.models import HistoryEntry
from memories.history.text import TS_CONFIG, query_terms
from memories.history.vector_cache import EPOCH_TABLE  # SQLite only
from memories.longterm.keyword import BM25_B, BM25_K1  # one choice of BM25's constants for every ranking
from memories.longterm.models import EmbeddingIndex
from memories.longterm.selectors import hybrid_floor
from memories.longterm.services.embedding_index import (
    IndexInUse,
    index_in_use,
    index_last_seen,
    stored_active_index_pk,
)
from memories.models import Message
from memoryhub.addresses import UserAddress
from memoryhub.prepared import binding_cursor
from memoryhub.ranking import FusedHit, Ranked, SignalHit, fuse_with_neighbours, script
from memoryhub.timefmt import sql_time

TABLE, MESSAGE_TABLE = HistoryEntry._meta.db_table, Message._meta.db_table
FTS_TABLE = "history_entry_fts"
MODES = ("hybrid", "keyword", "semantic")
# Fusion weights, RRF constant and how deep each signal is read: measured on LoCoMo (bench/locomo.py) and the
# bilingual paraphrase set (docs/recall.md). Dialog questions carry names and rare words: keyword counts fully.
WEIGHTS = {"keyword": 1.0, "semantic": 1.0}
RRF_K = 5
# A hit's adjacent messages earn this share of its fused score (its question, its answer); only the best
# NEIGHBOUR_FROM hits give, so the neighbour lookup stays one small statement.
NEIGHBOUR_SHARE = 0.3
NEIGHBOUR_FROM = 50
MIN_DEPTH = 100
# HNSW breadth: as wide as the rows asked for (pgvector's default 40 at least); the iterative scan goes on
# past it when filters leave too few rows. 200 for every search cost 45 ms at 100,000 messages (performance.md).
MIN_EF_SEARCH = 40


@dataclass(frozen=True)
class HistoryFilters:
    """The selection a search runs over; each field adds one SQL condition (a later one adds its own)."""

    conversations: tuple[str, ...] = ()
    after: datetime | None = None
    before: datetime | None = None
    roles: tuple[str, ...] = ()
    # Rows of one conversation at or after this round are left out (the recall source: what the prompt holds).
    exclude_conversation: str | None = None
    exclude_from_round: int | None = None
    # Witness scopes (docs/roleplay.md): only messages this character witnessed. A turn's message is read
    # with its memories.Message row's `name` and `present`; an imported one has no `present`, so everyone
    # witnessed it (as a turn's message without `present`).
    witness: str | None = None

    def sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        params: list[object] = []
        if self.conversations:
            clauses.append(f"h.conversation_id IN ({', '.join(['%s'] * len(self.conversations))})")
            params.extend(self.conversations)
        if self.after is not None:
            clauses.append("h.created_at >= %s")
            params.append(sql_time(self.after))
        if self.before is not None:
            clauses.append("h.created_at < %s")
            params.append(sql_time(self.before))
        if self.roles:
            clauses.append(f"h.role IN ({', '.join(['%s'] * len(self.roles))})")
            params.extend(self.roles)
        if self.exclude_conversation is not None and self.exclude_from_round is not None:
            clauses.append("NOT (h.conversation_id = %s AND h.round >= %s)")
            params.extend([self.exclude_conversation, self.exclude_from_round])
        if self.witness:
            clauses.append(_witness_sql())
            params.extend([self.witness, self.witness])
        return "".join(f" AND {clause}" for clause in clauses), params

    def call_params(self) -> list[object]:
        """The same selection as `memoryhub_history_semantic`'s arguments (migration 0004): None is no condition."""
        return [
            list(self.conversations) or None,
            self.after,
            self.before,
            list(self.roles) or None,
            self.exclude_conversation,
            self.exclude_from_round,
            self.witness or None,
        ]


def _witness_sql() -> str:
    """memories/selectors/witness.py's witnessed_by on the entry's message (two params), as a correlated lookup
    like the superseded check: imported messages (no message row) were witnessed by everyone."""
    if connection.vendor == "postgresql":
        in_present = "w.present @> jsonb_build_array(%s::text)"
        nobody = "w.present = '[]'::jsonb"
    else:
        in_present = "EXISTS (SELECT 1 FROM json_each(w.present) WHERE json_each.value = %s)"
        nobody = "json_array_length(w.present) = 0"
    return (
        f"(h.message_id IS NULL OR EXISTS (SELECT 1 FROM {MESSAGE_TABLE} w WHERE w.id = h.message_id"
        f" AND ({nobody} OR w.name = %s OR {in_present})))"
    )


@dataclass
class HistoryHit:
    entry: HistoryEntry | resident.Row  # a held row (resident.py) has the columns a hit shows, and `pk`
    score: float
    why: dict = field(default_factory=dict)


def _scope_sql(scope: UserAddress, filters: HistoryFilters) -> tuple[str, list]:
    extra, params = filters.sql()
    # A correlated lookup, evaluated only for a turn's message (imported ones have none): never a join that
    # could read every message of every product, and it does not change how the ranking's own index is used.
    live = f"(h.message_id IS NULL OR NOT (SELECT m.superseded FROM {MESSAGE_TABLE} m WHERE m.id = h.message_id))"
    return f"WHERE h.product_id = %s AND h.user_id = %s AND {live}" + extra, [scope.product.pk, scope.user_id, *params]


def _fts_query(terms: list[str]) -> str:
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


# PostgreSQL BM25 (docs/history.md, "Keyword relevance"): the same formula as SQLite FTS5's bm25(), over a
# bounded amount of work so that its cost does not grow with the user's history.
# Ranked: the user's newest CANDIDATES messages that match any term (all of them for most users). The plan is
# the planner's: a GIN bitmap for rare terms, the (product, user, time) index read backwards for common ones.
CANDIDATES = 1000
# Statistics (message count, average length, each term's document frequency): the user's newest SAMPLE
# messages — exact for a user with at most that many, an estimate from their recent messages above it.
SAMPLE = 1000


def bm25_statement(where: str, where_params: list, terms: list[str], depth: int) -> tuple[str, list]:
    """One statement: the per-term queries, the statistics sample, the candidates and their BM25, best first.

    BM25 = Σ idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · length / average length)), with
    idf(t) = ln(1 + (n − df + 0.5) / (df + 0.5)) (always positive; FTS5's omits the 1 + and floors at 1e-6).
    A term's frequency in a message is `ts_rank_cd` of the one-term query with every weight 1 and no
    normalisation: the number of its occurrences; a message's length is its number of distinct lexemes
    (`length(tsvector)`).
    """
    count = len(terms)
    per_term = ", ".join(f"plainto_tsquery('{TS_CONFIG}', %s) AS t{i}" for i in range(count))
    any_term = " || ".join(f"plainto_tsquery('{TS_CONFIG}', %s)" for _ in range(count))
    frequencies = ", ".join(f"count(*) FILTER (WHERE s.v @@ q.t{i})::float8 AS df{i}" for i in range(count))
    tf = ", ".join(  # counted only where the term occurs (a lexeme lookup): most candidates lack most terms
        f"CASE WHEN h.search_tsv @@ q.t{i} THEN ts_rank_cd('{{1,1,1,1}}', h.search_tsv, q.t{i}, 0)::float8 ELSE 0 END "
        f"AS tf{i}"
        for i in range(count)
    )
    norm = f"{BM25_K1}::float8 * (1 - {BM25_B}::float8 + {BM25_B}::float8 * c.len / greatest(st.avgdl, 1))"
    score = " + ".join(
        f"ln(1 + (st.n - st.df{i} + 0.5) / (st.df{i} + 0.5)) * c.tf{i} * {BM25_K1 + 1}::float8 / (c.tf{i} + {norm})"
        for i in range(count)
    )
    sql = (
        f"WITH q AS MATERIALIZED (SELECT {per_term}), "
        f"sample AS MATERIALIZED (SELECT h.search_tsv AS v FROM {TABLE} h WHERE h.product_id = %s AND h.user_id = %s "
        f"ORDER BY h.created_at DESC LIMIT {SAMPLE}), "
        f"st AS MATERIALIZED (SELECT count(*)::float8 AS n, coalesce(avg(length(s.v)), 1)::float8 AS avgdl, "
        f"{frequencies} FROM sample s CROSS JOIN q), "
        f"c AS MATERIALIZED (SELECT h.id, length(h.search_tsv)::float8 AS len, {tf} FROM {TABLE} h CROSS JOIN q "
        f"{where} AND h.search_tsv @@ ({any_term}) ORDER BY h.created_at DESC, h.id DESC LIMIT {CANDIDATES}) "
        f"SELECT c.id, {score} AS score FROM c CROSS JOIN st ORDER BY score DESC, c.id DESC LIMIT %s"
    )
    return sql, [*terms, *where_params[:2], *where_params, *terms, depth]


def keyword_ranking(scope: UserAddress, query: str, filters: HistoryFilters, depth: int) -> list[SignalHit[int]]:
    terms = query_terms(query)
    if not terms:
        return []
    where, params = _scope_sql(scope, filters)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(*bm25_statement(where, params, terms, depth))
        else:
            cursor.execute(
                f"SELECT h.id, -bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} f JOIN {TABLE} h ON h.id = f.rowid "
                f"{where} AND {FTS_TABLE} MATCH %s ORDER BY bm25({FTS_TABLE}), h.id DESC LIMIT %s",
                [*params, _fts_query(terms), depth],
            )
        rows = cursor.fetchall()
    return [SignalHit(pk, float(score)) for pk, score in rows]


def semantic_ranking(
    scope: UserAddress, query: str, filters: HistoryFilters, depth: int, in_use: IndexInUse | None = None
) -> list[SignalHit[int]]:
    if connection.vendor == "postgresql":
        return _semantic_postgres(scope, query, filters, depth, in_use)
    in_use = in_use or index_in_use()  # 503 when the embedder does not match the active index
    vector = in_use.embed_query(scope.product.pk, query)
    ids, scores = _sqlite_cosines(scope, filters, in_use.index, np.asarray(vector, dtype=np.float32))
    order = np.lexsort((-ids, -scores))[:depth]
    return [SignalHit(int(ids[i]), float(scores[i])) for i in order]


def _sqlite_cosines(
    scope: UserAddress, filters: HistoryFilters, index: EmbeddingIndex, query_vector: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ids the filters select and their cosine to the query, from the user's cached matrix when it has them.

    The whole cached matrix is multiplied (no copy of its rows) and the selected rows' scores picked out.
    """
    query_norm = np.linalg.norm(query_vector)
    ids, epoch, key = _selected_ids(scope, filters, index)
    if not len(ids):
        return ids, np.zeros(0, dtype=np.float32)
    view = vector_cache.cached(key, epoch, ids)
    if view is None or not view[3].all():
        ids, matrix = _sqlite_vectors(ids, epoch, key, index)
        view = vector_cache.cached(key, epoch, ids)
        if view is None or not view[3].all():  # over the byte bound, or changed meanwhile: this search's rows
            scores = matrix @ query_vector / (np.linalg.norm(matrix, axis=1) * query_norm + 1e-12)
            return ids, scores
    matrix, norms, positions, _ = view
    scores = (matrix @ query_vector)[positions] / (norms[positions] * query_norm + 1e-12)
    return ids, scores


# Ids per statement when decoding the vectors a user's cache lacks (under SQLite's bound-parameter limit).
DECODE_BATCH = 500


def _selected_ids(
    scope: UserAddress, filters: HistoryFilters, index: EmbeddingIndex
) -> tuple[np.ndarray, int, vector_cache.Key]:
    """One statement: the ids the filters select, with the user's vector change counter (vector_cache.py)."""
    where, params = _scope_sql(scope, filters)
    epoch_sql = f"SELECT coalesce(max(v.epoch), 0) FROM {EPOCH_TABLE} v WHERE v.product_id = %s AND v.user_id = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT ({epoch_sql}), h.id FROM {TABLE} h {where} AND h.embedding_index_id = %s",
            [scope.product.pk, scope.user_id, *params, index.pk],
        )
        rows = cursor.fetchall()
    epoch = int(rows[0][0]) if rows else 0
    ids = np.fromiter((pk for _, pk in rows), dtype=np.int64, count=len(rows))
    return ids, epoch, (scope.product.pk, scope.user_id, index.pk)


def _sqlite_vectors(
    ids: np.ndarray, epoch: int, key: vector_cache.Key, index: EmbeddingIndex
) -> tuple[np.ndarray, np.ndarray]:
    """The vectors of these ids: cached ones, the others read as text, decoded and added to the cache.

    A row deleted or moved to another index since the ids were read is left out, as a fresh read would.
    """
    view = vector_cache.cached(key, epoch, ids)
    found = view[3] if view is not None else np.zeros(len(ids), dtype=bool)
    found_rows = view[0][view[2][found]] if view is not None else None
    if found.all() and found_rows is not None:
        return ids, found_rows
    decoded_ids, decoded = _decode_vectors(ids[~found], index)
    vector_cache.add(key, epoch, decoded_ids, decoded)
    keep = found.copy()
    keep[~found] = np.isin(ids[~found], decoded_ids)
    matrix = np.empty((len(ids), index.dimension), dtype=np.float32)
    if found_rows is not None and found.any():
        matrix[found] = found_rows
    positions = np.searchsorted(decoded_ids, ids[keep & ~found])
    matrix[keep & ~found] = decoded[positions]
    return ids[keep], matrix[keep]


def _decode_vectors(ids: np.ndarray, index: EmbeddingIndex) -> tuple[np.ndarray, np.ndarray]:
    """The vectors of these ids still in this index, decoded in one parse; ids sorted ascending."""
    rows: list = []
    with connection.cursor() as cursor:
        for start in range(0, len(ids), DECODE_BATCH):
            batch = [int(pk) for pk in ids[start : start + DECODE_BATCH]]
            cursor.execute(
                f"SELECT h.id, h.embedding FROM {TABLE} h WHERE h.id IN ({', '.join(['%s'] * len(batch))}) "
                "AND h.embedding_index_id = %s",
                [*batch, index.pk],
            )
            rows.extend(cursor.fetchall())
    rows.sort(key=lambda row: row[0])
    decoded_ids = np.fromiter((pk for pk, _ in rows), dtype=np.int64, count=len(rows))
    return decoded_ids, vector_cache.decode([raw for _, raw in rows], index.dimension)


def _semantic_postgres(
    scope: UserAddress, query: str, filters: HistoryFilters, depth: int, in_use: IndexInUse | None
) -> list[SignalHit[int]]:
    return _semantic_hits(_semantic_rows(scope, query, filters, depth, in_use or index_last_seen()))


# At most this many messages of a user (all filters aside), PostgreSQL ranks them by an exact scan instead of
# the HNSW index: no settings, and none of the other users' rows that the iterative scan would wade through.
# 2,000 rows scan in ~6 ms, under the HNSW search a hybrid makes at 100,000 (8 ms); long-term's bound too.
# docs/performance.md, "History search on PostgreSQL: an exact scan for few messages".
EXACT_SCAN_MAX_ROWS = 2000


def _semantic_call(
    scope: UserAddress, in_use: IndexInUse, vector: list[float], filters: HistoryFilters, depth: int
) -> tuple[str, list]:
    """`memoryhub_history_semantic` (migration 0004): the active-index check, then an exact or an HNSW scan;
    rows (id, distance, conversation, round, content), nearest first, ties by the newer id."""
    from memories.longterm.services.vectors import vector_param

    index = in_use.index
    sql = f"SELECT * FROM memoryhub_history_semantic(%s, %s, %s::vector, {', '.join(['%s'] * 12)})"
    params = [
        index.pk,
        int(index.dimension),
        vector_param(vector),  # in binary, through binding_cursor
        scope.product.pk,
        scope.user_id,
        *filters.call_params(),
        depth,
        max(MIN_EF_SEARCH, int(depth)),
        EXACT_SCAN_MAX_ROWS,
    ]
    return sql, params


def _semantic_rows(
    scope: UserAddress, query: str, filters: HistoryFilters, depth: int, in_use: IndexInUse, rows: list | None = None
) -> list[tuple]:
    """The function's rows with the index this process last saw active (no query for it), or `rows` already
    read with it. No rows from an index that is not active any more: the index is read again (503 when the
    embedder no longer matches it) and, if another one is active now, searched instead."""
    if rows is None:
        rows = _call_rows(_semantic_call(scope, in_use, in_use.embed_query(scope.product.pk, query), filters, depth))
    if not rows:
        current = index_in_use()
        if current.index.pk != in_use.index.pk:
            vector = current.embed_query(scope.product.pk, query)
            rows = _call_rows(_semantic_call(scope, current, vector, filters, depth))
    return rows


def _call_rows(statement: tuple[str, list]) -> list[tuple]:
    with binding_cursor(connection) as cursor:
        cursor.execute(*statement)
        return cursor.fetchall()


def _semantic_hits(rows: list[tuple]) -> list[SignalHit[int]]:
    return [SignalHit(row[0], 1.0 - float(row[1])) for row in rows]


def history_search(
    scope: UserAddress,
    *,
    query: str,
    mode: str,
    limit: int,
    filters: HistoryFilters | None = None,
    min_score: float | None = None,
) -> list[HistoryHit]:
    """`min_score` floors the semantic cosine as long-term search's does: hybrid defaults to hybrid_floor's,
    semantic has none unless given, keyword ignores it."""
    filters = filters or HistoryFilters()
    floor = hybrid_floor(min_score) if mode == "hybrid" else min_score
    if connection.vendor == "postgresql":
        found = _resident_search(scope, query, mode, limit, filters, floor)
        if found is not None:
            return found
    if mode == "hybrid":
        rankings, rows = _hybrid_rankings(scope, query, filters, max(MIN_DEPTH, limit * 4))
        adjacent = lambda hits: neighbours(scope, filters, hits, rows)  # noqa: E731
        query_script = script(query)
        unreadable = {pk for pk, (_, _, content) in rows.items() if script(content) != query_script}
        fused = _hybrid(_floored(rankings, floor), adjacent, limit, rows, unreadable)
        ranked = [(hit.key, hit.score, hit.why()) for hit in fused]
    else:
        ranking = keyword_ranking if mode == "keyword" else semantic_ranking
        ranked = _single(_floored({mode: ranking(scope, query, filters, limit)}, floor)[mode], mode, limit)
    entries = HistoryEntry.objects.defer("embedding", "search_text").in_bulk([pk for pk, _, _ in ranked])
    return [HistoryHit(entries[pk], score, why) for pk, score, why in ranked if pk in entries]


def _floored(rankings: Mapping[str, Sequence[Ranked[int]]], floor: float | None) -> dict[str, Sequence[Ranked[int]]]:
    """The rankings with the semantic hits below the floor left out (the ranking is best first)."""
    if floor is None or "semantic" not in rankings:
        return dict(rankings)
    return {**rankings, "semantic": [(pk, score) for pk, score in rankings["semantic"] if score >= floor]}


def _single(hits: Sequence[Ranked[int]], mode: str, limit: int) -> list[tuple[int, float, dict]]:
    return [
        (key, score, {mode: {"rank": rank, "score": round(score, 6)}})
        for rank, (key, score) in enumerate(hits[:limit], start=1)
    ]


def _resident_search(
    scope: UserAddress, query: str, mode: str, limit: int, filters: HistoryFilters, floor: float | None
) -> list[HistoryHit] | None:
    """The search over the user's rows held in this process (resident.py); None: the SQL path searches."""
    terms = query_terms(query)
    loaded = resident.load(scope, terms if mode != "semantic" else [])
    if loaded is None:
        return None
    in_use = None
    if mode != "keyword":
        in_use = index_last_seen()
        if loaded.active_index_id != in_use.index.pk:  # another index is active now: the SQL path reads it again
            return None
    held = loaded.resident
    cols = resident_search.columns(held)
    mask = resident_search.selected(cols, filters)
    depth = max(MIN_DEPTH, limit * 4) if mode == "hybrid" else limit
    rankings: dict[str, Sequence[Ranked[int]]] = {}
    if mode != "semantic":
        rankings["keyword"] = resident_search.keyword_hits(loaded, cols, mask, depth)
    if in_use is not None:
        vector = in_use.embed_query_array(scope.product.pk, query)
        rankings["semantic"] = resident_search.semantic_hits(cols, mask, vector, in_use.index.pk, depth)
    rankings = _floored(rankings, floor)
    if mode == "hybrid":
        unreadable = cols.written_in_another_script(script(query))
        adjacent = lambda hits: resident_search.adjacent(cols, mask, hits, held.rows)  # noqa: E731
        fused = _hybrid(rankings, adjacent, limit, held.rows, unreadable)
        ranked = [(hit.key, hit.score, hit.why()) for hit in fused]
    else:
        ranked = _single(rankings[mode], mode, limit)
    return [HistoryHit(held.rows[pk], score, why) for pk, score, why in ranked]


Row = tuple[str, int, str]  # a ranked message's conversation, round and content


def _hybrid_rankings(
    scope: UserAddress, query: str, filters: HistoryFilters, depth: int
) -> tuple[dict[str, list[SignalHit[int]]], dict[int, Row]]:
    """Both rankings and each ranked message's row: on PostgreSQL in one statement, on SQLite in three."""
    if connection.vendor == "postgresql":
        return _hybrid_rankings_postgres(scope, query, filters, depth)
    rankings = {
        "keyword": keyword_ranking(scope, query, filters, depth),
        "semantic": semantic_ranking(scope, query, filters, depth),
    }
    return rankings, _candidates([hit.key for hits in rankings.values() for hit in hits])


def _hybrid_rankings_postgres(
    scope: UserAddress, query: str, filters: HistoryFilters, depth: int
) -> tuple[dict[str, list[SignalHit[int]]], dict[int, Row]]:
    """The BM25 statement and the semantic function's call as one statement, each hit with its row."""
    in_use = index_last_seen()
    semantic_sql, semantic_params = _semantic_call(
        scope, in_use, in_use.embed_query(scope.product.pk, query), filters, depth
    )
    terms = query_terms(query)
    if not terms:
        found = [("semantic", *row) for row in _call_rows((semantic_sql, semantic_params))]
    else:
        where, params = _scope_sql(scope, filters)
        keyword_sql, keyword_params = bm25_statement(where, params, terms, depth)
        found = _call_rows(
            (
                f"SELECT 'keyword', k.id, k.score, h.conversation_id, h.round, h.content FROM ({keyword_sql}) k "
                f"JOIN {TABLE} h ON h.id = k.id UNION ALL SELECT 'semantic', s.* FROM ({semantic_sql}) s",
                [*keyword_params, *semantic_params],
            )
        )
    keyword = sorted((row[1:] for row in found if row[0] == "keyword"), key=lambda r: (-r[1], -r[0]))
    semantic = [row[1:] for row in found if row[0] == "semantic"]
    semantic = sorted(_semantic_rows(scope, query, filters, depth, in_use, semantic), key=lambda r: (r[1], -r[0]))
    rows = {pk: (conversation, round_, content) for pk, _, conversation, round_, content in keyword + semantic}
    return {"keyword": [SignalHit(r[0], float(r[1])) for r in keyword], "semantic": _semantic_hits(semantic)}, rows


def _hybrid(
    rankings: Mapping[str, Sequence[Ranked[int]]],
    adjacent: Callable[[list[int]], dict[int, list[int]]],
    limit: int,
    read: Container[int],
    unreadable: Container[int],
) -> list[FusedHit[int]]:
    """Fused, spread to neighbours, and every message in another script than the query at its semantic place.

    `adjacent` gives each of the best hits its neighbours; only a ranked message whose row was `read` gives
    (one deleted since its ranking does not); `unreadable`: the messages in another script than the query."""
    return fuse_with_neighbours(
        rankings,
        WEIGHTS,
        adjacent,
        rrf_k=RRF_K,
        givers=NEIGHBOUR_FROM,
        may_give=read,
        share=NEIGHBOUR_SHARE,
        anchor="semantic",
        unreadable=unreadable,
        limit=limit,
    )


def _candidates(pks: list[int]) -> dict[int, Row]:
    """id -> (conversation, round, content) of the ranked messages (SQLite: their script, their neighbours)."""
    rows = HistoryEntry.objects.filter(pk__in=pks).values_list("pk", "conversation_id", "round", "content")
    return {pk: (conversation, round_, content) for pk, conversation, round_, content in rows}


def neighbours(
    scope: UserAddress, filters: HistoryFilters, hits: list[int], rows: dict[int, Row]
) -> dict[int, list[int]]:
    """Each hit's previous and next message in its conversation (by id, within the rounds around its own),
    among the messages the search may return. One statement over the (conversation, round) index."""
    if not hits:
        return {}
    where, params = _scope_sql(scope, filters)
    windows = [(rows[pk][0], rows[pk][1]) for pk in hits]
    if connection.vendor == "postgresql":  # one statement text for every search (arrays, not a clause per hit)
        around = (
            "(h.conversation_id, h.round) IN (SELECT w.c, w.r + d.d FROM unnest(%s::text[], %s::int[]) w(c, r) "
            "CROSS JOIN (VALUES (-1), (0), (1)) d(d))"
        )
        params.extend([[c for c, _ in windows], [r for _, r in windows]])
    else:
        around = " OR ".join(["(h.conversation_id = %s AND h.round BETWEEN %s AND %s)"] * len(windows))
        for conversation, round_ in windows:
            params.extend([conversation, max(round_ - 1, 0), round_ + 1])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT h.id, h.conversation_id, h.round FROM {TABLE} h {where} AND ({around})", params)
        return _adjacent(hits, windows, cursor.fetchall())


def _adjacent(
    hits: list[int], windows: list[tuple[str, int]], found: list[tuple[int, str, int]]
) -> dict[int, list[int]]:
    """Each hit's nearest smaller and larger id among the found rows within a round of its own."""
    by_round: dict[tuple[str, int], list[int]] = {}
    for pk, conversation, round_ in found:
        by_round.setdefault((conversation, round_), []).append(pk)
    out: dict[int, list[int]] = {}
    for hit, (conversation, round_) in zip(hits, windows):
        near = [pk for r in (round_ - 1, round_, round_ + 1) for pk in by_round.get((conversation, r), ())]
        before = max((pk for pk in near if pk < hit), default=None)
        after = min((pk for pk in near if pk > hit), default=None)
        out[hit] = [pk for pk in (before, after) if pk is not None]
    return out


def history_status(scope: UserAddress) -> dict[str, int]:
    rows = HistoryEntry.objects.filter(product=scope.product, user_id=scope.user_id)
    active = stored_active_index_pk()
    total = rows.count()
    embedded = rows.filter(embedding_index_id=active).count() if active else 0
    return {"messages": total, "embedded": embedded, "pending": total - embedded}
