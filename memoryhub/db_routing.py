"""Selectors read from a PostgreSQL replica when `DATABASE_REPLICA_URL` is set (docs/scaling.md).

The rule is narrow on purpose, so a replica's lag can never break a write:

- only reads made while serving a GET or HEAD request may go to the replica (`ReplicaReadsMiddleware` opens
  that window); writes, every read of a POST/PUT/PATCH/DELETE request, Celery tasks, commands and the
  migrations all stay on the primary (a task must see the turn that was just committed);
- inside a transaction, reads stay on the primary (they belong to the write);
- after a write in the same request, reads stay on the primary (read your own writes);
- the reads a client needs for compare-and-set — the revision or version it sends back as `expectedRevision`
  / `expectedVersion` — are marked `@primary_reads` and always see the newest commit, so a lagging replica
  cannot turn a client's next write into a conflict loop.

Without `DATABASE_REPLICA_URL` there is no "replica" alias and the router answers None (the default database)
for everything.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, TypeVar

from django.db import connections

REPLICA = "replica"
_replica_allowed: ContextVar[bool] = ContextVar("memoryhub_replica_allowed", default=False)
_primary_only: ContextVar[bool] = ContextVar("memoryhub_primary_only", default=False)
F = TypeVar("F", bound=Callable[..., Any])


def replica_configured() -> bool:
    return REPLICA in connections.settings


class ReplicaRouter:
    def db_for_read(self, model: type, **hints: Any) -> str | None:
        if not _replica_allowed.get() or _primary_only.get() or not replica_configured():
            return None
        if connections["default"].in_atomic_block:
            return None
        return REPLICA

    def db_for_write(self, model: type, **hints: Any) -> str | None:
        _primary_only.set(True)  # the rest of this request reads what it wrote
        return None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, two connections

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db == REPLICA else None


@contextmanager
def primary():
    """Reads inside this block go to the primary."""
    token = _primary_only.set(True)
    try:
        yield
    finally:
        _primary_only.reset(token)


@contextmanager
def replica_reads():
    """The window in which reads may go to the replica (a GET request); nested `primary()` still wins."""
    allowed, pinned = _replica_allowed.set(True), _primary_only.set(False)
    try:
        yield
    finally:
        _primary_only.reset(pinned)
        _replica_allowed.reset(allowed)


def primary_reads(function: F) -> F:
    """A selector whose answer a client sends back in a compare-and-set write: always read the primary."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with primary():
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class ReplicaReadsMiddleware:
    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        if request.method in ("GET", "HEAD") and replica_configured():
            with replica_reads():
                return self.get_response(request)
        return self.get_response(request)
