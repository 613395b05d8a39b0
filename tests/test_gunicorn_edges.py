"""gunicorn's edges answer the envelope: a request past the timeout is `503 request_timeout` (not gunicorn's HTML
500), a chunked body is `411 length_required` (not read as empty), and several workers without Redis are warned
that their rate limits are per worker.

A real gunicorn with two workers on its own SQLite database (a temporary MEMORYHUB_VAR_DIR), whatever services
the suite runs on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import GUNICORN, ROOT, free_port, healthz_answers, stop_process_group, wait_for

TIMEOUT = 3  # gunicorn's --timeout
UNSET = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DATABASE_REPLICA_URL", "MEMORYHUB_REQUIRE_SERVICES")
CONV = "/v1/users/u1/conversations/c1"


@pytest.fixture(scope="module")
def slow_hinos():
    stub = StubHttpServer().start()
    stub.route("POST", "/v1/memory/prepare", lambda request: Reply(200, {}, delay_seconds=4 * TIMEOUT))
    yield stub
    stub.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, slow_hinos):
    var = tmp_path_factory.mktemp("gunicorn-edges")
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env |= {"MEMORYHUB_VAR_DIR": str(var), "HINOS_MEMORY_URL": slow_hinos.url, "HINOS_MEMORY_TIMEOUT_MS": "60000"}
    env |= {"GUNICORN_ACCESS_LOG": "", "PROMETHEUS_MULTIPROC_DIR": str(var / "metrics")}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    created = subprocess.run(
        [*manage, "create_product", "--name", "edges", "--json"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    key = json.loads(created.stdout.decode().strip().splitlines()[-1])["apiKey"]
    port, log = free_port(), var / "gunicorn.log"
    args = [sys.executable, "-m", *GUNICORN, "--bind", f"127.0.0.1:{port}", "--workers", "2", "--timeout", str(TIMEOUT)]
    with log.open("w") as errors:
        process = subprocess.Popen(args, cwd=ROOT, env=env, stderr=errors, stdout=errors, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthz_answers(base), timeout=60, message="gunicorn to answer /healthz")
        yield {"url": base, "key": key, "log": log}
    finally:
        stop_process_group(process)


def envelope_of(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json"), response.text[:300]
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    return body["error"]


def test_a_request_past_the_timeout_answers_the_envelope(server):
    headers = {"Authorization": f"Bearer {server['key']}"}
    scenario = {
        "id": "slow",
        "name": "slow",
        "memoryRuntime": "hinos",
        "memorySources": [{"id": "ext", "agentRef": "hinos", "variable": "hinosMemory"}],
        "template": "{{hinosMemory}} {{userMessage}}",
    }
    made = httpx.post(f"{server['url']}/v1/scenarios", json=scenario, headers=headers, timeout=10)
    assert made.status_code == 201, made.text
    started = time.monotonic()
    turn = {"scenarioId": "slow", "userMessage": "hello"}
    answer = httpx.post(f"{server['url']}{CONV}/turns", json=turn, headers=headers, timeout=4 * TIMEOUT)
    elapsed = time.monotonic() - started
    error = envelope_of(answer, 503, "request_timeout")
    assert error["details"] == {"timeoutSeconds": TIMEOUT}
    assert TIMEOUT - 0.5 <= elapsed < 3 * TIMEOUT
    wait_for(lambda: healthz_answers(server["url"]), timeout=30, message="the replaced worker")


def test_a_chunked_body_is_411_and_changes_nothing(server):
    headers = {"Authorization": f"Bearer {server['key']}", "Content-Type": "application/json"}
    body = json.dumps({"expectedRevision": 0, "memory": {"scene": "gate"}}).encode()
    chunked = httpx.put(f"{server['url']}{CONV}/memory", content=iter([body[:10], body[10:]]), headers=headers)
    assert "content-length" not in {k.lower() for k in chunked.request.headers}
    envelope_of(chunked, 411, "length_required")
    read = httpx.get(f"{server['url']}{CONV}/memory", headers=headers, timeout=10)
    assert read.json() == {"revision": 0, "memory": None}
    sized = httpx.put(f"{server['url']}{CONV}/memory", content=body, headers=headers, timeout=10)
    assert sized.status_code == 200 and sized.json() == {"revision": 1}


def test_several_workers_without_redis_are_warned_their_limits_are_per_worker(server):
    assert "REDIS_URL is not set: with 2 workers the rate limits are counted per worker" in server["log"].read_text()
