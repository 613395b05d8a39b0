"""A hybrid search's two rankings over a user's held memories (resident.py): the SQL path's formulas, in numpy.

- keyword: keyword.bm25_statement — statistics over the user's current rows of the searchable kinds (all of
  them: a held user has fewer than its sample and candidate bounds), a term's frequency 0 or 1 (a record's
  tokens are unique), idf summed term by term in the query's order and times the length factor, each in the
  statement's order of operations, so the scores are the statement's; best first, ties by the newer id;
- semantic: `memoryhub_search_exact`'s exact scan — cosine distance over the same rows embedded in the active
  index, nearest first, ties by the older id (pgvector sums in float4 and numpy in its own order: similarities
  agree to ~1e-6);
- a current row: not superseded, not rolled back, not expired at the search's time (hybrid_postgres._CURRENT).
"""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import numpy as np

from memories.longterm.hybrid_postgres import Rankings
from memories.longterm.keyword import BM25_B, BM25_K1
from memories.longterm.resident import FOREVER, Held, Loaded, Resident, micros
from memoryhub.held import stacked_vectors
from memoryhub.ranking import ids_by_script, written_in_another_script

Ranked = tuple[int, float]


@dataclass
class Columns:
    """A held user's rows as arrays (ascending id), built once per state of the rows."""

    rows: list[Held]

    @cached_property
    def ids(self) -> np.ndarray:
        return np.fromiter((row.memory.pk for row in self.rows), dtype=np.int64, count=len(self.rows))

    @cached_property
    def by_id(self) -> dict[int, Held]:
        return {row.memory.pk: row for row in self.rows}

    @cached_property
    def expires(self) -> np.ndarray:
        return np.fromiter((row.expires for row in self.rows), dtype=np.int64, count=len(self.rows))

    @cached_property
    def retired(self) -> np.ndarray:
        return np.fromiter((row.retired for row in self.rows), dtype=bool, count=len(self.rows))

    @cached_property
    def soonest_expiry(self) -> int:
        """When the first row that is not retired expires (micros; FOREVER when none does)."""
        return int(self.expires[~self.retired].min(initial=FOREVER))

    @cached_property
    def _searched(self) -> dict[tuple[str, ...], Searched]:
        return {}

    def searched(self, kinds: tuple[str, ...], now: datetime) -> Searched:
        """The rows a search at `now` ranks: current and of one of `kinds` (hybrid_postgres._CURRENT).

        Kept per tuple of kinds (a product's searchable kinds rarely change) while no row has expired.
        """
        instant = micros(now)
        found = self._searched.get(kinds)
        if found is None:
            wanted = frozenset(kinds)
            of_kinds = np.fromiter((row.memory.kind in wanted for row in self.rows), dtype=bool, count=len(self.rows))
            found = self._searched[kinds] = Searched(self, ~self.retired & of_kinds)  # before any expiry
        if instant >= self.soonest_expiry:  # a row has expired: the rows searched at this instant, not kept
            return Searched(self, found.mask & (self.expires > instant))
        return found

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(row.lexemes) for row in self.rows), dtype=np.float64, count=len(self.rows))

    @cached_property
    def _occurrences(self) -> dict[str, np.ndarray]:
        return {}

    def holding(self, lexeme: str) -> np.ndarray:
        """Which rows hold `lexeme`: computed the first time a search asks for it, then kept with the columns."""
        found = self._occurrences.get(lexeme)
        if found is None:
            found = self._occurrences[lexeme] = np.fromiter(
                (lexeme in row.lexemes for row in self.rows), dtype=bool, count=len(self.rows)
            )
        return found

    @cached_property
    def _by_script(self) -> dict[str, frozenset[int]]:
        return ids_by_script((row.memory.pk, row.script) for row in self.rows)

    def written_in_another_script(self, query_script: str) -> frozenset[int]:
        """The ids of the rows a query in `query_script` cannot read by keyword (memoryhub.ranking.script)."""
        return written_in_another_script(self._by_script, query_script)

    @cached_property
    def embedded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(positions of the rows with a vector, their index ids, the vectors, their norms)."""
        entries = [(row.memory.embedding_index_id or 0, row.vector) for row in self.rows]
        at, index_ids, matrix = stacked_vectors(entries)
        return at, index_ids, matrix, np.linalg.norm(matrix.astype(np.float64), axis=1)


def columns(resident: Resident) -> Columns:
    """The resident's columns, built at its first search (a Resident never changes: a change makes a new one)."""
    held = resident.__dict__.get("_columns")
    if held is None:
        held = Columns(sorted(resident.rows.values(), key=lambda row: row.memory.pk))
        object.__setattr__(resident, "_columns", held)
    return held


@dataclass
class Searched:
    """The rows one search ranks (a mask over the columns), with what both rankings derive from them alone."""

    cols: Columns
    mask: np.ndarray

    @cached_property
    def count(self) -> int:
        return int(np.count_nonzero(self.mask))

    @cached_property
    def average_length(self) -> float:
        """avg(length) over the searched rows, coalesce(nullif(…, 0), 1) as the statement has it."""
        return float(self.cols.lengths[self.mask].sum()) / self.count or 1.0

    @cached_property
    def _embedded(self) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return {}

    def embedded(self, index_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions, vectors, norms) of the searched rows embedded in `index_id`."""
        found = self._embedded.get(index_id)
        if found is None:
            at, index_ids, matrix, norms = self.cols.embedded
            keep = (index_ids == index_id) & self.mask[at] if len(at) else np.zeros(0, dtype=bool)
            found = self._embedded[index_id] = (at[keep], matrix[keep], norms[keep])
        return found


def rankings(
    loaded: Loaded, kinds: list[str], index_id: int, vector, depth: int, now: datetime
) -> tuple[Rankings, Columns]:
    """Both rankings, `depth` hits each, over the user's current rows of `kinds`; and the columns they came from."""
    cols = columns(loaded.resident)
    searched = cols.searched(tuple(kinds), now)
    by_keyword = keyword_hits(loaded, searched, depth)
    by_meaning = semantic_hits(searched, vector, index_id, depth)
    return HeldRankings(keyword=by_keyword, semantic=by_meaning, scripts={}, columns=cols), cols


def semantic_ranking(
    loaded: Loaded, kinds: list[str], index_id: int, vector, depth: int, now: datetime
) -> tuple[list[Ranked], Columns]:
    """The semantic ranking alone (a semantic search), `depth` hits; and the columns it came from."""
    cols = columns(loaded.resident)
    return semantic_hits(cols.searched(tuple(kinds), now), vector, index_id, depth), cols


@dataclass(frozen=True)
class HeldRankings(Rankings):
    """Rankings of held rows: which are written in another script is known per state of the rows."""

    columns: Columns | None = None

    def unreadable(self, query_script: str) -> Container[int]:
        assert self.columns is not None
        return self.columns.written_in_another_script(query_script)


def keyword_hits(loaded: Loaded, searched: Searched, depth: int) -> list[Ranked]:
    """keyword.bm25_statement over the searched rows."""
    lexemes = [lexeme for lexeme in loaded.lexemes if lexeme is not None]  # one without a lexeme matches nothing
    if not lexemes or not searched.count:
        return []
    cols = searched.cols
    holds = np.stack([cols.holding(lexeme) for lexeme in lexemes]) & searched.mask  # term × row, the query's order
    chosen = np.flatnonzero(holds.any(axis=0))
    if not len(chosen):
        return []
    count = float(searched.count)
    idf = [math.log(1 + (count - df + 0.5) / (df + 0.5)) for df in holds.sum(axis=1, dtype=np.float64).tolist()]
    # Summed over axis 0, term after term (numpy adds the rows in order): the statement's order of additions.
    idf_sum = (holds[:, chosen] * np.array(idf)[:, None]).sum(axis=0)
    factor = (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + (BM25_B * cols.lengths[chosen]) / searched.average_length))
    scores = idf_sum * factor
    order = np.lexsort((-cols.ids[chosen], -scores))[:depth]
    return _hits(cols.ids[chosen[order]], scores[order])


def semantic_hits(searched: Searched, vector, index_id: int, depth: int) -> list[Ranked]:
    """memoryhub_search_exact over the searched rows embedded in `index_id`: (id, 1 − cosine distance)."""
    positions, matrix, norms = searched.embedded(index_id)
    if not len(positions):
        return []
    query = np.asarray(vector, dtype=np.float32)  # what pgvector is sent (vectors.vector_param)
    products = (matrix @ query).astype(np.float64)
    query_norm = float(np.linalg.norm(query.astype(np.float64)))
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero vector: NaN, last, as pgvector orders it
        similarity = products / (norms * query_norm)
    distance = 1.0 - np.clip(similarity, -1.0, 1.0)
    distance[np.isnan(distance)] = np.inf
    order = np.lexsort((searched.cols.ids[positions], distance))[:depth]
    return _hits(searched.cols.ids[positions[order]], 1.0 - distance[order])


def _hits(ids: np.ndarray, scores: np.ndarray) -> list[Ranked]:
    """(id, score) pairs of Python ints and floats (numpy scalars are slow to make one at a time, and are not JSON)."""
    return list(zip(ids.tolist(), scores.tolist(), strict=True))
