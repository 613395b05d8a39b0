"""PostgreSQL: a user's long-term memories held in this process for hybrid and semantic search, checked each time.

A hybrid search ran BM25 and the exact vector scan in one statement and read its page's rows in a second:
~3.9 ms for a user of 100 memories, twice mem0's semantic search (docs/performance.md). A user with at most
MAX_ROWS memories (nearly every user) is now ranked here, from their rows held in this process, with the SQL
path's formulas (resident_rank.py): with that few rows the BM25 statement's sample and candidates are all the
user's rows, and the semantic ranking is `memoryhub_search_exact`'s exact scan. A semantic search of a held
user is ranked here too (one statement instead of the exact scan's; selectors._held_semantic).

Never trusted alone: every search runs one statement, `memoryhub_longterm_refresh` (migrations 0008, 0010), which
reads the database snapshot, whether this process's embedding index is still the active one, the product's own
searchable kinds, the query terms' lexemes, every row of the user changed since the snapshot the held rows
were read in (`change_xid`, set by any insert or update), and the product's deletion marker (a new value at
every deletion of a long-term memory of the product). Changed rows replace or join the held ones; when the
marker moved, the user's rows are counted too, and a count below what is held (a row deleted) reads them all
again. More than MAX_ROWS rows, a term PostgreSQL splits into several lexemes, or an index that is not the
active one: the SQL path searches instead (`load` answers None). So does a user's first search since the process
last held them: a user is read whole at their second (ADMIT_AT_SEARCH), which keeps one-off searchers from
paying for a read they never use again. The design is history's (memories/history/resident.py); the held
rows are memories, what a search answers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models.base import ModelState

from memories.longterm import keyword
from memories.longterm.hybrid_postgres import content_script
from memories.longterm.keyword import single_lexeme
from memories.longterm.models import LongTermMemory
from memories.longterm.services import vectors
from memories.longterm.services.embedding_index import IndexInUse
from memories.longterm.services.vectors import memory_of
from memoryhub.addresses import UserAddress
from memoryhub.held import HeldUsers, UserKey, merged
from memoryhub.prepared import binding_cursor

# A user with at most this many rows (every kind, current or not) is held. The SQL ranking then reads all of
# the user's rows too: `bound` keeps it under BM25's sample and candidates (keyword.SAMPLE, CANDIDATES) and the
# exact scan's bound (vectors.EXACT_SCAN_MAX_ROWS). 0: no user is held.
MAX_ROWS = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FOREVER = 2**62  # an expiry that never comes, in microseconds


@dataclass(frozen=True, slots=True)
class Held:
    memory: LongTermMemory  # as a search answers it (never handed out: `answer` makes a new instance of it)
    vector: np.ndarray | None  # float32
    lexemes: frozenset[str]  # of the stored tsvector (`search_tsv`)
    script: str  # memoryhub.ranking.script of the content's words (the script rule's input)
    expires: int  # expires_at in microseconds since 1970, FOREVER without one
    retired: bool  # superseded or rolled back: never current again unless the row changes

    @property
    def nbytes(self) -> int:
        vector = self.vector.nbytes if self.vector is not None else 0
        # The vector twice: its own array and its row of the user's stacked matrix (resident_rank.Columns);
        # measured with tracemalloc at ~6.8 KB a memory of e5 (384-d) with ~30 lexemes.
        return 2000 + 3 * len(str(self.memory.content)) + 2 * vector + 100 * len(self.lexemes)

    def answer(self) -> LongTermMemory:
        """A new instance of the held memory (copy.copy of a model goes through pickling's protocol: 60 µs).

        Its content is the held one's: every caller (the search API, the MCP tool) only reads it.
        """
        held = self.memory
        memory = LongTermMemory.__new__(LongTermMemory)
        memory.__dict__.update(held.__dict__)
        memory._state = ModelState()
        memory._state.adding, memory._state.db = False, held._state.db
        return memory


@dataclass(frozen=True)
class Resident:
    """One user's memories as of `snapshot` (a pg_snapshot's text); the same object while none changes."""

    snapshot: str
    rows: dict[int, Held]
    nbytes: int
    marker: int  # the product's deletion marker read with the rows (migration 0008)


@dataclass(frozen=True)
class Loaded:
    """A search's view: the user's memories, the product's own searchable kinds and the terms' lexemes."""

    resident: Resident
    own_kinds: list[str]
    lexemes: list[str | None]  # per query term: its one lexeme, None for a term without one
    uncommitted: bool  # read by a transaction that has written: may be rolled back, so never held

    @property
    def searchable_kinds(self) -> list[str]:
        """The kinds a search ranks: the built-in searchable ones and the product's own (as read by the refresh)."""
        return sorted({*vectors.builtin_searchable_kinds(), *self.own_kinds})


class _TooMany(Exception):
    """The user has more rows than a process holds: the SQL path searches them."""


class _NotLive(Exception):
    """The embedding index this process uses is not the active one any more: the SQL path finds out why."""


_held: HeldUsers[Resident] = HeldUsers(lambda: max_bytes())
_lock = threading.Lock()  # of _seen


def bound() -> int:
    """The most rows a held user may have: MAX_ROWS, and never more than the SQL ranking reads whole."""
    if max_bytes() <= 0:
        return 0
    return min(MAX_ROWS, keyword.SAMPLE, keyword.CANDIDATES, vectors.EXACT_SCAN_MAX_ROWS)


def max_bytes() -> int:
    """Held rows per process, all users together (least recently searched out first): ~6.8 KB a memory."""
    return int(settings.SEARCH_HELD_MEMORY_MB) * 1024 * 1024


def load(scope: UserAddress, terms: list[str], in_use: IndexInUse) -> Loaded | None:
    """The user's memories brought up to date in one statement, with the terms' lexemes; None: search in SQL.

    A user is read whole only at their second search since this process last held them (the first is searched
    in SQL): reading a user whole costs about two SQL searches, which a user who searches once never repays.
    """
    if bound() <= 0:
        return None
    key = (scope.product.pk, scope.user_id)
    held = _held.get(key)
    if held is None and not _admitted(key):
        return None
    try:
        loaded = _read(scope, terms, held, in_use)
        if loaded is None and held is not None:  # rows were deleted since it was read: read them all again
            loaded = _read(scope, terms, None, in_use)
    except _TooMany:
        _held.forget(key)
        return None
    except _NotLive:
        return None
    if loaded is None or loaded.uncommitted:
        _held.forget(key)
    elif loaded.resident is not held:
        _held.keep(key, loaded.resident)
    else:
        _held.touch(key)
    if loaded is None or any(lexeme is False for lexeme in loaded.lexemes):
        return None
    return loaded


def _read(scope: UserAddress, terms: list[str], held: Resident | None, in_use: IndexInUse) -> Loaded | None:
    """`held` brought up to date (None: read whole); None: `held` holds rows deleted since."""
    since, marker = (held.snapshot, held.marker) if held is not None else (None, None)
    index = in_use.index
    known = {term: _term_lexemes[term] for term in terms if term in _term_lexemes}
    unknown = [term for term in terms if term not in known]
    with binding_cursor(connection) as cursor:  # bound on the server: no text to escape
        cursor.execute(
            "SELECT * FROM memoryhub_longterm_refresh(%s, %s, %s::text[], %s::pg_snapshot, %s, %s, %s, %s, %s)",
            [scope.product.pk, scope.user_id, unknown, since, bound(), marker, int(index.pk), index.identity_key,
             index.backend],
        )  # fmt: skip
        found = cursor.fetchall()
    count, snapshot, marker, live, own_kinds, term_texts, own_writes = found[0][:7]
    if count is not None and count > bound():
        raise _TooMany
    if not live:
        raise _NotLive
    changed = [_held_row(values[7:]) for values in found if values[9] is not None]
    resident = _updated(held, changed, snapshot, marker)
    if count is None:  # not counted: no memory of the product was deleted since `held` was read
        if len(resident.rows) > bound():
            raise _TooMany
    elif len(resident.rows) != count:
        return None
    known.update(_learn(unknown, term_texts or []))
    lexemes = [known[term] for term in terms]
    return Loaded(resident, list(own_kinds or []), lexemes, bool(own_writes))  # type: ignore[arg-type]


def _updated(held: Resident | None, changed: list[Held], snapshot: str, marker: int) -> Resident:
    if held is not None and not changed:
        return held if held.marker == marker else replace(held, marker=marker)  # recounted: the same rows
    before, size = (held.rows, held.nbytes) if held is not None else ({}, 0)
    rows, size = merged(before, size, [(row.memory.pk, row) for row in changed])
    return Resident(snapshot, rows, size, marker)


# A term's lexeme: `plainto_tsquery('simple', term)` depends on the term alone, so it is asked once per process.
_term_lexemes: dict[str, str | None | bool] = {}
_MAX_TERMS = 100_000


def _learn(terms: list[str], texts: list[str]) -> dict[str, str | None | bool]:
    learned = dict(zip(terms, map(single_lexeme, texts), strict=True))
    if len(_term_lexemes) + len(learned) > _MAX_TERMS:
        _term_lexemes.clear()
    _term_lexemes.update(learned)
    return learned


def _held_row(values: tuple) -> Held:
    sent, lexemes, *columns = values
    memory = memory_of(columns)
    # vector_send's form: dimension and a reserved int16, then big-endian float4s.
    vector = np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32) if sent is not None else None
    return Held(
        memory=memory,
        vector=vector,
        lexemes=frozenset(lexemes or ()),
        script=content_script(memory.content),
        expires=micros(memory.expires_at) if memory.expires_at is not None else FOREVER,
        retired=bool(memory.superseded_by) or memory.rolled_back_at is not None,
    )


def micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


# Users searched once and not held: the next search of one of them reads them whole (least recent out first).
ADMIT_AT_SEARCH = 2
_SEEN_MAX = 50_000
_seen: OrderedDict[UserKey, None] = OrderedDict()


def _admitted(key: UserKey) -> bool:
    """Whether a user not held is read whole now (ADMIT_AT_SEARCH 1: at once)."""
    with _lock:
        if ADMIT_AT_SEARCH <= 1 or key in _seen:
            _seen.pop(key, None)
            return True
        _seen[key] = None
        if len(_seen) > _SEEN_MAX:
            _seen.popitem(last=False)
        return False


def forget(product_pk: str, user_id: str) -> None:
    _held.forget((product_pk, user_id))
    with _lock:
        _seen.pop((product_pk, user_id), None)


def clear() -> None:
    _held.clear()
    with _lock:
        _seen.clear()
