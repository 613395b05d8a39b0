"""Webhook tests: receivers on 127.0.0.1 (so private targets are allowed here), tasks in-process by default."""

from __future__ import annotations

import pytest

from memoryhub.celery import app as celery_app

from .support import Receiver


@pytest.fixture(autouse=True)
def _webhook_settings(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receivers listen on 127.0.0.1
    settings.WEBHOOK_TIMEOUT_MS = 2000


@pytest.fixture
def in_process_celery(monkeypatch):
    """Run tasks in-process at enqueue time (on commit), whatever broker is configured."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)


@pytest.fixture
def receiver(stub_server) -> Receiver:
    return Receiver(stub_server)
