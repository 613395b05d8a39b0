"""What a process holds per user for search (history and long-term memories), within a byte budget.

Each value is one user's rows as the process last read them (it knows its own size, `nbytes`); the least
recently searched user goes first when the budget is passed. The callers check the rows against the database on
every search: this only bounds how much a process keeps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

import numpy as np

UserKey = tuple[str, str]  # (product id, user id)


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


V = TypeVar("V", bound=Sized)
R = TypeVar("R", bound=Sized)


class HeldUsers(Generic[V]):
    def __init__(self, budget: Callable[[], int]):
        self._values: OrderedDict[UserKey, V] = OrderedDict()
        self._bytes = 0
        self._budget = budget  # read at each keep, so a setting (or a test) can change it
        self._lock = threading.Lock()

    def get(self, key: UserKey) -> V | None:
        with self._lock:
            return self._values.get(key)

    def __getitem__(self, key: UserKey) -> V:
        with self._lock:
            return self._values[key]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._values

    def __iter__(self) -> Iterator[UserKey]:
        with self._lock:
            return iter(list(self._values))  # least recently searched first

    def keep(self, key: UserKey, value: V) -> None:
        """Hold `value` for `key` (replacing what was held), then drop the least recent users over the budget."""
        budget = self._budget()
        with self._lock:
            self._drop(key)
            if value.nbytes > budget:
                return
            self._values[key] = value
            self._bytes += value.nbytes
            while self._bytes > budget:
                self._drop(next(iter(self._values)))

    def touch(self, key: UserKey) -> None:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)  # least recently searched out first

    def forget(self, key: UserKey) -> None:
        with self._lock:
            self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._bytes = 0

    def _drop(self, key: UserKey) -> None:
        dropped = self._values.pop(key, None)
        if dropped is not None:
            self._bytes -= dropped.nbytes


def stacked_vectors(entries: Sequence[tuple[int, np.ndarray | None]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of (embedding index id, vector or None) per row: the positions of the rows with a vector, their index ids,
    and their vectors stacked into one matrix (the held rows' exact scan multiplies it by the query)."""
    at = [position for position, (_, vector) in enumerate(entries) if vector is not None]
    if not at:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 0), np.float32)
    matrix = np.stack([entries[position][1] for position in at])  # type: ignore[misc]
    index_ids = np.array([entries[position][0] for position in at], dtype=np.int64)
    return np.array(at, dtype=np.int64), index_ids, matrix


def merged(rows: dict[int, R], size: int, changed: Sequence[tuple[int, R]]) -> tuple[dict[int, R], int]:
    """A user's held rows (by id) and their total size with the `changed` (id, row) pairs put in: a new dict."""
    rows = dict(rows)
    for pk, row in changed:
        replaced = rows.get(pk)
        size += row.nbytes - (replaced.nbytes if replaced is not None else 0)
        rows[pk] = row
    return rows, size
