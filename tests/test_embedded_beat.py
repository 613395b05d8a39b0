"""The beat schedule inside the server on the embedded default (memoryhub/embedded_beat.py): without a broker
nothing else runs the sweeps, so a webhook delivery that failed once stayed `pending` for good (an outside check).

A real gunicorn with two workers, as `dev.py serve --workers 2` starts it (MEMORYHUB_EMBEDDED_BEAT=1), on its own
SQLite database, whatever services the suite runs on: one worker runs the schedule, and the retry comes once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from memoryhub.embedded_beat import Schedule
from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import GUNICORN, ROOT, free_port, healthz_answers, stop_process_group, wait_for

UNSET = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DATABASE_REPLICA_URL", "MEMORYHUB_REQUIRE_SERVICES")


def test_an_entry_runs_once_per_interval_first_after_one_interval() -> None:
    schedule = Schedule({"fast": {"task": "a", "schedule": 2.0}, "slow": {"task": "b", "schedule": 10.0}}, now=100.0)
    ran: list[str] = []
    assert schedule.run_due(101.0, ran.append) == []
    assert schedule.run_due(102.0, ran.append) == ["fast"]
    assert schedule.run_due(103.0, ran.append) == []
    assert schedule.run_due(110.0, ran.append) == ["fast", "slow"]
    assert ran == ["a", "a", "b"]


@pytest.fixture
def receiver():
    stub = StubHttpServer().start()
    answers = iter([500])  # the first attempt fails, every later one succeeds
    stub.route("POST", "/hook", lambda request: Reply(next(answers, 200), {}))
    yield stub
    stub.stop()


@pytest.fixture
def server(tmp_path, receiver):
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env |= {"MEMORYHUB_VAR_DIR": str(tmp_path), "GUNICORN_ACCESS_LOG": "", "MEMORYHUB_EMBEDDED_BEAT": "1"}
    env |= {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"), "WEBHOOK_ALLOW_PRIVATE": "1"}
    env |= {"WEBHOOK_RETRY_BASE_SECONDS": "1", "WEBHOOK_SWEEP_SECONDS": "1"}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    created = subprocess.run(
        [*manage, "create_product", "--name", "beat", "--json"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    key = json.loads(created.stdout.decode().strip().splitlines()[-1])["apiKey"]
    port, log = free_port(), tmp_path / "gunicorn.log"
    with log.open("w") as output:
        args = [sys.executable, "-m", *GUNICORN, "--bind", f"127.0.0.1:{port}", "--workers", "2"]
        process = subprocess.Popen(args, cwd=ROOT, env=env, stderr=output, stdout=output, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthz_answers(base), timeout=60, message="gunicorn to answer /healthz")
        yield {"url": base, "headers": {"Authorization": f"Bearer {key}"}, "log": log}
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
