"""Liveness and readiness: /healthz says the process is up, /readyz checks each configured dependency."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse

from .handler import envelope


def healthz(request) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_redis() -> None:
    cache.get("readyz-probe")


def _check_broker() -> None:
    from memoryhub.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def _checks() -> dict:
    checks = {"database": _check_database}
    if settings.REDIS_URL:
        checks["redis"] = _check_redis
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        checks["broker"] = _check_broker
    return checks


def readyz(request) -> JsonResponse:
    results, down = {}, []
    for name, check in _checks().items():
        try:
            check()
            results[name] = "ok"
        except Exception as exc:  # any failure of a probe means "not ready", with its reason
            results[name] = f"down: {exc.__class__.__name__}"
            down.append(name)
    if down:
        body = envelope("storage_unavailable", f"not ready: {', '.join(down)} unavailable", {"dependencies": results})
        return JsonResponse(body, status=503)
    return JsonResponse({"status": "ready", "dependencies": results})
