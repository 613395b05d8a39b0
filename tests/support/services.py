"""Which real services this run has; tests that need a missing one skip, or FAIL under MEMORYHUB_REQUIRE_SERVICES=1."""

from __future__ import annotations

import os

from django.conf import settings

REQUIRE_SERVICES = os.environ.get("MEMORYHUB_REQUIRE_SERVICES") == "1"
MARKERS = ("requires_postgres", "requires_redis", "requires_worker")


def service_missing(marker: str) -> str | None:
    """Why a test with `marker` cannot run here, or None when it can."""
    if marker == "requires_postgres" and not settings.IS_POSTGRES:
        return "needs DATABASE_URL pointing at PostgreSQL"
    if marker == "requires_redis" and not settings.REDIS_URL:
        return "needs REDIS_URL"
    if marker == "requires_worker" and settings.CELERY_TASK_ALWAYS_EAGER:
        return "needs a broker (REDIS_URL or CELERY_BROKER_URL) for a real Celery worker"
    return None
