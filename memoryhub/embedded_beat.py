"""The beat schedule run inside the server, for the embedded default (`dev.py serve`, no broker).

Without a broker, a task runs in-process when it is sent (settings.CELERY_TASK_ALWAYS_EAGER), but `celery beat`
needs a broker, so nothing ran the periodic sweeps of CELERY_BEAT_SCHEDULE: webhook retries, the outbox relay,
export expiry, retention pruning, expired long-term memories (an outside check saw a webhook delivery stay
`pending` for good). `dev.py serve` sets MEMORYHUB_EMBEDDED_BEAT=1 for its server; memoryhub/wsgi.py then starts
this thread, which runs every entry each `schedule` seconds. Under `dev.py serve --workers N` one worker runs
it: the one holding a lock on a file in VAR_DIR (another takes over when it exits).
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from django.conf import settings
from django.db import close_old_connections

if TYPE_CHECKING:
    from celery import Task

log = logging.getLogger(__name__)
ENABLED_VARIABLE = "MEMORYHUB_EMBEDDED_BEAT"
TICK_SECONDS = 1.0
LOCK_RETRY_SECONDS = 30.0


def enabled() -> bool:
    """Only where `dev.py serve` asked for it, and only without a broker (with one, `celery beat` runs these)."""
    return os.environ.get(ENABLED_VARIABLE) == "1" and bool(settings.CELERY_TASK_ALWAYS_EAGER)


def start() -> threading.Thread | None:
    if not enabled():
        return None
    thread = threading.Thread(target=_run_forever, name="embedded-beat", daemon=True)
    thread.start()
    return thread


class Schedule:
    """When each entry of CELERY_BEAT_SCHEDULE last ran; an entry first runs one interval after the start."""

    def __init__(self, entries: dict[str, dict], now: float) -> None:
        self.entries = entries
        self.last = dict.fromkeys(entries, now)

    def due(self, now: float) -> list[str]:
        return [name for name, entry in self.entries.items() if now - self.last[name] >= float(entry["schedule"])]

    def run_due(self, now: float, run: Callable[[str], None]) -> list[str]:
        ran = self.due(now)
        for name in ran:
            self.last[name] = now
            run(self.entries[name]["task"])
        return ran


def run_task(task_name: str) -> None:
    """One sweep, in-process, on a fresh database connection; a failure is logged and the next tick goes on."""
    close_old_connections()
    try:
        scheduled_task(task_name).apply(throw=True)
    except Exception:
        log.exception("embedded beat: %s failed", task_name)
    finally:
        close_old_connections()


def scheduled_task(task_name: str) -> Task:
    """The task a beat entry names, found the way a worker finds it: by the task modules of the installed apps."""
    from memoryhub.celery import app

    _import_task_modules()
    return app.tasks[task_name]


@functools.cache
def _import_task_modules() -> None:
    """Import every app's tasks module once, as a worker does at its start (Celery's autodiscovery is lazy).

    A server imports only the task modules its views reach, so a sweep no request leads to (the outbox relay,
    expired long-term memories) was not registered: NotRegistered at every tick (an outside check).
    """
    from memoryhub.celery import app

    app.loader.import_default_modules()


def _run_forever() -> None:
    held = _lock_when_free()
    schedule = Schedule(dict(settings.CELERY_BEAT_SCHEDULE), time.monotonic())
    log.info("embedded beat: running %s", ", ".join(sorted(schedule.entries)))
    try:
        while True:
            time.sleep(TICK_SECONDS)
            schedule.run_due(time.monotonic(), run_task)
    finally:
        held.close()


def _lock_when_free() -> IO[bytes]:
    """The beat lock of this VAR_DIR: one process of a `dev.py serve` runs the schedule."""
    path = Path(settings.VAR_DIR) / "embedded-beat.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("ab")
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            time.sleep(LOCK_RETRY_SECONDS)
