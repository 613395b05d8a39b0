"""The plans PostgreSQL chose for every statement a call ran, functions' inner statements included.

PL/pgSQL statements are invisible to EXPLAIN of the calling query; auto_explain (shipped with PostgreSQL)
logs them, and with `client_min_messages = log` the log messages come back to this connection as notices.
Needs a superuser (LOAD), which the test and bench databases have.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import connection

T = TypeVar("T")

_ON = (
    "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; "
    "SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET client_min_messages = log"
)
_OFF = "RESET auto_explain.log_min_duration; RESET client_min_messages"


def plans_of(call: Callable[[], T]) -> tuple[T, list[str]]:
    """Run `call` and return its result with the plan of each statement it ran (EXPLAIN ANALYZE text)."""
    plans: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(_ON)
    raw = connection.connection
    handler = lambda diagnostic: plans.append(diagnostic.message_primary or "")  # noqa: E731
    raw.add_notice_handler(handler)
    try:
        result = call()
        with connection.cursor() as cursor:
            # A statement sent with the extended protocol ends (and is logged) when its portal is dropped,
            # i.e. at the next statement: send one so the last of `call` is logged before we stop listening.
            cursor.execute("SELECT 1")
    finally:
        raw.remove_notice_handler(handler)
        with connection.cursor() as cursor:
            cursor.execute(_OFF)
    return result, [plan for plan in plans if "Query Text:" in plan]
