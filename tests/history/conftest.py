"""Fixtures of the history tests: message vectors are background work, done by a real worker with a broker."""

from __future__ import annotations

import pytest
from django.conf import settings


@pytest.fixture(autouse=True)
def embedding_worker(request):
    """With a broker (the real-services run) a real Celery worker embeds the messages; without, threads do."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        yield None
        return
    worker = request.getfixturevalue("celery_worker_process")
    from memoryhub.celery import app

    # cache.clear() is a FLUSHDB of the Redis that is also the broker: declare the queues again.
    with app.connection_for_write() as connection:
        for queue in app.amqp.queues.values():
            queue(connection.default_channel).declare()
    yield worker


@pytest.fixture(autouse=True)
def no_resident_history():
    """Each test starts with no user's history held in this process (memories/history/resident.py)."""
    from memories.history import resident

    resident.clear()
    yield
    resident.clear()


@pytest.fixture
def sql_path(monkeypatch):
    """History search through its SQL statements on PostgreSQL: no user is small enough to be held resident."""
    from memories.history import resident

    monkeypatch.setattr(resident, "MAX_ROWS", 0)
