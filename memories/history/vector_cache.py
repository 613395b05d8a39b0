"""SQLite semantic search: each user's decoded history vectors, kept per process and checked on every query.

On SQLite a vector is stored as pgvector's text form; decoding it costs about 0.25 ms per 384-dimension
message, so decoding every vector of a user on every search grew with their history (5,000 messages:
~0.9 s). The cache holds a (product, user, embedding index)'s vectors as one float32 matrix, bounded by
bytes (least recently used out first). It is never trusted alone: the search statement reads the user's
change counter (`history_vector_epoch`, bumped by triggers on any re-embedding or deletion, migration 0003)
with the ids it ranks, so a changed counter drops the entry, and ids not cached yet (new messages) are
decoded and added. Filters and superseded messages are applied by the statement's id selection.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

EPOCH_TABLE = "history_vector_epoch"  # the change counter (migration 0003): one row per (product, user)
# 64 MB holds ~13,000 messages at 1281 dimensions (the default embedder's) per process.
MAX_BYTES = 64 * 1024 * 1024

Key = tuple[int, str, int]  # product pk, user id, embedding index pk


@dataclass
class _Entry:
    epoch: int
    ids: np.ndarray  # int64, sorted
    matrix: np.ndarray  # float32, one row per id
    norms: np.ndarray  # float32, each row's L2 norm (np.linalg.norm(matrix, axis=1))

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.matrix.nbytes + self.norms.nbytes)


_entries: OrderedDict[Key, _Entry] = OrderedDict()
_lock = threading.Lock()


def decode(raws: list[str], dimension: int) -> np.ndarray:
    """pgvector's text form ('[0.1,0.2,…]') of many vectors in one parse, one row each."""
    if not raws:
        return np.zeros((0, dimension), dtype=np.float32)
    flat = np.fromstring(",".join(raw.strip()[1:-1] for raw in raws), sep=",", dtype=np.float32)
    if flat.size != len(raws) * dimension:
        raise ValueError(f"history vectors are not {dimension}-dimensional")
    return flat.reshape(len(raws), dimension)


def cached(key: Key, epoch: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The entry's matrix and row norms, the rows of `ids` in them and which `ids` are cached; None: none is.

    The arrays are the entry's own (never changed in place: `add` replaces them), so nothing is copied.
    """
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry.epoch != epoch or not len(entry.ids):
            _drop(key)
            return None
        _entries.move_to_end(key)
        positions = np.minimum(np.searchsorted(entry.ids, ids), len(entry.ids) - 1)
        found = entry.ids[positions] == ids
        return entry.matrix, entry.norms, positions, found


def add(key: Key, epoch: int, ids: np.ndarray, matrix: np.ndarray) -> None:
    """Adds decoded rows to the entry read at `epoch` (a new entry when it changed)."""
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry.epoch != epoch:
            old_ids, old_matrix = np.zeros(0, dtype=np.int64), np.zeros((0, matrix.shape[1]), dtype=np.float32)
        else:
            keep = ~np.isin(entry.ids, ids)  # a concurrent search may have added some of them already
            old_ids, old_matrix = entry.ids[keep], entry.matrix[keep]
        all_ids = np.concatenate([old_ids, ids])
        order = np.argsort(all_ids, kind="stable")
        merged_matrix = np.concatenate([old_matrix, matrix])[order]
        merged = _Entry(epoch, all_ids[order], merged_matrix, np.linalg.norm(merged_matrix, axis=1))
        _drop(key)
        if merged.nbytes > MAX_BYTES:
            return
        _entries[key] = merged
        while sum(e.nbytes for e in _entries.values()) > MAX_BYTES:
            _entries.popitem(last=False)


def forget(product_pk: object, user_id: str) -> None:
    """Drops every entry of the user (all embedding indexes)."""
    with _lock:
        for key in [key for key in _entries if key[:2] == (product_pk, user_id)]:
            _drop(key)


def clear() -> None:
    with _lock:
        _entries.clear()


def _drop(key: Key) -> None:
    _entries.pop(key, None)


def cached_bytes() -> int:
    with _lock:
        return sum(entry.nbytes for entry in _entries.values())
