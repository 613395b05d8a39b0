"""A live memoryhub for the client's tests: gunicorn (and, on PostgreSQL + Redis, a real Celery worker).

The tests run in a virtualenv that has only the installed wheel (no Django): the server runs with the
repository's own interpreter. Environment:

- MEMORYHUB_REPO: the repository (default: two levels above this directory);
- MEMORYHUB_SERVER_PYTHON: its interpreter (default: $MEMORYHUB_REPO/.venv/bin/python);
- MEMORYHUB_SERVER_DATABASE_URL / MEMORYHUB_SERVER_REDIS_URL: run the server on these (an empty database,
  migrated here) and start a Celery worker; unset, the embedded defaults (SQLite in a temp dir, eager tasks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from memoryhub_client import AsyncMemoryHub, MemoryHub

REPO = Path(os.environ.get("MEMORYHUB_REPO") or Path(__file__).resolve().parents[3])
PYTHON = os.environ.get("MEMORYHUB_SERVER_PYTHON") or str(REPO / ".venv" / "bin" / "python")
BLOCKED = {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MEMORYHUB_FAULT_INJECTION", "DJANGO_SETTINGS_MODULE"}


@dataclass
class LiveServer:
    url: str
    api_key: str
    other_key: str
    celery: bool


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def _product_key(env: dict[str, str], name: str) -> str:
    out = _manage(env, "create_product", "--name", name, "--json")
    return str(json.loads(out.strip().splitlines()[-1])["apiKey"])


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    var = Path(tempfile.mkdtemp(prefix="mhc-server-"))
    env = {k: v for k, v in os.environ.items() if k not in BLOCKED and not k.startswith(("PYTEST", "VIRTUAL_ENV"))}
    env.update(
        {
            "MEMORYHUB_VAR_DIR": str(var),
            "SECRET_KEY": "memoryhub-client-tests",
            "MEMORYHUB_RATE_LIMIT": "1000000/min",
            "MEMORYHUB_RATE_LIMIT_PER_PRODUCT": "1000000/min",
            "WEBHOOK_ALLOW_PRIVATE": "1",  # the tests' webhook targets are on 127.0.0.1
        }
    )
    database, redis = os.environ.get("MEMORYHUB_SERVER_DATABASE_URL"), os.environ.get("MEMORYHUB_SERVER_REDIS_URL")
    if database:
        env["DATABASE_URL"] = database
    if redis:
        env["REDIS_URL"] = redis
    _manage(env, "migrate", "--noinput")
    keys = _product_key(env, "client-tests"), _product_key(env, "client-tests-other")
    processes: list[subprocess.Popen[bytes]] = []
    celery = bool(database and redis)
    if celery:
        worker = [PYTHON, "-m", "celery", "-A", "memoryhub", "worker", "--pool=prefork", "--concurrency=2"]
        worker += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning"]
        processes.append(subprocess.Popen(worker, cwd=REPO, env=env, start_new_session=True))
    port = _free_port()
    web = [PYTHON, "-m", "gunicorn", "-c", "memoryhub/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"]
    # One worker on the embedded defaults: the local-memory working set is per process (a kind created through
    # one worker would be unknown to another until its entry expires); with Redis, two.
    web += ["--workers", "2" if redis else "1", "--timeout", "60"]
    processes.append(
        subprocess.Popen(
            web, cwd=REPO, env={**env, "GUNICORN_ACCESS_LOG": ""}, stdout=subprocess.DEVNULL, start_new_session=True
        )
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert processes[-1].poll() is None, "gunicorn exited"
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "gunicorn did not answer /healthz"
            time.sleep(0.2)
        yield LiveServer(url, keys[0], keys[1], celery)
    finally:
        for process in reversed(processes):
            _stop(process)
        shutil.rmtree(var, ignore_errors=True)


@pytest.fixture
def hub(live_server: LiveServer) -> Iterator[MemoryHub]:
    with MemoryHub(live_server.url, live_server.api_key) as client:
        yield client


@pytest.fixture
async def ahub(live_server: LiveServer) -> AsyncIterator[AsyncMemoryHub]:
    async with AsyncMemoryHub(live_server.url, live_server.api_key) as client:
        yield client


@pytest.fixture
def user_id() -> str:
    """A user of its own per test, so tests never see each other's data."""
    return f"u-{uuid.uuid4().hex[:12]}"
