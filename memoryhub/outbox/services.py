"""Write, send and re-send outbox rows (docs/outbox.md). Celery is reached only through `memoryhub.celery.app`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, OperationalError, connection, connections, transaction
from django.utils import timezone

from .models import OutboxMessage, task_id_for

logger = logging.getLogger(__name__)


class OutsideTransaction(RuntimeError):
    """`schedule` was called in autocommit mode: the row would not follow any data write."""


def outbox_schedule(*, task_name: str, kwargs: dict[str, Any], dedup_key: str) -> bool:
    """Write the row inside the caller's transaction and send it after the commit; False if the key exists."""
    if not transaction.get_connection().in_atomic_block:
        raise OutsideTransaction("outbox.schedule must be called inside transaction.atomic()")
    now = timezone.now()
    with transaction.atomic():  # a savepoint: a concurrent duplicate key must not break the caller's transaction
        message, created = OutboxMessage.objects.get_or_create(
            dedup_key=dedup_key,
            defaults={"task": task_name, "kwargs": kwargs, "next_attempt_at": now + first_redispatch_delay()},
        )
    if created:
        # Registered inside the savepoint's parent: a rolled-back transaction sends nothing.
        transaction.on_commit(partial(outbox_dispatch, message.pk, task_name, kwargs))
    return created


def first_redispatch_delay() -> timedelta:
    return timedelta(seconds=settings.OUTBOX_REDISPATCH_AFTER_SECONDS)


def backoff(attempts: int) -> timedelta:
    """The wait before the relay sends a row again after its `attempts`-th relay send: doubling, capped."""
    base = settings.OUTBOX_REDISPATCH_AFTER_SECONDS
    return timedelta(seconds=min(base * 2 ** min(attempts, 20), settings.OUTBOX_BACKOFF_MAX_SECONDS))


def outbox_dispatch(pk: int, task_name: str, kwargs: dict[str, Any]) -> bool:
    """Send one row to Celery (after its commit). A failed send is logged, never raised: the relay retries it."""
    try:
        _send(pk, task_name, kwargs)
    except Exception as exc:  # the broker is down or refuses: the row stays pending for the relay
        logger.warning("outbox: sending %s (row %s) failed, the relay will retry: %s", task_name, pk, exc)
        _record_error(pk, exc)
        return False
    return True


# --- tasks that never run inside the request, even without a broker ---------------------------------------------
# On the embedded default (no broker) a task runs in-process when its transaction commits, i.e. inside the
# request that wrote it. A task registered here (outbound HTTP: webhook deliveries) runs on a small pool of
# background threads instead, so the request answers as soon as its write committed, however slow the
# receivers are. Its row stays pending until the thread acknowledges it: a lost process leaves it to the relay.

# task name -> the predicates on its arguments (None: every row of the task).
_IN_BACKGROUND: dict[str, list[Callable[[dict[str, Any]], bool] | None]] = {}
_POOL_SIZE = 4  # one on SQLite, which takes one writer at a time
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_running: set[Future] = set()


def run_in_background(task_name: str, when: Callable[[dict[str, Any]], bool] | None = None) -> None:
    """Never run `task_name` (with `when`: the rows it accepts) inside the request that scheduled it."""
    _IN_BACKGROUND.setdefault(task_name, []).append(when)


def _runs_in_background(task_name: str, kwargs: dict[str, Any]) -> bool:
    return any(when is None or when(kwargs) for when in _IN_BACKGROUND.get(task_name, ()))


def background_wait(timeout: float = 30.0) -> None:
    """Wait for the background tasks started so far (tests, and a process that stops, call this)."""
    wait(list(_running), timeout=timeout)


def _background(pk: int, task_name: str, kwargs: dict[str, Any]) -> None:
    global _pool
    with _pool_lock:
        if _pool is None:
            size = 1 if connection.vendor == "sqlite" else _POOL_SIZE
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="outbox-background")
        future = _pool.submit(_run_in_thread, pk, task_name, kwargs)
        _running.add(future)
    future.add_done_callback(_running.discard)


# SQLite (the embedded default) takes one writer at a time, and a shared-cache database answers "locked" at once
# instead of waiting: a background task that meets the request's own write waits and runs again.
_LOCKED_RETRIES = 20  # at most about 10 s of pauses in all
_LOCKED_PAUSE_SECONDS = 0.05


def _run_in_thread(pk: int, task_name: str, kwargs: dict[str, Any]) -> None:
    from memoryhub.celery import app

    try:
        for attempt in range(_LOCKED_RETRIES + 1):
            result = app.tasks[task_name].apply(kwargs=kwargs, task_id=task_id_for(pk))
            if not (result.failed() and _sqlite_locked(result.result)) or attempt == _LOCKED_RETRIES:
                break
            time.sleep(_LOCKED_PAUSE_SECONDS * (attempt + 1))
        outbox_acknowledge(pk, result.state)
    except Exception:  # the row stays pending: the relay sends it again
        logger.exception("outbox: background task %s (row %s) failed", task_name, pk)
    finally:
        connections.close_all()  # this thread's own connections


def _sqlite_locked(error: object) -> bool:
    return connection.vendor == "sqlite" and isinstance(error, OperationalError) and "locked" in str(error)


def _send(pk: int, task_name: str, kwargs: dict[str, Any]) -> None:
    from memoryhub.celery import app

    task_id = task_id_for(pk)
    if app.conf.task_always_eager:  # the embedded default: run in-process now, like `.delay()` did
        if settings.OUTBOX_BACKGROUND_THREADS and _runs_in_background(task_name, kwargs):
            _background(pk, task_name, kwargs)
            return
        result = app.tasks[task_name].apply(kwargs=kwargs, task_id=task_id)
        outbox_acknowledge(pk, result.state)
        return
    # A broker outage must fail at once, not hold the request (kombu's default connect retries for
    # broker_connection_timeout); the row stays pending and the relay sends it later.
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=0)
        app.send_task(task_name, kwargs=kwargs, task_id=task_id, retry=False, producer=producer)


def _record_error(pk: int, exc: Exception) -> None:
    try:
        OutboxMessage.objects.filter(pk=pk).update(last_error=f"{type(exc).__name__}: {exc}"[:2000])
    except DatabaseError:
        logger.warning("outbox: could not record the send error of row %s", pk)


def outbox_acknowledge(pk: int, outcome: str) -> bool:
    """Mark a row done (its task finished: SUCCESS, or FAILURE once its own retries are spent)."""
    updated = OutboxMessage.objects.filter(pk=pk, done_at__isnull=True).update(done_at=timezone.now(), outcome=outcome)
    return updated == 1


@dataclass(frozen=True)
class RelayReport:
    due: int
    sent: int
    failed: int
    purged: int


def outbox_relay(*, limit: int = 200, now: datetime | None = None) -> RelayReport:
    """Send again every row not acknowledged by its `next_attempt_at`, pushing that time back (backoff).

    Rows are claimed under `SELECT … FOR UPDATE SKIP LOCKED` (PostgreSQL), so several relays never send
    the same row at once. The first failed send stops the batch: the broker is down, the rest waits.
    """
    now = now or timezone.now()
    with transaction.atomic():
        due = OutboxMessage.objects.filter(done_at__isnull=True, next_attempt_at__lte=now).order_by("next_attempt_at")
        if connection.features.has_select_for_update_skip_locked:
            due = due.select_for_update(skip_locked=True)
        rows = list(due[:limit])
        for row in rows:
            row.attempts += 1
            row.next_attempt_at = now + backoff(row.attempts)
        OutboxMessage.objects.bulk_update(rows, ["attempts", "next_attempt_at"])
    sent = failed = 0
    for row in rows:
        if outbox_dispatch(row.pk, row.task, row.kwargs):
            sent += 1
        else:
            failed += 1
            break
    purged = outbox_purge(now=now)
    if rows:
        logger.info("outbox relay: %s due, %s sent, %s failed", len(rows), sent, failed)
    return RelayReport(due=len(rows), sent=sent, failed=failed, purged=purged)


def outbox_purge(*, now: datetime | None = None) -> int:
    """Delete acknowledged rows older than OUTBOX_RETENTION_HOURS (pending rows are never deleted)."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.OUTBOX_RETENTION_HOURS)
    deleted, _ = OutboxMessage.objects.filter(done_at__lt=cutoff).delete()
    return deleted
