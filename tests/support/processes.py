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
        # Webhook receivers of the suite listen on 127.0.0.1; retries come within seconds (tests/webhooks).
        "WEBHOOK_ALLOW_PRIVATE": "1",
        "WEBHOOK_RETRY_BASE_SECONDS": "1",
        "WEBHOOK_SWEEP_SECONDS": "2",
        **extra,
    }


# The command of deploy/compose.yaml's web service, as the suite runs it (tests/deploy checks it).
GUNICORN = ["gunicorn", "-c", "memoryhub/gunicorn.conf.py"]


class WebServer:
    """gunicorn (memoryhub/gunicorn.conf.py) on a free port with `workers` processes."""

    def __init__(self, process: subprocess.Popen, port: int) -> None:
        self.process = process
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answers(self) -> bool:
        assert self.process.poll() is None, "the web server exited"
        return healthz_answers(self.url)

    def stop(self) -> None:
        stop_process_group(self.process)


def healthz_answers(base_url: str) -> bool:
    """Does the server at `base_url` answer `/healthz` with 200 yet?"""
    import httpx

    try:
        return httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def start_web_server(env: dict[str, str] | None = None, *, workers: int = 2, timeout: int = 30) -> WebServer:
    """Start gunicorn on the test database and wait until /healthz answers."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            *GUNICORN,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--timeout",
            str(timeout),
        ],
        cwd=ROOT,
        env={**(env or subprocess_env()), "GUNICORN_ACCESS_LOG": ""},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = WebServer(process, port)
    wait_for(server.answers, timeout=60, message="gunicorn to answer /healthz")
    return server


# The commands of deploy/compose.yaml's worker and beat services, as the suite runs them (tests/deploy checks it).
CELERY_WORKER = ["celery", "-A", "memoryhub", "worker"]
CELERY_BEAT = ["celery", "-A", "memoryhub", "beat"]


def start_celery_worker(env: dict[str, str] | None = None, *, faults: bool = True) -> subprocess.Popen:
    """`celery -A memoryhub worker` on the configured broker, with the suite's fault handlers included unless
    `faults` is False (a process outside the test database, where fault injection is refused)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            *CELERY_WORKER,
            *(["--include", "tests.support.celery_worker"] if faults else []),
            "--pool=prefork",
            "--concurrency=2",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "warning",
        ],
        cwd=ROOT,
        env=env or subprocess_env(),
        start_new_session=True,
    )


def start_celery_beat(schedule_dir: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`celery -A memoryhub beat`: the outbox relay (memoryhub/outbox) every OUTBOX_RELAY_INTERVAL_SECONDS."""
    return subprocess.Popen(
        [sys.executable, "-m", *CELERY_BEAT, "-s", str(schedule_dir / "celerybeat-schedule"), "-l", "warning"],
        cwd=ROOT,
        env=env or subprocess_env(),
        start_new_session=True,
    )


class RedisServer:
    """A private `redis-server` on a free port: a broker a test may stop and start again (no persistence)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self.answers, timeout=20, message=f"redis-server on port {self.port}")
        return self

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_process_group(self.process)
        wait_for(lambda: not self.answers(), timeout=20, message="redis-server to stop")


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
