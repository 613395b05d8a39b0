"""Operations (docs/contract.md): health, readiness, OpenAPI, metrics, and a Redis outage during a write."""

from __future__ import annotations

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from memoryhub.api.throttling import PerKeyRateThrottle
from tests.support.api import assert_envelope
from tests.support.metrics import metric

URL = "/v1/users/u1/conversations/c1/memory"
MEMORY_ROUTE = "v1/users/<str:user_id>/conversations/<str:conversation_id>/memory"
DEAD_REDIS = "redis://127.0.0.1:1/0"
DEAD_REDIS_CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": DEAD_REDIS,
        "OPTIONS": {
            "CLIENT_CLASS": "django_redis.client.DefaultClient",
            "SOCKET_CONNECT_TIMEOUT": 1,
            "SOCKET_TIMEOUT": 1,
        },
    }
}


def redis_down():
    """Redis configured but unreachable; override_settings resets django.core.cache.caches on entry and exit."""
    return override_settings(CACHES=DEAD_REDIS_CACHES, REDIS_URL=DEAD_REDIS)


# --- O1 -------------------------------------------------------------------------------------------


def test_healthz_is_200_without_a_key(db):
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_answers_even_when_redis_is_down(db):
    with redis_down():
        assert APIClient().get("/healthz").status_code == 200


def test_readyz_is_200_with_the_database_ok(db):
    response = APIClient().get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert body["dependencies"]["database"] == "ok"


def test_readyz_with_redis_configured_but_down_is_503_naming_redis(db):
    with redis_down():
        response = APIClient().get("/readyz")
    error = assert_envelope(response, 503, "storage_unavailable")
    assert "redis" in error["message"]
    assert error["details"]["dependencies"]["redis"].startswith("down")
    assert error["details"]["dependencies"]["database"] == "ok"


def test_readyz_recovers_once_redis_is_back(db):
    with redis_down():
        assert APIClient().get("/readyz").status_code == 503
    assert APIClient().get("/readyz").status_code == 200


# --- R3: Redis down during a memory write -----------------------------------------------------------


@pytest.fixture
def no_throttle(monkeypatch):
    """The rate limiter also lives in the cache; bypass it so the write reaches the service."""
    monkeypatch.setattr(PerKeyRateThrottle, "allow_request", lambda self, request, view: True)


def test_memory_write_with_redis_down_is_503_and_writes_nothing(alice, no_throttle):
    with redis_down():
        response = alice.put(URL, {"expectedRevision": 0, "memory": {"v": 1}})
    error = assert_envelope(response, 503, "storage_unavailable")
    assert error["details"]["dependency"] == "redis"
    assert alice.get(URL).json() == {"revision": 0, "memory": None}
    assert alice.get(URL + "/revisions").json()["results"] == []


def test_memory_update_with_redis_down_keeps_the_previous_revision(alice, no_throttle):
    alice.put(URL, {"expectedRevision": 0, "memory": {"v": 1}})
    with redis_down():
        assert_envelope(alice.put(URL, {"expectedRevision": 1, "memory": {"v": 2}}), 503, "storage_unavailable")
    assert alice.get(URL).json() == {"revision": 1, "memory": {"v": 1}}
    assert len(alice.get(URL + "/revisions").json()["results"]) == 1


def test_idempotent_write_failed_by_redis_is_not_remembered_and_succeeds_once_redis_is_back(alice, no_throttle):
    body = {"expectedRevision": 0, "memory": {"v": 1}}
    with redis_down():
        assert_envelope(alice.put(URL, body, HTTP_IDEMPOTENCY_KEY="op-1"), 503, "storage_unavailable")
    response = alice.put(URL, body, HTTP_IDEMPOTENCY_KEY="op-1")
    assert response.status_code == 200
    assert "Idempotent-Replayed" not in response
    assert response.json() == {"revision": 1}


def test_api_request_with_redis_down_is_503_not_500_even_through_the_rate_limiter(alice):
    with redis_down():
        response = alice.get(URL)
    assert_envelope(response, 503, "storage_unavailable")


# --- O2: OpenAPI and docs ---------------------------------------------------------------------------


def test_openapi_schema_is_openapi_3_with_the_memory_paths(db):
    response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    memory = "/v1/users/{user_id}/conversations/{conversation_id}/memory"
    assert {"get", "put"} <= set(paths[memory])
    assert "get" in paths[memory + "/revisions"]


def test_openapi_schema_is_served_as_yaml_by_default(db):
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    assert response.content.decode().startswith("openapi: 3.")


def test_interactive_docs_page_opens(db):
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


# --- O2: metrics -----------------------------------------------------------------------------------


def test_metrics_count_requests_by_route_method_and_status(alice):
    labels = {"route": MEMORY_ROUTE, "method": "GET", "status": "200"}
    before = metric("memoryhub_http_requests_total", **labels)
    alice.get(URL)
    alice.get("/v1/users/u2/conversations/c9/memory")
    assert metric("memoryhub_http_requests_total", **labels) == before + 2


def test_metrics_label_the_route_pattern_not_the_raw_path(alice):
    alice.get("/v1/users/someone-unique/conversations/c1/memory")
    text = APIClient().get("/metrics").content.decode()
    assert "memoryhub_http_requests_total" in text
    assert "someone-unique" not in text


def test_static_files_are_counted_under_their_own_route(client, db):
    labels = {"route": "static/<path>", "method": "GET", "status": "200"}
    before = metric("memoryhub_http_requests_total", **labels)
    unmatched = metric("memoryhub_http_requests_total", route="unmatched", method="GET", status="200")
    response = client.get("/static/admin/css/base.css")
    assert response.status_code == 200
    assert metric("memoryhub_http_requests_total", **labels) == before + 1
    assert metric("memoryhub_http_requests_total", route="unmatched", method="GET", status="200") == unmatched


def test_metrics_count_errors_with_their_status(alice):
    labels = {"route": MEMORY_ROUTE, "method": "GET", "status": "400"}
    before = metric("memoryhub_http_requests_total", **labels)
    alice.get("/v1/users/a:b/conversations/c1/memory")
    assert metric("memoryhub_http_requests_total", **labels) == before + 1


def test_metrics_record_latency(alice):
    before = metric("memoryhub_http_request_seconds_count", route=MEMORY_ROUTE, method="PUT")
    alice.put(URL, {"expectedRevision": 0, "memory": {}})
    assert metric("memoryhub_http_request_seconds_count", route=MEMORY_ROUTE, method="PUT") == before + 1


def test_metrics_count_conflicts(alice):
    before = metric("memoryhub_conflicts_total", kind="memory_document")
    alice.put(URL, {"expectedRevision": 0, "memory": {"v": 1}})
    assert alice.put(URL, {"expectedRevision": 0, "memory": {"v": 2}}).status_code == 409
    assert metric("memoryhub_conflicts_total", kind="memory_document") == before + 1


def test_metrics_is_prometheus_text(db):
    response = APIClient().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
