"""The beat schedule inside the server on the embedded default (memoryhub/embedded_beat.py): without a broker
nothing else runs the sweeps, so a webhook delivery that failed once stayed `pending` for good (an outside check).

A real gunicorn with two workers, as `dev.py serve --workers 2` starts it (MEMORYHUB_EMBEDDED_BEAT=1), on its own
SQLite database, whatever services the suite runs on: one worker runs the schedule, and the retry comes once; an
expired long-term memory is deleted. A fresh process that imported no task module (a server before any request)
runs every entry of the schedule without an error (the relay and the expiry sweep were NotRegistered there).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from memories.longterm.models import LongTermMemory
from memoryhub.embedded_beat import Schedule
from memoryhub.timefmt import iso
from tests.longterm.support import proposal
from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import GUNICORN, ROOT, free_port, healthz_answers, stop_process_group, wait_for

DATABASE = "memoryhub.sqlite3"  # in VAR_DIR, on the embedded default
UNSET = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DATABASE_REPLICA_URL", "MEMORYHUB_REQUIRE_SERVICES")
# A fresh process, as a server is before its first request: it runs each beat entry once, as the thread does.
ONE_TICK_OF_EVERY_ENTRY = """
import json, logging, django
django.setup()
from django.conf import settings
from memoryhub import embedded_beat
from memoryhub.celery import app

class Errors(logging.Handler):
    records = []
    def emit(self, record):
        self.records.append(record.getMessage())

logging.getLogger("memoryhub.embedded_beat").addHandler(Errors(logging.ERROR))
names = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
imported_before = sorted(name for name in names if name in app.tasks)
for name in names:
    embedded_beat.run_task(name)
print(json.dumps({"names": names, "importedBefore": imported_before, "errors": Errors.records}))
"""


def embedded_env(tmp_path, **extra: str) -> dict[str, str]:
    """The environment of `dev.py serve` on its own SQLite database in `tmp_path`, migrated."""
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env |= {"MEMORYHUB_VAR_DIR": str(tmp_path), "MEMORYHUB_EMBEDDED_BEAT": "1"}
    env |= {"DJANGO_SETTINGS_MODULE": "memoryhub.settings", **extra}
    migrate = [sys.executable, "manage.py", "migrate", "--noinput"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, capture_output=True)
    return env


def test_an_entry_runs_once_per_interval_first_after_one_interval() -> None:
    schedule = Schedule({"fast": {"task": "a", "schedule": 2.0}, "slow": {"task": "b", "schedule": 10.0}}, now=100.0)
    ran: list[str] = []
    assert schedule.run_due(101.0, ran.append) == []
    assert schedule.run_due(102.0, ran.append) == ["fast"]
    assert schedule.run_due(103.0, ran.append) == []
    assert schedule.run_due(110.0, ran.append) == ["fast", "slow"]
    assert ran == ["a", "a", "b"]


def test_a_fresh_server_process_runs_every_entry_of_the_schedule_without_an_error(tmp_path) -> None:
    env = embedded_env(tmp_path)
    ran = subprocess.run([sys.executable, "-c", ONE_TICK_OF_EVERY_ENTRY], cwd=ROOT, env=env, capture_output=True)
    assert ran.returncode == 0, ran.stderr.decode()
    report = json.loads(ran.stdout.decode().strip().splitlines()[-1])
    assert {"outbox.relay", "longterm.delete_expired_memories"} <= set(report["names"])
    # What makes the process fresh: nothing had imported these two task modules before the beat needed them.
    assert not {"outbox.relay", "longterm.delete_expired_memories"} & set(report["importedBefore"])
    assert report["errors"] == []


@pytest.fixture
def receiver():
    stub = StubHttpServer().start()
    answers = iter([500])  # the first attempt fails, every later one succeeds
    stub.route("POST", "/hook", lambda request: Reply(next(answers, 200), {}))
    yield stub
    stub.stop()


@pytest.fixture
def server(tmp_path, receiver):
    env = embedded_env(tmp_path, GUNICORN_ACCESS_LOG="", PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"))
    env |= {"WEBHOOK_ALLOW_PRIVATE": "1", "WEBHOOK_RETRY_BASE_SECONDS": "1", "WEBHOOK_SWEEP_SECONDS": "1"}
    env |= {"OUTBOX_RELAY_INTERVAL_SECONDS": "1", "LONGTERM_EXPIRY_SWEEP_SECONDS": "1"}
    create = [sys.executable, "manage.py", "create_product", "--name", "beat", "--json"]
    created = subprocess.run(create, cwd=ROOT, env=env, check=True, capture_output=True)
    key = json.loads(created.stdout.decode().strip().splitlines()[-1])["apiKey"]
    port, log = free_port(), tmp_path / "gunicorn.log"
    with log.open("w") as output:
        args = [sys.executable, "-m", *GUNICORN, "--bind", f"127.0.0.1:{port}", "--workers", "2"]
        process = subprocess.Popen(args, cwd=ROOT, env=env, stderr=output, stdout=output, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthz_answers(base), timeout=60, message="gunicorn to answer /healthz")
        yield {"url": base, "headers": {"Authorization": f"Bearer {key}"}, "log": log, "db": tmp_path / DATABASE}
    finally:
        stop_process_group(process)


def test_a_failed_webhook_delivery_is_retried_by_the_servers_own_beat(server, receiver) -> None:
    url, headers = server["url"], server["headers"]
    hook = {"url": f"{receiver.url}/hook", "events": ["memory.updated"]}
    assert httpx.post(f"{url}/v1/webhooks", json=hook, headers=headers, timeout=10).status_code == 201
    body = {"expectedRevision": 0, "memory": {"mood": "calm"}}
    written = httpx.put(f"{url}/v1/users/u1/conversations/c1/memory", json=body, headers=headers, timeout=10)
    assert written.status_code == 200, written.text
    wait_for(lambda: len(receiver.requests) >= 2, timeout=45, message=f"the retry ({server['log'].read_text()})")
    time.sleep(3)  # a second worker running the schedule too would send it again
    assert len(receiver.requests) == 2
    deliveries = httpx.get(f"{url}/v1/webhooks/1/deliveries", headers=headers, timeout=10).json()["results"]
    assert deliveries[0]["status"] == "delivered" and len(deliveries[0]["attempts"]) == 2


def test_an_expired_long_term_memory_is_deleted_by_the_servers_own_beat(server) -> None:
    url, headers = server["url"], server["headers"]
    expires = iso(timezone.now() + timedelta(seconds=5))
    created = httpx.post(f"{url}/v1/users/u1/memories", json=proposal(expiresAt=expires), headers=headers, timeout=60)
    assert created.status_code == 201, created.text
    memory_id = created.json()["id"]
    swept = f"the sweep to delete it ({server['log'].read_text()})"
    wait_for(lambda: gone(server["db"], memory_id), timeout=30, message=swept)
    assert not re.search(r"embedded beat: \S+ failed", server["log"].read_text())


def gone(database, memory_id: str) -> bool:
    """Whether the row left the server's own SQLite database (a GET answers 404 as soon as it has expired)."""
    with closing(sqlite3.connect(database)) as connection:
        query = f"SELECT count(*) FROM {LongTermMemory._meta.db_table} WHERE memory_id = ?"
        return connection.execute(query, (memory_id,)).fetchone()[0] == 0
