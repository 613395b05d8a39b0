"""Fault injection: the one place where the product lets the test suite break it on purpose.

Everything here is a no-op unless settings.FAULT_INJECTION is on (MEMORYHUB_FAULT_INJECTION=1), and
settings.py refuses to turn it on unless DEBUG is on or the process runs under the test suite. Two faults:

- `crash_after_commit(operation_id)`: the process SIGKILLs itself right after the current transaction
  commits, when the id is listed in MEMORYHUB_CRASH_AFTER_COMMIT: a write is committed and its response
  never sent (tests/longterm/test_crash_replay.py).
- `point(name, *args)`: a named place in the product where handlers registered by a test run, e.g. a
  concurrent write between a task's read and its write (tests/tables/faults.py). Tests register them
  in-process through the `fault_injection` fixture, and in the suite's Celery worker through
  tests/support/celery_worker.py. Handlers are test code: they live under tests/.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

# The named points; each is called from exactly one place in the product.
TABLE_EDITS_BETWEEN_READ_AND_WRITE = "tables.between_read_and_write"  # handler(turn, attempt_number)

Handler = Callable[..., Any]
_handlers: dict[str, list[Handler]] = {}


def enabled() -> bool:
    return bool(getattr(settings, "FAULT_INJECTION", False))


def register(name: str, handler: Handler) -> None:
    if not enabled():
        raise ImproperlyConfigured("fault injection is off: set MEMORYHUB_FAULT_INJECTION=1 (tests and DEBUG only)")
    _handlers.setdefault(name, []).append(handler)


def reset() -> None:
    """Forget every handler (a test's fixture does this when the test ends)."""
    _handlers.clear()


def point(name: str, *args: Any) -> None:
    """Run the handlers registered for `name`; nothing at all when fault injection is off."""
    if not enabled():
        return
    for handler in list(_handlers.get(name, ())):
        handler(*args)


def crash_after_commit(operation_id: str) -> None:
    """SIGKILL this process once the current transaction commits, if the suite asked for this operation id."""
    if enabled() and operation_id in getattr(settings, "FAULT_CRASH_AFTER_COMMIT", ()):
        # Committed, response not sent: the exact window the SIGKILL test needs (docs/contract.md, "Idempotency").
        transaction.on_commit(lambda: os.kill(os.getpid(), signal.SIGKILL))
