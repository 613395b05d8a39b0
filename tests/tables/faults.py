"""A concurrent write between a table-edit task's read and its write (registered at memoryhub.faults' point).

In-process, a test registers `concurrent_write_when_asked` through the `fault_injection` fixture; the suite's
Celery worker registers it at start (tests/support/celery_worker.py). Either way it does nothing until a
test asks for N concurrent writes on one conversation through the cache (the worker runs in another
process); it then commits one write per attempt, from another database connection, after the task has
read the tables and before it writes them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.core.cache import cache
from django.db import connection, connections

from memories.models import Turn
from memoryhub.addresses import ConversationAddress
from tables.selectors import conversation_tables
from tables.services import WriteCause, table_replace, turn_address

FAULT_MARKER = "fault-injection"


def _key(address: ConversationAddress) -> str:
    return f"tables:fault:concurrent-writes:{address.product.pk}:{address.user_id}:{address.conversation_id}"


def request_concurrent_writes(address: ConversationAddress, count: int) -> None:
    """Ask the worker to commit `count` concurrent writes, one per apply attempt, on this conversation."""
    cache.set(_key(address), count, 300)


def concurrent_write_when_asked(turn: Turn, attempt: int) -> None:
    address = turn_address(turn)
    remaining = cache.get(_key(address))
    if not remaining:
        return
    cache.set(_key(address), remaining - 1, 300)
    run_concurrently(lambda: append_marker_rows(address, f"{FAULT_MARKER}-{attempt}"))


def run_concurrently(write: Callable[[], None]) -> None:
    """PostgreSQL: commit `write` from another connection while the caller's transaction stays open.

    SQLite allows one writer at a time (our transaction holds it), so there the write runs inline; the
    caller's next statement sees it exactly as it would see a concurrent commit.
    """
    if connection.vendor != "postgresql":
        write()
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            write()
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def append_marker_rows(address: ConversationAddress, marker: str) -> None:
    """A concurrent writer: append a row starting with `marker` to every table of the conversation."""
    for table in conversation_tables(address).order_by("position", "pk"):
        rows = [*table.rows, [marker] + [""] * (len(table.columns) - 1)]
        table_replace(table=table, expected_version=table.version, rows=rows, cause=WriteCause("operator", marker))
