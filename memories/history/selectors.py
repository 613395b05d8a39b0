"""History search: keyword (FTS5 bm25 / ts_rank_cd), semantic (cosine) and their weighted RRF fusion.

Hybrid ranking (docs/recall.md, figures in docs/performance.md): weighted RRF with k 5 and equal weights;
a message in another script than the query keeps its semantic place (the keyword signal cannot read it);
then each of the best hits gives its adjacent messages in the same conversation a share of its score.

Every query is scoped to one product and user, and leaves out superseded messages (a turn's message whose
`memories.Message.superseded` is set) — read at search time from the message row, so whatever supersedes
a reply (a regeneration, a rollback) takes it out of search at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import connection, transaction

from memories.history.models import HistoryEntry
from memories.history.text import query_terms
from memories.longterm.services.embedding_index import IndexInUse, active_index_pk, index_in_use
from memories.models import Message
from memoryhub.addresses import UserAddress
from memoryhub.prepared import binding_cursor
from memoryhub.ranking import FusedHit, SignalHit, fuse, keep_places, script, spread_to_neighbours

TABLE, MESSAGE_TABLE = HistoryEntry._meta.db_table, Message._meta.db_table
FTS_TABLE = "history_entry_fts"
TS_CONFIG = "english"  # must match migration 0001's generated tsvector column
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
EF_SEARCH = 200


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

    def sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        params: list[object] = []
        if self.conversations:
            clauses.append(f"h.conversation_id IN ({', '.join(['%s'] * len(self.conversations))})")
            params.extend(self.conversations)
        if self.after is not None:
            clauses.append("h.created_at >= %s")
            params.append(self.after)
        if self.before is not None:
            clauses.append("h.created_at < %s")
            params.append(self.before)
        if self.roles:
            clauses.append(f"h.role IN ({', '.join(['%s'] * len(self.roles))})")
            params.extend(self.roles)
        if self.exclude_conversation is not None and self.exclude_from_round is not None:
            clauses.append("NOT (h.conversation_id = %s AND h.round >= %s)")
            params.extend([self.exclude_conversation, self.exclude_from_round])
        return "".join(f" AND {clause}" for clause in clauses), params


@dataclass
class HistoryHit:
    entry: HistoryEntry
    score: float
    why: dict = field(default_factory=dict)


def _scope_sql(scope: UserAddress, filters: HistoryFilters) -> tuple[str, list]:
    extra, params = filters.sql()
    live = "(h.message_id IS NULL OR NOT m.superseded)"
    return (
        f"LEFT JOIN {MESSAGE_TABLE} m ON m.id = h.message_id WHERE h.product_id = %s AND h.user_id = %s AND {live}"
        + extra,
        [scope.product.pk, scope.user_id, *params],
    )


def _fts_query(terms: list[str]) -> str:
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _ts_query(terms: list[str]) -> str:
    return " | ".join("'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)


def keyword_ranking(scope: UserAddress, query: str, filters: HistoryFilters, depth: int) -> list[SignalHit[int]]:
    terms = query_terms(query)
    if not terms:
        return []
    where, params = _scope_sql(scope, filters)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT h.id, ts_rank_cd(h.search_tsv, q, 1) AS score "
                f"FROM {TABLE} h CROSS JOIN to_tsquery('{TS_CONFIG}', %s) q {where} AND h.search_tsv @@ q "
                f"ORDER BY score DESC, h.id DESC LIMIT %s",
                [_ts_query(terms), *params, depth],
            )
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
    in_use = in_use or index_in_use()  # 503 when the embedder does not match the active index
    vector = in_use.embed_query(scope.product.pk, query)
    where, params = _scope_sql(scope, filters)
    index = in_use.index
    if connection.vendor == "postgresql":
        from memories.longterm.services.vectors import vector_param

        cast = f"h.embedding::vector({int(index.dimension)})"
        with transaction.atomic():
            with connection.cursor() as settings_cursor:
                settings_cursor.execute(
                    f"SET LOCAL hnsw.ef_search = {EF_SEARCH}; SET LOCAL hnsw.iterative_scan = relaxed_order; "
                    "SET LOCAL hnsw.max_scan_tuples = 200000"
                )
            with binding_cursor(connection) as cursor:  # the vector goes in binary
                cursor.execute(
                    f"SELECT h.id, {cast} <=> %s::vector AS distance FROM {TABLE} h {where} "
                    f"AND h.embedding_index_id = %s ORDER BY distance LIMIT %s",
                    [vector_param(vector), *params, index.pk, depth],
                )
                rows = cursor.fetchall()
        return [SignalHit(pk, 1.0 - float(distance)) for pk, distance in sorted(rows, key=lambda r: (r[1], -r[0]))]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT h.id, h.embedding FROM {TABLE} h {where} AND h.embedding_index_id = %s", [*params, index.pk]
        )
        rows = cursor.fetchall()
    if not rows:
        return []
    matrix = np.asarray([_parse(raw) for _, raw in rows], dtype=np.float32)
    query_vector = np.asarray(vector, dtype=np.float32)
    scores = matrix @ query_vector / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query_vector) + 1e-12)
    order = np.lexsort((-np.asarray([pk for pk, _ in rows]), -scores))[:depth]
    return [SignalHit(rows[i][0], float(scores[i])) for i in order]


def _parse(raw: str) -> np.ndarray:
    return np.fromstring(raw.strip("[]"), sep=",", dtype=np.float32)  # pgvector's text form on SQLite


def history_search(
    scope: UserAddress, *, query: str, mode: str, limit: int, filters: HistoryFilters | None = None
) -> list[HistoryHit]:
    filters = filters or HistoryFilters()
    depth = max(MIN_DEPTH, limit * 4)
    if mode == "keyword":
        rankings = {"keyword": keyword_ranking(scope, query, filters, limit)}
    elif mode == "semantic":
        rankings = {"semantic": semantic_ranking(scope, query, filters, limit)}
    else:
        rankings = {
            "keyword": keyword_ranking(scope, query, filters, depth),
            "semantic": semantic_ranking(scope, query, filters, depth),
        }
    if mode == "hybrid":
        ranked = [(hit.key, hit.score, hit.why()) for hit in _hybrid(scope, query, filters, rankings, limit)]
    else:
        ((name, hits),) = rankings.items()
        ranked = [
            (hit.key, hit.score, {name: {"rank": rank, "score": round(hit.score, 6)}})
            for rank, hit in enumerate(hits[:limit], start=1)
        ]
    entries = HistoryEntry.objects.defer("embedding", "search_text").in_bulk([pk for pk, _, _ in ranked])
    return [HistoryHit(entries[pk], score, why) for pk, score, why in ranked if pk in entries]


def _hybrid(
    scope: UserAddress, query: str, filters: HistoryFilters, rankings: dict[str, list[SignalHit[int]]], limit: int
) -> list[FusedHit[int]]:
    """Fused, spread to neighbours, and every message in another script than the query at its semantic place."""
    fused = fuse(rankings, WEIGHTS, limit=sum(len(hits) for hits in rankings.values()), rrf_k=RRF_K)
    rows = _candidates([hit.key for hit in fused])
    givers = [hit for hit in fused[:NEIGHBOUR_FROM] if hit.key in rows]
    fused = spread_to_neighbours(fused, neighbours(scope, filters, givers, rows), NEIGHBOUR_SHARE, limit=len(fused))
    query_script = script(query)
    unreadable = {pk for pk, (_, _, content) in rows.items() if script(content) != query_script}
    return keep_places(fused, rankings["semantic"], unreadable, limit=limit)


def _candidates(pks: list[int]) -> dict[int, tuple[str, int, str]]:
    """id -> (conversation, round, content) of the fused hits (their script, their neighbours)."""
    rows = HistoryEntry.objects.filter(pk__in=pks).values_list("pk", "conversation_id", "round", "content")
    return {pk: (conversation, round_, content) for pk, conversation, round_, content in rows}


def neighbours(
    scope: UserAddress, filters: HistoryFilters, hits: list[FusedHit[int]], rows: dict[int, tuple[str, int, str]]
) -> dict[int, list[int]]:
    """Each hit's previous and next message in its conversation (by id, within the rounds around its own),
    among the messages the search may return. One statement over the (conversation, round) index."""
    if not hits:
        return {}
    where, params = _scope_sql(scope, filters)
    windows = [(rows[hit.key][0], rows[hit.key][1]) for hit in hits]
    around = " OR ".join(["(h.conversation_id = %s AND h.round BETWEEN %s AND %s)"] * len(windows))
    for conversation, round_ in windows:
        params.extend([conversation, max(round_ - 1, 0), round_ + 1])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT h.id, h.conversation_id, h.round FROM {TABLE} h {where} AND ({around})", params)
        found = sorted(cursor.fetchall())
    out: dict[int, list[int]] = {}
    for hit, (conversation, round_) in zip(hits, windows):
        near = [pk for pk, c, r in found if c == conversation and round_ - 1 <= r <= round_ + 1]
        before = [pk for pk in near if pk < hit.key]
        after = [pk for pk in near if pk > hit.key]
        out[hit.key] = ([before[-1]] if before else []) + ([after[0]] if after else [])
    return out


def history_status(scope: UserAddress) -> dict[str, int]:
    rows = HistoryEntry.objects.filter(product=scope.product, user_id=scope.user_id)
    active = active_index_pk()
    total = rows.count()
    embedded = rows.filter(embedding_index_id=active).count() if active else 0
    return {"messages": total, "embedded": embedded, "pending": total - embedded}
