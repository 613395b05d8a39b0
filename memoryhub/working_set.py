"""Redis (or the configured cache) as the working set only: recalled sources, rebuilt from the DB on a miss.

Every write that changes a source calls `invalidate` in the same request, so no read after a
successful write sees older data. Cache errors propagate (503), never a silent fallback.

Invalidation writes a short-lived tombstone instead of deleting, and readers only `add` (set if
absent): a reader that loaded the database before a write can then never put its stale value
back after the write's invalidation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar, cast

from django.conf import settings
from django.core.cache import cache

T = TypeVar("T")
_TOMBSTONE = "__memoryhub_invalidated__"
TOMBSTONE_SECONDS = 5


@dataclass(frozen=True)
class Scope:
    """Which working-set entry: one variable of one user (and conversation, when it is conversation-scoped)."""

    product_id: str
    user_id: str
    conversation_id: str  # "" for user-scoped variables such as preferences
    variable: str

    @property
    def key(self) -> str:
        return f"ws:{self.product_id}:{self.user_id}:{self.conversation_id}:{self.variable}"


_batch: ContextVar[dict | None] = ContextVar("working_set_batch", default=None)


@contextmanager
def batch(scopes: Iterable[Scope]) -> Iterator[None]:
    """Read these entries in one round trip (MGET); get_or_build inside the block then reads no further.

    Inside an enclosing batch only the entries it has not fetched are read (no round trip when there are
    none), into the same prefetch: a prepare reads its scenario, round counter and sources in one MGET.
    """
    outer = _batch.get()
    prefetched = outer if outer is not None else {}
    keys = [key for key in dict.fromkeys(scope.key for scope in scopes) if key not in prefetched]
    found = cache.get_many(keys) if keys else {}
    prefetched.update({key: found.get(key) for key in keys})
    token = _batch.set(prefetched)
    try:
        yield
    finally:
        _batch.reset(token)


@contextmanager
def prefetched(values: Mapping[str, object] | None) -> Iterator[None]:
    """Entries this request has read already (`queue_reads`): a batch inside fetches only the others."""
    token = _batch.set(dict(values)) if values else None
    try:
        yield
    finally:
        if token is not None:
            _batch.reset(token)


def queue_reads(pipeline, scopes: Iterable[Scope]) -> Callable[[list | None], dict[str, object]]:
    """Add one MGET of these entries to a django-redis client's pipeline; the function returned decodes its reply.

    The rate limiter sends its counter in a pipeline anyway: a view's reads can ride in the same round trip.
    """
    keys = list(dict.fromkeys(scope.key for scope in scopes))
    if not keys:
        return lambda reply: {}
    pipeline.mget([cache.make_key(key) for key in keys])
    decode = cache.client.decode  # type: ignore[attr-defined]
    return lambda reply: {key: None if raw is None else decode(raw) for key, raw in zip(keys, reply or [])}


def queue_invalidations(pipeline, scopes: Iterable[Scope]) -> list[str]:
    """Add these entries' tombstones to a django-redis client's pipeline; return their keys.

    A write the request has already validated can send its invalidation in the rate limiter's round trip;
    the write then runs inside `invalidated_ahead(keys)`, and `invalidate` does not send them again.
    """
    keys = list(dict.fromkeys(scope.key for scope in scopes))
    tombstone = cache.client.encode(_TOMBSTONE)  # type: ignore[attr-defined]
    for key in keys:
        pipeline.set(cache.make_key(key), tombstone, ex=TOMBSTONE_SECONDS)
    return keys


_ahead: ContextVar[set[str] | None] = ContextVar("working_set_invalidated_ahead", default=None)


@contextmanager
def invalidated_ahead(keys: Iterable[str]) -> Iterator[None]:
    """Entries whose tombstones this request has written already (`queue_invalidations`), each skipped once."""
    token = _ahead.set(set(keys))
    try:
        yield
    finally:
        _ahead.reset(token)


def _read(key: str) -> object:
    prefetched = _batch.get()
    if prefetched is not None and key in prefetched:
        return prefetched.pop(key)  # once: a second read of the same entry asks the cache again
    return cache.get(key)


def get_or_build(scope: Scope, build: Callable[[], T]) -> tuple[T, bool]:
    """Return (value, was_cached); on a miss build from the database and store."""
    cached = _read(scope.key)
    if cached is not None and cached != _TOMBSTONE:
        return cast(T, cached), True
    value = build()
    if cached is None:
        cache.add(scope.key, value, settings.WORKING_SET_TTL_SECONDS)
    return value, False


def invalidate(*scopes: Scope) -> None:
    ahead = _ahead.get()
    if ahead:  # written in this request's first round trip, before anything was written: once is enough
        sent = [scope for scope in scopes if scope.key in ahead]
        ahead.difference_update(scope.key for scope in sent)  # a second write in the request invalidates again
        scopes = tuple(scope for scope in scopes if scope not in sent)
    if len(scopes) == 1:  # one SET: django-redis wraps set_many in a MULTI/EXEC pipeline
        cache.set(scopes[0].key, _TOMBSTONE, TOMBSTONE_SECONDS)
    elif scopes:
        cache.set_many({scope.key: _TOMBSTONE for scope in scopes}, TOMBSTONE_SECONDS)
    prefetched = _batch.get()
    if prefetched:  # a read later in this request must not use what was prefetched before the write
        for scope in scopes:
            prefetched.pop(scope.key, None)
