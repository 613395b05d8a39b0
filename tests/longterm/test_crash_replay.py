"""SIGKILL between commit and response (docs/contract.md): a real server process dies right after a write commits.

The server runs `manage.py runserver` against the test database with fault injection on and
MEMORYHUB_CRASH_AFTER_COMMIT set to the operation ids to crash on (memoryhub/faults.py); the service
then SIGKILLs its own process from the commit hook, before any response is written. The client sees a
broken connection, restarts the server and repeats the request with the same operationId: it gets the
original result, and there is exactly one row at the expected version.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest

from memories.longterm.models import LongTermMemory, LongTermMemoryVersion, TaskCheckpoint
from memories.models import RunOnceRecord
from tests.longterm.support import PREFERENCE_EN, proposal, update_body
from tests.support.processes import ROOT, free_port, stop_process_group, subprocess_env, wait_for

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]

CRASH_ON = "crash-create,crash-update,crash-checkpoint"


class Server:
    """`manage.py runserver` on a free port, on the test database, crashing on the listed operation ids."""

    def __init__(self) -> None:
        self.port = free_port()
        self.env = subprocess_env(MEMORYHUB_CRASH_AFTER_COMMIT=CRASH_ON, PYTHONUNBUFFERED="1")
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{self.port}"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self._answers, timeout=60, message="the server to start")

    def _answers(self) -> bool:
        assert self.process.poll() is None, "the server exited while starting"
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            stop_process_group(self.process)


@pytest.fixture
def server():
    running = Server()
    running.start()
    yield running
    running.stop()


def send(server: Server, key: str, method: str, path: str, body: dict) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}{path}", json=body, timeout=60, headers={"Authorization": f"Bearer {key}"}
    )


def crash(server: Server, key: str, method: str, path: str, body: dict) -> None:
    """Send a request that commits and kills the server before it answers; then start a new server."""
    with pytest.raises(httpx.HTTPError):  # connection closed without a response
        send(server, key, method, path, body)
    assert server.process.wait(timeout=30) == -signal.SIGKILL
    server.start()


def test_writes_committed_before_a_sigkill_are_not_repeated(server, alice):
    url = "/v1/users/u1/memories"
    create = proposal(operationId="crash-create")
    crash(server, alice.key, "POST", url, create)
    assert LongTermMemory.objects.count() == 1
    assert RunOnceRecord.objects.filter(kind="operation", key="crash-create").exists()
    retried = send(server, alice.key, "POST", url, create)
    assert retried.status_code == 201 and retried.headers["Operation-Replayed"] == "true"
    record = retried.json()
    row = LongTermMemory.objects.get()
    assert record["id"] == row.memory_id and record["version"] == row.version == 1

    update = update_body(PREFERENCE_EN, expected=1, operationId="crash-update")
    crash(server, alice.key, "PATCH", f"{url}/{record['id']}", update)
    retried = send(server, alice.key, "PATCH", f"{url}/{record['id']}", update)  # expectedVersion 1 is stale now
    assert retried.status_code == 200 and retried.json()["version"] == 2
    assert LongTermMemory.objects.count() == 1 and LongTermMemory.objects.get().version == 2
    assert LongTermMemoryVersion.objects.filter(action="updated").count() == 1

    checkpoint = {"data": {"done": 1}, "input": {"p": 1}, "operationId": "crash-checkpoint"}
    crash(server, alice.key, "PUT", "/v1/users/u1/tasks/t1/checkpoints/collect", checkpoint)
    retried = send(server, alice.key, "PUT", "/v1/users/u1/tasks/t1/checkpoints/collect", checkpoint)
    assert retried.status_code == 201 and retried.headers["Operation-Replayed"] == "true"
    assert TaskCheckpoint.objects.count() == 1
    assert (
        send(server, alice.key, "POST", f"{url}/search", {"query": "English", "mode": "semantic"}).json()["results"][0][
            "version"
        ]
        == 2
    )
