"""Deliveries never run inside the write's request, a product's endpoints are capped, an event's time is bounded."""

from __future__ import annotations

import time

import pytest

from memories.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from memoryhub import outbox
from tests.support.api import assert_envelope
from tests.support.http_server import Reply

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

MEMORY = "/v1/users/u1/conversations/c1/memory"


def test_a_write_answers_before_slow_receivers_do_and_they_are_still_delivered(alice, receiver):
    for _ in range(3):
        register(alice, receiver, ["memory.updated"])
    receiver.replies = [Reply(200, {"ok": True}, delay_seconds=1.5) for _ in range(3)]
    started = time.monotonic()
    # mh_settle=False: the test client returns when the server's response is ready (tests/conftest.py)
    response = alice.client.put(MEMORY, {"expectedRevision": 0, "memory": {"a": 1}}, format="json", mh_settle=False)
    answered = time.monotonic() - started
    assert response.status_code == 200, response.json()
    assert answered < 1.0, f"the write waited {answered:.2f} s for its deliveries"
    outbox.background_wait()
    assert len(receiver.received) == 3  # one per endpoint (each signs with its own secret)
    assert all(any(secret in item.verified_by for secret in receiver.secrets) for item in receiver.received)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_endpoints_per_product_are_capped_with_the_envelope(alice, bob, receiver, settings):
    settings.WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT = 2
    register(alice, receiver)
    register(alice, receiver)
    error = assert_envelope(
        alice.post("/v1/webhooks", {"url": receiver.url, "events": ["*"]}), 422, "webhook_limit_reached"
    )
    assert error["details"] == {"limit": 2} and "WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT" in error["message"]
    assert WebhookEndpoint.objects.filter(product=alice.product).count() == 2
    assert bob.post("/v1/webhooks", {"url": receiver.url, "events": ["*"]}).status_code == 201  # per product
    first = WebhookEndpoint.objects.filter(product=alice.product).first()
    assert alice.delete(f"/v1/webhooks/{first.pk}").status_code == 204
    assert alice.post("/v1/webhooks", {"url": receiver.url, "events": ["*"]}).status_code == 201


def test_an_events_first_attempts_share_one_deadline(alice, receiver, settings):
    settings.WEBHOOK_EVENT_DEADLINE_SECONDS = 1
    settings.WEBHOOK_TIMEOUT_MS = 5000
    for _ in range(3):
        register(alice, receiver, ["memory.updated"])
    receiver.replies = [Reply(200, {}, delay_seconds=3) for _ in range(3)]
    started = time.monotonic()
    assert alice.put(MEMORY, {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    spent = time.monotonic() - started
    assert spent < 3.0, f"one event's deliveries took {spent:.2f} s"
    attempts = list(WebhookAttempt.objects.all())
    assert len(attempts) == 3 and {a.outcome for a in attempts} == {"timeout"}
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"pending"}  # retried later
