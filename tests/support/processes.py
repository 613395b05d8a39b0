"""Real processes the suite starts (a Celery worker, `manage.py runserver`) and waiting for their work."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.1, message: str = "condition"
) -> T:
    """Poll `predicate` until it returns a truthy value (for work done by a real worker)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def closed_port() -> int:
    """A port where a connection is refused: for clients' "service down" paths."""
    return free_port()


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL naming the database of `settings_dict` (the test database, for a subprocess)."""
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a server or worker the suite starts: on the test database, fault injection on.

    settings.py allows MEMORYHUB_FAULT_INJECTION only under tests; a process on a test database is one.
    """
    from django.db import connection

    return {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "MEMORYHUB_FAULT_INJECTION": "1",
        **extra,
    }


def start_celery_worker() -> subprocess.Popen:
    """`celery -A memoryhub worker` on the configured broker, with the suite's fault handlers included."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryhub",
            "worker",
            "--include",
            "tests.support.celery_worker",
            "--pool=prefork",
            "--concurrency=2",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "warning",
        ],
        cwd=ROOT,
        env=subprocess_env(),
        start_new_session=True,
    )


def stop_process_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM the process group, SIGKILL it if it has not exited within `timeout` seconds."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:  # the whole group is gone already
        return
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)
