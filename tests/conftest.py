"""Shared fixtures: two products (alice's and bob's apps), API clients, and the service switch.

Tests that need PostgreSQL, Redis or a Celery worker are skipped on the embedded default, but FAIL
when MEMORYHUB_REQUIRE_SERVICES=1 (the CI run on real services may skip nothing).
"""
from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.core.cache import cache
from rest_framework.test import APIClient

from memories.services.products import product_create

REQUIRE_SERVICES = os.environ.get("MEMORYHUB_REQUIRE_SERVICES") == "1"


def _service_missing(marker: str) -> str | None:
    if marker == "requires_postgres" and not settings.IS_POSTGRES:
        return "needs DATABASE_URL pointing at PostgreSQL"
    if marker == "requires_redis" and not settings.REDIS_URL:
        return "needs REDIS_URL"
    if marker == "requires_worker" and settings.CELERY_TASK_ALWAYS_EAGER:
        return "needs a broker (REDIS_URL or CELERY_BROKER_URL) for a real Celery worker"
    return None


def pytest_runtest_setup(item):
    for marker in ("requires_postgres", "requires_redis", "requires_worker"):
        if item.get_closest_marker(marker) is None:
            continue
        reason = _service_missing(marker)
        if reason and REQUIRE_SERVICES:
            pytest.fail(f"{marker}: {reason} (MEMORYHUB_REQUIRE_SERVICES=1 forbids skipping)")
        if reason:
            pytest.skip(reason)


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield


class ProductApi:
    """A product with an authenticated API client."""

    def __init__(self, name: str):
        self.product, issued = product_create(name=name)
        self.key = issued.plaintext
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.key}")

    def get(self, path: str, **kwargs):
        return self.client.get(path, **kwargs)

    def post(self, path: str, data=None, **kwargs):
        return self.client.post(path, data, format="json", **kwargs)

    def put(self, path: str, data=None, **kwargs):
        return self.client.put(path, data, format="json", **kwargs)

    def patch(self, path: str, data=None, **kwargs):
        return self.client.patch(path, data, format="json", **kwargs)

    def delete(self, path: str, **kwargs):
        return self.client.delete(path, **kwargs)


@pytest.fixture
def alice(db) -> ProductApi:
    return ProductApi("alice-app")


@pytest.fixture
def bob(db) -> ProductApi:
    return ProductApi("bob-app")


def assert_envelope(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    if code:
        assert body["error"]["code"] == code, body
    return body["error"]


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.1, message: str = "condition"):
    """Poll `predicate` until it returns a truthy value (for work done by a real worker)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def _database_url(settings_dict: dict) -> str:
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real `celery -A memoryhub worker` on the configured broker, using the test database.

    Tests using it must be `django_db(transaction=True)` so the worker sees committed rows.
    """
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from django.db import connection

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.IS_POSTGRES:
        reason = "a real worker needs a broker and PostgreSQL"
        if REQUIRE_SERVICES:
            pytest.fail(reason)
        pytest.skip(reason)
    from memoryhub.celery import app

    app.control.purge()  # tasks left over from an earlier run must not touch this one
    env = {**os.environ, "DATABASE_URL": _database_url(connection.settings_dict), "CELERY_WORKER_UNDER_TEST": "1"}
    root = Path(__file__).resolve().parent.parent
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "--pool=prefork", "--concurrency=2",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning"],
        cwd=root, env=env, start_new_session=True,
    )
    try:
        wait_for(lambda: _worker_answers(app), timeout=60, message="the Celery worker to start")
        yield worker
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)


def _worker_answers(app) -> bool:
    try:
        return bool(app.control.ping(timeout=0.5))
    except Exception:
        return False


@pytest.fixture(scope="session")
def _stub_server():
    from tests.support.http_server import StubHttpServer

    server = StubHttpServer().start()
    yield server
    server.stop()


@pytest.fixture
def stub_server(_stub_server):
    """A real HTTP server on 127.0.0.1 with no routes and no recorded requests (see tests/support)."""
    return _stub_server.reset()
