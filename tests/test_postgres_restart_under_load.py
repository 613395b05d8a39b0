"""PostgreSQL restarted while requests run: every request answers within the request timeout; those that meet
the outage answer 503 `storage_unavailable` with the envelope (never a 500); the service recovers by itself.

It runs against a private PostgreSQL cluster (tests/support/stack.py), never the machine's shared server:
gunicorn with two workers, a private Redis, the real migrations. A few threads write and read JSON memory
documents with compare-and-set while the cluster is stopped for three seconds and started again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx
import pytest

from tests.support import postgres
from tests.support.stack import Stack

pytestmark = pytest.mark.requires_postgres

REQUEST_TIMEOUT = 30  # gunicorn's --timeout in start_web_server
THREADS = 6


@dataclass
class Outcome:
    started: float
    ended: float
    status: int
    body: dict


@pytest.fixture(scope="module")
def stack():
    if not postgres.available():
        pytest.fail("PostgreSQL 15 binaries (initdb, pg_ctl) are needed for a private cluster")
    running = Stack(web_workers=2).start()
    yield running
    running.stop()


def client_loop(stack: Stack, key: str, number: int, stop: threading.Event, outcomes: list[Outcome], writes: dict):
    url = f"{stack.url}/v1/users/u{number}/conversations/c1/memory"
    http = httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=REQUEST_TIMEOUT + 5)
    revision = 0
    while not stop.is_set():
        for method, body in (("GET", None), ("PUT", "write")):
            started = time.monotonic()
            try:
                if body is None:
                    response = http.get(url)
                else:
                    response = http.put(url, json={"expectedRevision": revision, "memory": {"n": revision + 1}})
            except httpx.HTTPError as exc:  # a dropped connection or a timeout: recorded as status 0
                outcomes.append(Outcome(started, time.monotonic(), 0, {"transport": repr(exc)}))
                continue
            outcome = Outcome(started, time.monotonic(), response.status_code, response.json())
            outcomes.append(outcome)
            if response.status_code == 200 and method == "GET":
                revision = response.json()["revision"]
            elif response.status_code == 200:
                revision = response.json()["revision"]
                writes[number] = writes.get(number, 0) + 1
            elif response.status_code == 409:
                revision = response.json()["error"]["details"]["currentRevision"]


def test_requests_during_a_postgres_restart_answer_503_and_the_service_recovers(stack):
    key = stack.product_key("restart")
    gunicorn_pid = stack.web.process.pid
    stop, outcomes, writes = threading.Event(), [], {}
    threads = [
        threading.Thread(target=client_loop, args=(stack, key, n, stop, outcomes, writes)) for n in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    time.sleep(3)
    down_at = time.monotonic()
    stack.postgres.stop()
    time.sleep(3)
    stack.postgres.start()
    up_at = time.monotonic()
    time.sleep(4)
    stop.set()
    for thread in threads:
        thread.join(timeout=REQUEST_TIMEOUT + 10)

    statuses = {o.status for o in outcomes}
    assert statuses <= {200, 409, 503}, sorted(statuses)  # no 500, no dropped connection
    assert max(o.ended - o.started for o in outcomes) < REQUEST_TIMEOUT
    unavailable = [o for o in outcomes if o.status == 503]
    assert unavailable, "no request met the outage"
    for o in unavailable:
        assert o.body["error"]["code"] == "storage_unavailable" and o.body["error"]["details"] == {
            "dependency": "database"
        }
        assert down_at - 1 <= o.started and o.ended <= up_at + 2, "a 503 outside the outage"
    before = [o for o in outcomes if o.ended < down_at]
    after = [o for o in outcomes if o.started > up_at + 2]
    assert before and {o.status for o in before} <= {200, 409}
    assert len(after) > 20 and {o.status for o in after} <= {200, 409}  # recovered, no restart of gunicorn
    assert stack.web.process.poll() is None and stack.web.process.pid == gunicorn_pid
    # No lost update: each document's revision is the number of writes that answered 200 (a write whose
    # answer was a 503 may still have committed just before the connection went away).
    http = httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=10)
    for number in range(THREADS):
        revision = http.get(f"{stack.url}/v1/users/u{number}/conversations/c1/memory").json()["revision"]
        assert writes.get(number, 0) <= revision <= writes.get(number, 0) + len(unavailable)
