"""PostgreSQL: a user's history kept resident in this process, checked against the database on every search.

A turn's recall (the `history-search` source) searched the user's history with three statements — BM25, the
vector ranking, the neighbours — ~15 ms for a user of 1,000 messages, several times a whole
`GET …/memory` (docs/performance.md). A user with at most MAX_ROWS messages (most users) is searched here
instead, from their rows held in this process, with the same formulas as the SQL path (resident_search.py):
BM25 over all their rows is then exact, as the SQL statement's sample and candidates are, and the vector
ranking is the exact scan the SQL function does below its bound.

Never trusted alone: every search runs one statement (the PL/pgSQL function `memoryhub_history_refresh`,
migrations 0007-0009, so that it is not planned again each time) that reads the database snapshot, the
active embedding index, the query terms' lexemes, every row changed since the snapshot this process last read
them in (`history_entry.change_xid`, migration 0005: set by any insert or update of the row and by a change
to its turn message's `superseded`, `present` or `name`), and the product's deletion marker (migration 0009:
a new value at every deletion of a history row of the product). Changed rows replace or join the held ones.
When the marker differs from the one the held rows were read with, the function also counts the user's rows:
a held row that was deleted leaves more rows held than the count, and all are read again. More than MAX_ROWS
rows, a term PostgreSQL splits into several lexemes, or an index that is not the active one: the SQL path
searches instead (`load` answers None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection

from memories.history import vector_cache
from memories.longterm.keyword import single_lexeme
from memoryhub.addresses import UserAddress
from memoryhub.held import HeldUsers, merged
from memoryhub.ranking import script

# BM25's statistics sample and its candidate bound (selectors.SAMPLE, CANDIDATES): at most this many rows,
# the SQL statement reads all of a user's rows, so the resident ranking equals it. 0: no user is held.
MAX_ROWS = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    conversation_id: str
    client_id: str
    round: int
    role: str
    name: str
    content: str
    created_at: datetime
    message_id: int | None
    superseded: bool  # the turn message's flag (False for an imported message)
    speaker: str | None  # the turn message's `name` (witness scopes), None for an imported message
    present: tuple[str, ...] | None
    index_id: int | None  # the embedding index of `vector`
    vector: np.ndarray | None
    norm: float  # the vector's L2 norm (0 without one)
    lexemes: dict[str, int]  # lexeme -> occurrences (ts_rank_cd of a one-lexeme query)
    script: str
    micros: int  # created_at in microseconds since 1970 (UTC), for the time filters

    @property
    def pk(self) -> int:  # as a HistoryEntry's: a search hit is either
        return self.id

    @property
    def nbytes(self) -> int:
        vector = self.vector.nbytes if self.vector is not None else 0
        # The vector twice: its own array and its row of the user's stacked matrix (resident_search.Columns).
        return 400 + 2 * len(self.content) + 2 * vector + 80 * len(self.lexemes)


@dataclass(frozen=True)
class Resident:
    """One user's rows as of `snapshot` (a pg_snapshot's text); the same object while none changes."""

    snapshot: str
    rows: dict[int, Row]
    nbytes: int  # the rows' estimated size
    marker: int  # the product's deletion marker read with the rows (migration 0009)


@dataclass(frozen=True)
class Loaded:
    """A search's view: the user's rows, the active embedding index and the query terms' lexemes."""

    resident: Resident
    active_index_id: int | None
    lexemes: list[str | None]  # per query term: its one lexeme, None for a stop word


class _TooMany(Exception):
    """The user has more rows than a process holds: the SQL path searches them."""


_held: HeldUsers[Resident] = HeldUsers(lambda: max_bytes())


def max_bytes() -> int:
    """Held rows per process, all users together (least recently searched out first): HISTORY_HELD_MEMORY_MB,
    by default 64 MB, about 14 users of 1,000 messages at 384 dimensions (fewer at the default's 1281).
    0: no user is held."""
    return int(settings.HISTORY_HELD_MEMORY_MB) * 1024 * 1024


# A snapshot that sees no transaction: "changed since" it is every row.
_NOTHING_SEEN = "1:1:"


def load(scope: UserAddress, terms: list[str]) -> Loaded | None:
    """The user's rows, brought up to date in one statement, with the terms' lexemes; None: search in SQL."""
    if MAX_ROWS <= 0 or max_bytes() <= 0:
        return None
    key = (scope.product.pk, scope.user_id)
    held = _held.get(key)
    try:
        loaded = _read(scope, terms, held)
        if loaded is None and held is not None:  # rows were deleted since it was read: read them all again
            loaded = _read(scope, terms, None)
    except _TooMany:
        loaded = None
    if loaded is None:
        _held.forget(key)
        return None
    if loaded.resident is not held:
        _held.keep(key, loaded.resident)
    else:
        _held.touch(key)
    if any(lexeme is False for lexeme in loaded.lexemes):
        return None
    return loaded


def _read(scope: UserAddress, terms: list[str], held: Resident | None) -> Loaded | None:
    """`held` brought up to date (None: read whole); None: `held` holds rows deleted since."""
    since, marker = (held.snapshot, held.marker) if held is not None else (_NOTHING_SEEN, None)
    # Django's cursor (parameters bound on the client, one simple-protocol message): the arguments are small,
    # and it saves ~0.04 ms of the call against binding them on the server (docs/performance.md).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM memoryhub_history_refresh(%s, %s, %s::text[], %s::pg_snapshot, %s, %s)",
            [scope.product.pk, scope.user_id, terms, since, MAX_ROWS, marker],
        )
        found = cursor.fetchall()
    count, snapshot, marker, active_index_id, term_texts = found[0][:5]
    if count is not None and count > MAX_ROWS:
        raise _TooMany
    lexemes = [single_lexeme(text) for text in term_texts or []]
    changed = [_row(values[5:]) for values in found if values[5] is not None]
    resident = _updated(held, changed, snapshot, marker)
    if count is None:  # not counted: no row of the product was deleted since `held` was read
        if len(resident.rows) > MAX_ROWS:
            raise _TooMany
    elif len(resident.rows) != count:
        return None
    return Loaded(resident, active_index_id, lexemes)  # type: ignore[arg-type]


def _updated(held: Resident | None, changed: list[Row], snapshot: str, marker: int) -> Resident:
    if held is not None and not changed:
        return held if held.marker == marker else replace(held, marker=marker)  # recounted: the same rows
    before, size = (held.rows, held.nbytes) if held is not None else ({}, 0)
    rows, size = merged(before, size, [(row.id, row) for row in changed])
    return Resident(snapshot, rows, size, marker)


def _row(values: tuple) -> Row:
    (pk, conversation, client_id, round_, role, name, content, created_at, message_id, superseded, speaker,
     present, index_id, vector_text, lexemes, counts) = values  # fmt: skip
    vector = vector_cache.decode([vector_text], vector_text.count(",") + 1)[0] if vector_text else None
    return Row(
        id=pk,
        conversation_id=conversation,
        client_id=client_id,
        round=round_,
        role=role,
        name=name,
        content=content,
        created_at=created_at,
        message_id=message_id,
        superseded=bool(superseded),
        speaker=speaker,
        present=_names(present) if message_id is not None else None,
        index_id=index_id if vector is not None else None,
        vector=vector,
        norm=float(np.linalg.norm(vector.astype(np.float64))) if vector is not None else 0.0,
        lexemes=dict(zip(lexemes or [], counts or [])),
        script=script(content),
        micros=micros(created_at),
    )


def micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


def _names(present: object) -> tuple[str, ...] | None:
    """A turn message's `present` (jsonb, which Django's connection hands over as text)."""
    if present is None:
        return None
    return tuple(json.loads(present) if isinstance(present, str) else present)  # type: ignore[arg-type]


def forget(product_pk: str, user_id: str) -> None:
    _held.forget((product_pk, user_id))


def clear() -> None:
    _held.clear()
