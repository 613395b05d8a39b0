"""The history rankings over a resident user (resident.py): the SQL path's formulas, in numpy.

- keyword: selectors.bm25_statement's BM25 — statistics over all the user's rows (its sample, when they are at
  most resident.MAX_ROWS), the filtered rows matching any term ranked, in the same order of operations, so
  the scores are the statement's; best first, ties by the newer id;
- semantic: memoryhub_history_semantic's exact scan (migration 0004) — cosine distance to the query over
  the filtered rows embedded in the active index, nearest first, ties by the newer id (pgvector sums in
  float4 and numpy in its own order: scores agree to ~1e-6);
- the filters: HistoryFilters.sql() and the scope's superseded check, on the held columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from memories.history.resident import Loaded, Resident, Row, micros
from memories.longterm.keyword import BM25_B, BM25_K1
from memoryhub.held import stacked_vectors
from memoryhub.ranking import Ranked, ids_by_script, written_in_another_script


@dataclass
class Columns:
    """A resident user's rows as arrays (ascending id), built once per state of the rows."""

    rows: list[Row]

    @cached_property
    def ids(self) -> np.ndarray:
        return np.fromiter((row.id for row in self.rows), dtype=np.int64, count=len(self.rows))

    @cached_property
    def conversations(self) -> dict[str, int]:
        return {conversation: code for code, conversation in enumerate({r.conversation_id for r in self.rows})}

    @cached_property
    def conversation(self) -> np.ndarray:
        return np.array([self.conversations[row.conversation_id] for row in self.rows], dtype=np.int64)

    @cached_property
    def rounds(self) -> np.ndarray:
        return np.array([row.round for row in self.rows], dtype=np.int64)

    @cached_property
    def created(self) -> np.ndarray:
        return np.fromiter((row.micros for row in self.rows), dtype=np.int64, count=len(self.rows))

    @cached_property
    def roles(self) -> np.ndarray:
        return np.array([row.role for row in self.rows], dtype=object)

    @cached_property
    def live(self) -> np.ndarray:
        return np.array([not row.superseded for row in self.rows], dtype=bool)

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.array([len(row.lexemes) for row in self.rows], dtype=np.float64)

    @cached_property
    def _occurrences(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {}

    def occurring(self, lexeme: str) -> tuple[np.ndarray, np.ndarray]:
        """How often each row holds `lexeme`, and the positions of the rows that do: a lookup per row the first
        time a search asks for it, cheaper than an index of every lexeme built after every change (a turn adds
        two messages)."""
        found = self._occurrences.get(lexeme)
        if found is None:
            counts = np.fromiter((row.lexemes.get(lexeme, 0) for row in self.rows), np.float64, len(self.rows))
            found = self._occurrences[lexeme] = (counts, np.flatnonzero(counts))
        return found

    @cached_property
    def bm25_norm(self) -> np.ndarray:
        """BM25's length normalisation of each row: k1 × (1 − b + b × length / average length)."""
        average = max(float(self.lengths.sum()) / len(self.rows), 1.0)
        return BM25_K1 * (1 - BM25_B + BM25_B * self.lengths / average)

    @cached_property
    def _by_script(self) -> dict[str, frozenset[int]]:
        return ids_by_script((row.id, row.script) for row in self.rows)

    def written_in_another_script(self, query_script: str) -> frozenset[int]:
        """The ids of the rows a query in `query_script` cannot read by keyword (memoryhub.ranking.script)."""
        return written_in_another_script(self._by_script, query_script)

    @cached_property
    def embedded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(positions of the rows with a vector, their index ids, the vectors, their norms)."""
        at, index_ids, matrix = stacked_vectors([(row.index_id or 0, row.vector) for row in self.rows])
        return at, index_ids, matrix, np.array([self.rows[position].norm for position in at.tolist()], np.float64)

    @cached_property
    def windows(self) -> dict[tuple[str, int], list[tuple[int, int]]]:
        """(conversation, round) -> (position, id) of its rows."""
        out: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for position, row in enumerate(self.rows):
            out.setdefault((row.conversation_id, row.round), []).append((position, row.id))
        return out


def columns(resident: Resident) -> Columns:
    """The resident's columns, built at its first search (a Resident never changes: a change makes a new one)."""
    held = resident.__dict__.get("_columns")
    if held is None:
        held = Columns(sorted(resident.rows.values(), key=lambda row: row.id))
        object.__setattr__(resident, "_columns", held)
    return held


def selected(cols: Columns, filters) -> np.ndarray:
    """The rows a search may return: live, and as each filter of `filters` (a HistoryFilters) says."""
    mask = cols.live.copy()
    if filters.conversations:
        codes = [cols.conversations[c] for c in filters.conversations if c in cols.conversations]
        mask &= np.isin(cols.conversation, codes)
    if filters.after is not None:
        mask &= cols.created >= micros(filters.after)
    if filters.before is not None:
        mask &= cols.created < micros(filters.before)
    if filters.roles:
        mask &= np.isin(cols.roles, list(filters.roles))
    if filters.exclude_conversation is not None and filters.exclude_from_round is not None:
        code = cols.conversations.get(filters.exclude_conversation)
        if code is not None:
            mask &= ~((cols.conversation == code) & (cols.rounds >= filters.exclude_from_round))
    if filters.witness:
        mask &= np.array([_witnessed(row, filters.witness) for row in cols.rows], dtype=bool)
    return mask


def _witnessed(row: Row, character: str) -> bool:
    return row.message_id is None or not row.present or row.speaker == character or character in row.present


def keyword_hits(loaded: Loaded, cols: Columns, mask: np.ndarray, depth: int) -> list[Ranked[int]]:
    count = len(cols.rows)
    found = [(counts, at) for counts, at in map(cols.occurring, filter(None, loaded.lexemes)) if len(at)]
    if not count or not found:
        return []
    norm = cols.bm25_norm
    scores = np.zeros(count)
    matched = np.zeros(count, dtype=bool)
    for counts, at in found:
        occurrences = counts[at]
        idf = math.log(1 + (count - len(at) + 0.5) / (len(at) + 0.5))
        scores[at] += idf * occurrences * (BM25_K1 + 1) / (occurrences + norm[at])
        matched[at] = True
    chosen = np.flatnonzero(matched & mask)
    order = chosen[np.lexsort((-cols.ids[chosen], -scores[chosen]))][:depth]
    return _hits(cols.ids[order], scores[order])


def _hits(ids: np.ndarray, scores: np.ndarray) -> list[Ranked[int]]:
    """(id, score) pairs of Python ints and floats (numpy scalars are slow to make one at a time, and are not JSON)."""
    return list(zip(ids.tolist(), scores.tolist(), strict=True))


def semantic_hits(cols: Columns, mask: np.ndarray, vector: np.ndarray, index_id: int, depth: int) -> list[Ranked[int]]:
    at, index_ids, matrix, norms = cols.embedded
    keep = (index_ids == index_id) & mask[at] if len(at) else np.zeros(0, dtype=bool)
    if not keep.any():
        return []
    query = np.asarray(vector, dtype=np.float32)
    products = (matrix @ query)[keep]  # the whole matrix: picking rows first would copy them
    similarity = products.astype(np.float64) / (norms[keep] * float(np.linalg.norm(query)) + 1e-300)
    distance = 1.0 - np.clip(similarity, -1.0, 1.0)
    positions = at[keep]
    if len(distance) > depth:  # only the `depth` nearest, and any tied with the last of them, need sorting
        near = np.flatnonzero(distance <= np.partition(distance, depth - 1)[depth - 1])
        positions, distance = positions[near], distance[near]
    order = np.lexsort((-cols.ids[positions], distance))[:depth]
    return _hits(cols.ids[positions[order]], 1.0 - distance[order])


def adjacent(cols: Columns, mask: np.ndarray, hits: list[int], rows: dict[int, Row]) -> dict[int, list[int]]:
    """Each hit's nearest smaller and larger id among the selected rows within a round of its own
    (selectors.neighbours and _adjacent, over the held rows)."""
    out: dict[int, list[int]] = {}
    selected = mask.tolist()
    for hit in hits:
        conversation, round_ = rows[hit].conversation_id, rows[hit].round
        before, after = None, None
        for near in (round_ - 1, round_, round_ + 1):
            for position, pk in cols.windows.get((conversation, near), ()):
                if not selected[position]:
                    continue
                if pk < hit and (before is None or pk > before):
                    before = pk
                elif pk > hit and (after is None or pk < after):
                    after = pk
        out[hit] = [pk for pk in (before, after) if pk is not None]
    return out
