"""Deliveries by the real Celery worker: the outbox sends the first attempt, `celery beat`'s sweep the retry."""

from __future__ import annotations

import pytest

from memories.webhooks.models import DELIVERED, WebhookAttempt, WebhookDelivery
from tests.support.http_server import Reply
from tests.support.processes import wait_for

from .support import register

pytestmark = [pytest.mark.requires_worker, pytest.mark.django_db(transaction=True)]


def test_the_worker_delivers_and_beat_retries_after_a_500(alice, receiver, celery_worker_process):
    # The suite's worker and beat run with WEBHOOK_RETRY_BASE_SECONDS=1 and WEBHOOK_SWEEP_SECONDS=2.
    receiver.replies = [Reply(500, {"error": "not yet"})]
    register(alice, receiver, ["memory.updated"])
    response = alice.put("/v1/users/u1/conversations/c1/memory", {"expectedRevision": 0, "memory": {"a": 1}})
    assert response.status_code == 200
    wait_for(
        lambda: WebhookDelivery.objects.filter(status=DELIVERED).exists(),
        timeout=60,
        message="the worker to deliver after one retry",
    )
    assert [p["data"] for p in receiver.verified()] == [{"revision": 1, "actorType": "api_key"}] * 2
    outcomes = list(WebhookAttempt.objects.order_by("number").values_list("number", "outcome", "status_code"))
    assert outcomes == [(1, "http_error", 500), (2, "success", 200)]
