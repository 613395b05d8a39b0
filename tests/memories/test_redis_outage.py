"""Redis down → 503 `storage_unavailable`, nothing written; Redis back → requests succeed with no restart (C3, R3).

The test starts its own `redis-server` on a free port and stops/restarts it; it never touches the
machine's Redis, so it runs in both CI runs. Without the binary it skips locally and fails under
MEMORYHUB_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis
from django.core.cache import cache
from django.test import override_settings

from memories.models import Turn
from memoryhub.api.throttling import PerKeyRateThrottle
from tests.support.api import assert_envelope
from tests.support.services import REQUIRE_SERVICES
from tests.support.turns import post_turn

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


class OwnRedis:
    """A throw-away redis-server on a fixed port of our own, stoppable and restartable."""

    def __init__(self, binary: str, workdir: Path):
        self.binary, self.workdir = binary, workdir
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self._answers():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def _answers(self) -> bool:
        try:
            return redis.Redis(port=self.port, socket_connect_timeout=0.2).ping()
        except redis.exceptions.ConnectionError:
            return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def own_redis(tmp_path):
    binary = shutil.which("redis-server")
    if binary is None:
        message = "the redis-server binary is needed to stop and restart a Redis of the test's own"
        if REQUIRE_SERVICES:
            pytest.fail(message)
        pytest.skip(message)
    server = OwnRedis(binary, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_cache(own_redis):
    """Point the cache (working set, rate limits) at our own Redis; Django rebuilds its cache handlers."""
    caches = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": own_redis.url,
            "KEY_PREFIX": "memoryhub-outage-test",
            "OPTIONS": {
                "CLIENT_CLASS": "django_redis.client.DefaultClient",
                "SOCKET_CONNECT_TIMEOUT": 1,
                "SOCKET_TIMEOUT": 1,
            },
        }
    }
    with override_settings(CACHES=caches, REDIS_URL=own_redis.url, DJANGO_REDIS_IGNORE_EXCEPTIONS=False):
        assert cache.client.__class__.__module__.startswith("django_redis")
        yield own_redis


def put(api, revision: int, memory: dict):
    return api.put(f"{CONV}/memory", {"expectedRevision": revision, "memory": memory})


def assert_redis_down(response) -> None:
    error = assert_envelope(response, 503, "storage_unavailable")
    assert error["details"].get("dependency") == "redis", error


@pytest.mark.parametrize("rate_limits", ["on", "off"])
def test_redis_down_is_503_and_recovers_without_restart(alice, redis_cache, monkeypatch, rate_limits):
    if rate_limits == "off":
        # Without the rate limiter's cache read first, the working set itself must answer 503.
        monkeypatch.setattr(PerKeyRateThrottle, "allow_request", lambda self, request, view: True)
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    assert put(alice, 0, {"keyHolder": "guard"}).status_code == 200
    before = post_turn(alice, "gate", "hi")
    assert before.status_code == 201 and '"keyHolder":"guard"' in before.json()["prompt"]
    turns_before = Turn.objects.count()

    redis_cache.stop()
    assert_redis_down(post_turn(alice, "gate", "hi"))
    assert_redis_down(put(alice, 1, {"keyHolder": "thief"}))
    assert_redis_down(
        alice.put(
            f"{CONV}/memory", {"expectedRevision": 1, "memory": {"keyHolder": "thief"}}, HTTP_IDEMPOTENCY_KEY="k-1"
        )
    )
    assert Turn.objects.count() == turns_before  # no turn recorded from a prepare that failed

    redis_cache.start()  # same port, empty: the working set is rebuilt from the database
    after = post_turn(alice, "gate", "hi")
    assert after.status_code == 201, after.json()
    assert '"keyHolder":"guard"' in after.json()["prompt"] and "thief" not in after.json()["prompt"]
    assert after.json()["sources"][0]["cached"] is False
    assert alice.get(f"{CONV}/memory").json() == {"revision": 1, "memory": {"keyHolder": "guard"}}
    assert [r["revision"] for r in alice.get(f"{CONV}/memory/revisions").json()["results"]] == [1]
    assert put(alice, 1, {"keyHolder": "captain"}).status_code == 200
    # the idempotency key of the failed attempt was not used up: it now performs the write once
    replay = alice.put(
        f"{CONV}/memory", {"expectedRevision": 1, "memory": {"keyHolder": "thief"}}, HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert_envelope(replay, 409, "revision_conflict")
    assert '"keyHolder":"captain"' in post_turn(alice, "gate", "hi").json()["prompt"]


def test_redis_down_is_503_for_a_turn_without_cached_sources_too(alice, redis_cache):
    """The rate limiter needs the cache on every product request: no silent pass-through while it is down."""
    body = {**SCENARIO, "memorySources": [], "template": "{{userMessage}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    redis_cache.stop()
    assert_redis_down(post_turn(alice, "gate", "hi"))
    assert_redis_down(alice.get(f"{CONV}/memory"))
    redis_cache.start()
    assert post_turn(alice, "gate", "hi").status_code == 201
