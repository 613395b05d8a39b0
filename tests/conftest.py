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
