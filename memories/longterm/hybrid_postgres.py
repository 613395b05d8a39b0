"""PostgreSQL + pgvector: a hybrid search's two rankings in one statement, and only the page's rows read whole.

The hybrid search fuses up to 100 hits of each signal (selectors.HYBRID_DEPTH) to show a page of ten. Read as
two searches, every one of those hits came back whole and was built as a memory: 5.3 ms per search for a
user of 100 memories, against 1.0 ms for the semantic search alone (docs/performance.md). Here one statement
answers both rankings with each ranked row's id, score and content (the script rule reads the content's
words), and a second one reads the page's rows. The ranking is the same: the BM25 statement and
`memoryhub_search_exact` are the ones the keyword and semantic searches run, each asked for the same depth.

`rankings` answers None when the semantic half cannot be read here — the index this process last saw is not
the active one any more, or the user has more rows than the exact scan takes (the HNSW branch): the caller
then searches as two searches, which handles both.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Container
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from memories.longterm import keyword
from memories.longterm.models import LongTermMemory
from memories.longterm.services import vectors
from memories.longterm.services.embedding_index import IndexInUse
from memories.longterm.services.vectors import (
    TABLE,
    answered_columns,
    builtin_searchable_kinds,
    memory_of,
    vector_param,
)
from memoryhub.addresses import UserAddress
from memoryhub.prepared import binding_cursor
from memoryhub.ranking import script

# A current memory (models.current): not superseded, not rolled back, not expired at the search's time.
_CURRENT = "superseded_by = '' AND rolled_back_at IS NULL AND (expires_at IS NULL OR expires_at > %s)"


@dataclass(frozen=True)
class Rankings:
    keyword: list[tuple[int, float]]  # (id, BM25 score), best first
    semantic: list[tuple[int, float]]  # (id, cosine similarity), nearest first
    # The script (memoryhub.ranking.script of its content's words) of each semantic hit at least: the script
    # rule places only those.
    scripts: dict[int, str]

    def unreadable(self, query_script: str) -> Container[int]:
        """The ids written in another script than the query's (the keyword signal cannot read them)."""
        return {pk for pk, written_in in self.scripts.items() if written_in != query_script}


def content_script(content: object) -> str:
    """The script a memory is written in: that of every string inside its content (the script rule's input)."""
    return script(" ".join(keyword.keyword_strings(content)))


@functools.lru_cache(maxsize=16384)  # a few MB of content texts per process
def _script_of_json(text: str) -> str:
    """content_script of a content as jsonb's text: a pure function of the text, so remembered (~2 µs a hit)."""
    return content_script(json.loads(text))


def rankings(
    scope: UserAddress, terms: list[str], kinds: list[str], in_use: IndexInUse, vector, depth: int, now: datetime
) -> Rankings | None:
    """Both rankings, `depth` hits each; None: search as two searches (see the module's docstring)."""
    semantic_sql = (
        "SELECT 's', s.id, s.distance, s.content, s.live, s.scanned FROM memoryhub_search_exact("
        "%s, %s, %s, %s, %s, %s, %s::vector, %s, %s, %s, %s) s"
    )
    semantic_params = [
        int(in_use.index.pk), in_use.index.identity_key, in_use.index.backend, scope.product.pk, scope.user_id,
        builtin_searchable_kinds(), vector_param(vector), now, depth + 1, 0, vectors.EXACT_SCAN_MAX_ROWS,
    ]  # fmt: skip
    sql, params = semantic_sql, semantic_params
    if terms:
        where, owner = keyword_selection(scope, kinds, now)
        ranking, keyword_params = keyword.bm25_statement(TABLE, where, owner, terms, depth + 1, 0)
        sql = (
            f"SELECT 'k', k.id, k.score, m.content, NULL::boolean, NULL::bigint FROM ({ranking}) k "
            f"JOIN {TABLE} m ON m.id = k.id UNION ALL {semantic_sql}"
        )
        params = [*keyword_params, *semantic_params]
    with binding_cursor(connection) as cursor:  # the vector goes in binary
        cursor.execute(sql, params)
        found = cursor.fetchall()
    header = next((row for row in found if row[0] == "s" and row[5] is not None), None)
    if header is None or not header[4] or header[5] > vectors.EXACT_SCAN_MAX_ROWS:
        return None
    # Each ranking in its statement's own order (UNION ALL keeps none): score then newer id; distance then id.
    hits = [row for row in found if row[1] is not None]
    by_keyword = sorted((row for row in hits if row[0] == "k"), key=lambda row: (-row[2], -row[1]))[:depth]
    by_distance = sorted((row for row in hits if row[0] == "s"), key=lambda row: (row[2], row[1]))[:depth]
    return Rankings(
        keyword=[(row[1], float(row[2])) for row in by_keyword],
        semantic=[(row[1], 1.0 - float(row[2])) for row in by_distance],
        scripts={row[1]: _script(row[3]) for row in [*by_keyword, *by_distance]},
    )


def page_rows(scope: UserAddress, ids: list[int], now: datetime) -> dict[int, LongTermMemory]:
    """The page's memories, still current (a row deleted or superseded since the ranking is left out)."""
    if not ids:
        return {}
    sql = (
        f"SELECT {answered_columns('m')} FROM {TABLE} m "
        f"WHERE id = ANY(%s) AND product_id = %s AND user_id = %s AND {_CURRENT}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [ids, scope.product.pk, scope.user_id, now])
        memories = [memory_of(row) for row in cursor.fetchall()]
    return {memory.pk: memory for memory in memories}


def keyword_selection(scope: UserAddress, kinds: list[str], now: datetime) -> tuple[str, list]:
    """The keyword ranking's rows (the BM25 statement's `where`): the user's current rows of searchable kinds."""
    where = f"product_id = %s AND user_id = %s AND kind IN ({', '.join(['%s'] * len(kinds))}) AND {_CURRENT}"
    return where, [scope.product.pk, scope.user_id, *kinds, now]


def _script(content: object) -> str:
    """jsonb as Django's connection hands it over (text), or already decoded."""
    return _script_of_json(content) if isinstance(content, str) else content_script(content)
