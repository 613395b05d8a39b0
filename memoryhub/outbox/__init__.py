"""The transactional outbox: background work is a row written in the transaction it follows.

    from memoryhub import outbox
    outbox.schedule("tables.apply_table_edits", {"turn_pk": 7}, dedup_key="tables.apply_table_edits:7")

`schedule` is called inside the transaction that writes the data the job follows: the row commits (or
rolls back) with it. After the commit the row is sent to Celery; a row whose task has not finished
(broker down, worker lost) is sent again by the beat task `outbox.relay`, with backoff. Tasks scheduled
this way must be idempotent: a row may be delivered more than once, its work must happen once.
See docs/outbox.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def schedule(task_name: str, kwargs: dict[str, Any], dedup_key: str) -> bool:
    """Write an outbox row for `task_name(**kwargs)` in the current transaction; send it once that commits.

    `dedup_key` names the job (one row per key, ever): scheduling the same key again does nothing and
    answers False. Must be called inside `transaction.atomic()`.
    """
    from .services import outbox_schedule

    return outbox_schedule(task_name=task_name, kwargs=kwargs, dedup_key=dedup_key)


def run_in_background(task_name: str, when: Callable[[dict[str, Any]], bool] | None = None) -> None:
    """Never run `task_name` inside the request that scheduled it, even when tasks run in-process (no broker);
    with `when`, only the rows whose arguments it accepts (one job of the generic task `turn_jobs.run`)."""
    from .services import run_in_background as register

    register(task_name, when)


def background_wait(timeout: float = 30.0) -> None:
    """Wait for the in-process background tasks started so far (tests use it before looking at the results)."""
    from .services import background_wait as wait

    wait(timeout)
