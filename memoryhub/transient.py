"""Errors a background task retries instead of failing: the database or the cache is briefly away.

A PostgreSQL restart, a dropped connection, a deadlock the server broke, a Redis blip: the task's
transaction was rolled back, so running it again is safe (every task is idempotent). Celery retries it
(`autoretry_for=TRANSIENT_ERRORS`, with backoff); only when its retries are spent does the task report a
failure — which also acknowledges its outbox row, so a task that failed on a blip would otherwise be lost.
"""

from __future__ import annotations

import redis.exceptions
from django.db import InterfaceError, OperationalError
from django_redis.exceptions import ConnectionInterrupted

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionInterrupted,
)
