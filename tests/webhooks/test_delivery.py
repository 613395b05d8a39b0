"""Deliveries to a real receiver on 127.0.0.1, each verified with the `standardwebhooks` library."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.webhooks.models import DELIVERED, FAILED, PENDING, WebhookAttempt, WebhookDelivery
from memories.webhooks.services.deliveries import deliveries_retry_due, retry_delay
from memoryhub import outbox, turn_jobs
from memoryhub.outbox.models import OutboxMessage
from tests.support.api import assert_envelope
from tests.support.http_server import Reply

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

MEMORY = "/v1/users/u1/conversations/c1/memory"


def write_memory(api, revision: int = 0, memory: dict | None = None) -> None:
    response = api.put(MEMORY, {"expectedRevision": revision, "memory": memory or {"mood": "calm"}})
    assert response.status_code == 200, response.json()


def sweep(now=None) -> int:
    """The beat sweep, then its attempts: outbox jobs that run on a background thread without a broker."""
    sent = deliveries_retry_due(now=now)
    outbox.background_wait()
    return sent


def later(seconds: float) -> timezone.datetime:
    return timezone.now() + timedelta(seconds=seconds)


def test_a_delivery_is_signed_per_standard_webhooks_and_carries_the_payload(alice, receiver):
    endpoint = register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    [payload] = receiver.verified()
    assert set(payload) == {"type", "id", "timestamp", "product", "user", "conversation", "data"}
    assert payload["type"] == "memory.updated" and payload["id"].startswith("msg_")
    assert (payload["product"], payload["user"], payload["conversation"]) == (alice.product.pk, "u1", "c1")
    assert payload["data"] == {"revision": 1, "actorType": "api_key"}
    headers = receiver.received[0].headers
    assert headers["webhook-id"] == payload["id"] and headers["webhook-signature"].startswith("v1,")
    assert headers["content-type"] == "application/json"
    assert endpoint["secret"] not in receiver.received[0].body.decode()
    [delivery] = alice.get(f"/v1/webhooks/{endpoint['id']}/deliveries").json()["results"]
    assert (delivery["status"], delivery["messageId"]) == ("delivered", payload["id"])
    [attempt] = delivery["attempts"]
    assert (attempt["number"], attempt["outcome"], attempt["statusCode"]) == (1, "success", 200)
    assert attempt["responseExcerpt"] == '{"ok": true}' and attempt["latencyMs"] >= 0


def test_a_host_name_is_sent_to_its_checked_address_with_its_own_host_header(alice, receiver):
    name_url = receiver.url.replace("127.0.0.1", "localhost")
    receiver.secrets.append(
        alice.post("/v1/webhooks", {"url": name_url, "events": ["memory.updated"]}).json()["secret"]
    )
    write_memory(alice)
    assert len(receiver.verified()) == 1
    assert receiver.received[0].headers["host"] == name_url.split("/")[2]


def test_a_tampered_body_or_a_wrong_secret_does_not_verify(alice, receiver):
    register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    from standardwebhooks import Webhook, WebhookVerificationError

    item = receiver.received[0]
    with pytest.raises(WebhookVerificationError):
        Webhook(receiver.secrets[0]).verify(item.body.replace(b"calm", b"wild") + b" ", item.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 32).verify(item.body, item.headers)


def test_only_subscribed_events_are_delivered(alice, receiver):
    register(alice, receiver, ["longterm.created"])
    write_memory(alice)
    assert receiver.received == [] and not WebhookDelivery.objects.exists()


def test_a_disabled_endpoint_receives_nothing(alice, receiver):
    endpoint = register(alice, receiver)
    alice.patch(f"/v1/webhooks/{endpoint['id']}", {"enabled": False})
    write_memory(alice)
    assert receiver.received == []


def test_a_pending_delivery_is_held_while_its_endpoint_is_disabled(alice, receiver):
    receiver.replies = [Reply(500, {})]
    endpoint = register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    alice.patch(f"/v1/webhooks/{endpoint['id']}", {"enabled": False})
    assert sweep(now=later(3600)) == 1
    assert len(receiver.received) == 1 and WebhookAttempt.objects.latest("number").error == "the endpoint is disabled"
    alice.patch(f"/v1/webhooks/{endpoint['id']}", {"enabled": True})
    assert sweep(now=later(7200)) == 1
    assert WebhookDelivery.objects.get().status == DELIVERED and len(receiver.verified()) == 2


def test_another_products_events_are_never_delivered(alice, bob, stub_server):
    from .support import Receiver

    alice_receiver = Receiver(stub_server)
    register(alice, alice_receiver)
    write_memory(bob)
    assert alice_receiver.received == []
    assert not WebhookDelivery.objects.exists()
    write_memory(alice)
    assert [p["product"] for p in alice_receiver.verified()] == [alice.product.pk]


def test_a_500_is_retried_with_backoff_until_it_succeeds(alice, receiver):
    receiver.replies = [Reply(500, {"error": "database down"}), Reply(503, raw=b"busy")]
    register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (PENDING, 1, 500)
    assert delivery.next_attempt_at > timezone.now() + retry_delay(1) - timedelta(seconds=5)
    assert sweep() == 0  # not due yet
    assert sweep(now=later(retry_delay(1).total_seconds() + 1)) == 1
    assert WebhookDelivery.objects.get().last_status_code == 503
    assert sweep(now=later(retry_delay(2).total_seconds() + 1)) == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == (DELIVERED, 3)
    # the same message each time: one webhook-id, a fresh signature that verifies
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1 and len(receiver.verified()) == 3
    attempts = list(WebhookAttempt.objects.values_list("number", "outcome", "status_code", "response_excerpt"))
    assert attempts == [
        (1, "http_error", 500, '{"error": "database down"}'),
        (2, "http_error", 503, "busy"),
        (3, "success", 200, '{"ok": true}'),
    ]


def test_a_timeout_is_recorded_and_retried(alice, receiver, settings):
    settings.WEBHOOK_TIMEOUT_MS = 300
    receiver.replies = [Reply(200, {"late": True}, delay_seconds=1.5)]
    register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    attempt = WebhookAttempt.objects.get()
    assert (attempt.outcome, attempt.status_code) == ("timeout", None)
    assert 250 <= attempt.latency_ms < 1400, attempt.latency_ms
    assert sweep(now=later(retry_delay(1).total_seconds() + 1)) == 1
    assert WebhookDelivery.objects.get().status == DELIVERED
    assert len(receiver.verified()) == 2


def test_a_redirect_is_not_followed(alice, receiver, stub_server):
    receiver.replies = [Reply(302, {}, headers={"location": "http://127.0.0.1:9/elsewhere"})]
    register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    attempt = WebhookAttempt.objects.get()
    assert (attempt.outcome, attempt.status_code) == ("http_error", 302)
    assert [r.path for r in stub_server.requests] == ["/hooks/memoryhub"]


def test_retries_stop_after_the_window(alice, receiver, settings):
    settings.WEBHOOK_RETRY_WINDOW_SECONDS = 3600
    receiver.replies = [Reply(500, {})] * 20
    register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    now = timezone.now()
    while WebhookDelivery.objects.get().status == PENDING:
        now += timedelta(seconds=settings.WEBHOOK_RETRY_MAX_SECONDS)
        sweep(now=now)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == FAILED and delivery.next_attempt_at is None
    # The attempts really ran within a second of the write; waits of 30 s doubling: after the 8th attempt the
    # next wait (3840 s) would end past the hour the delivery may take, so it gives up there.
    assert delivery.attempts == 8


def test_the_backoff_doubles_and_is_capped():
    assert [retry_delay(n).total_seconds() for n in (1, 2, 3, 4)] == [30, 60, 120, 240]
    assert retry_delay(30).total_seconds() == 6 * 3600


def test_redelivery_sends_the_same_message_again(alice, receiver):
    endpoint = register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    [delivery] = alice.get(f"/v1/webhooks/{endpoint['id']}/deliveries").json()["results"]
    response = alice.post(f"/v1/webhooks/{endpoint['id']}/deliveries/{delivery['id']}/redeliver")
    assert response.status_code == 202, response.json()  # accepted: the attempt runs after the response
    [delivery] = alice.get(f"/v1/webhooks/{endpoint['id']}/deliveries").json()["results"]
    assert [(a["number"], a["trigger"], a["outcome"]) for a in delivery["attempts"]] == [
        (1, "auto", "success"),
        (2, "redeliver", "success"),
    ]
    assert len(receiver.verified()) == 2
    assert receiver.received[0].headers["webhook-id"] == receiver.received[1].headers["webhook-id"]


def test_redelivery_of_another_products_delivery_is_404(alice, bob, receiver):
    endpoint = register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    delivery = WebhookDelivery.objects.get()
    assert_envelope(bob.post(f"/v1/webhooks/{endpoint['id']}/deliveries/{delivery.pk}/redeliver"), 404)
    assert len(receiver.received) == 1


def test_during_a_rotation_overlap_both_secrets_verify(alice, receiver):
    endpoint = register(alice, receiver, ["memory.updated"])
    rotated = alice.post(f"/v1/webhooks/{endpoint['id']}/rotate-secret", {"overlapSeconds": 600}).json()
    receiver.secrets.append(rotated["secret"])
    write_memory(alice)
    item = receiver.received[0]
    assert item.verified_by == [endpoint["secret"], rotated["secret"]]  # each secret alone verifies
    assert len(item.headers["webhook-signature"].split(" ")) == 2


def test_after_the_overlap_only_the_new_secret_verifies(alice, receiver):
    endpoint = register(alice, receiver, ["memory.updated"])
    rotated = alice.post(f"/v1/webhooks/{endpoint['id']}/rotate-secret", {"overlapSeconds": 0}).json()
    receiver.secrets = [endpoint["secret"], rotated["secret"]]
    write_memory(alice)
    assert receiver.received[0].verified_by == [rotated["secret"]]


def test_a_target_that_became_private_is_refused_at_delivery_time(alice, receiver, settings):
    register(alice, receiver, ["memory.updated"])  # allowed then (as a public name could be, before rebinding)
    settings.WEBHOOK_ALLOW_PRIVATE = False
    write_memory(alice)
    assert receiver.received == []
    attempt = WebhookAttempt.objects.get()
    assert attempt.outcome == "refused" and "127.0.0.1" in attempt.error
    assert WebhookDelivery.objects.get().status == PENDING  # retried later, refused again while it stays private


def test_a_name_rebound_to_a_shared_address_is_refused_at_delivery_time(alice, receiver, settings, monkeypatch):
    from memories.webhooks import targets

    register(alice, receiver, ["memory.updated"])
    settings.WEBHOOK_ALLOW_PRIVATE = False  # the name now resolves to the cloud metadata address
    monkeypatch.setattr(targets.socket, "getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("100.100.100.200", 80))])
    write_memory(alice)
    assert receiver.received == []
    attempt = WebhookAttempt.objects.get()
    assert attempt.outcome == "refused" and "100.100.100.200" in attempt.error
    assert "WEBHOOK_ALLOW_PRIVATE" in attempt.error


def test_a_rolled_back_write_delivers_nothing(alice, receiver):
    register(alice, receiver, ["memory.updated"])
    assert_envelope(alice.put(MEMORY, {"expectedRevision": 5, "memory": {}}), 409)
    assert receiver.received == [] and not OutboxMessage.objects.filter(kwargs__job="webhook_delivery").exists()


def test_a_duplicate_job_does_not_send_twice(alice, receiver):
    register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    delivery = WebhookDelivery.objects.get()
    assert (
        turn_jobs.run_turn_job.apply(
            kwargs={"job": "webhook_delivery", "webhookdelivery_pk": delivery.pk, "attempt": 0}
        ).get()
        == "skipped"
    )
    assert len(receiver.received) == 1


def test_deleting_an_endpoint_drops_its_pending_deliveries(alice, receiver):
    receiver.replies = [Reply(500, {})]
    endpoint = register(alice, receiver, ["memory.updated"])
    write_memory(alice)
    alice.delete(f"/v1/webhooks/{endpoint['id']}")
    assert not WebhookDelivery.objects.exists()
    assert sweep(now=later(3600)) == 0
