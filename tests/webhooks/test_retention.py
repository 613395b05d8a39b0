"""What webhook rows live how long: the retention purge, erasure of undelivered messages, the core hook's rules."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookMessage
from memories.webhooks.services.deliveries import messages_purge
from memoryhub import events
from memoryhub.outbox.models import OutboxMessage
from tests.support.http_server import Reply

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

CONV = "/v1/users/u1/conversations/c1"


def write(api, revision: int = 0) -> None:
    assert api.put(f"{CONV}/memory", {"expectedRevision": revision, "memory": {"n": revision}}).status_code == 200


def test_finished_messages_are_purged_after_the_retention_and_pending_ones_are_kept(alice, receiver, settings):
    receiver.replies = [Reply(200, {}), Reply(500, {})]
    register(alice, receiver, ["memory.updated"])
    write(alice, 0)
    write(alice, 1)
    assert messages_purge(now=timezone.now() + timedelta(hours=settings.WEBHOOK_RETENTION_HOURS - 1)) == 0
    purged = messages_purge(now=timezone.now() + timedelta(hours=settings.WEBHOOK_RETENTION_HOURS + 1))
    assert purged == 3  # the delivered message, its delivery and its attempt
    [pending] = WebhookDelivery.objects.all()
    assert pending.status == "pending" and WebhookAttempt.objects.filter(delivery=pending).count() == 1


def test_erasing_a_user_removes_their_undelivered_messages_and_jobs(alice, receiver):
    receiver.replies = [Reply(500, {})]
    register(alice, receiver, ["memory.updated"])
    write(alice)
    assert OutboxMessage.objects.filter(kwargs__job="webhook_delivery").exists()
    assert alice.delete("/v1/users/u1").status_code == 202
    assert not WebhookMessage.objects.exists() and not WebhookDelivery.objects.exists()
    assert not OutboxMessage.objects.filter(kwargs__job="webhook_delivery").exists()


def test_erasing_a_conversation_is_reported_with_the_conversation(alice, receiver):
    register(alice, receiver, ["user.erased"])
    write(alice)
    started = alice.delete(CONV)
    assert started.status_code == 202, started.json()
    [event] = receiver.verified()
    assert (event["user"], event["conversation"], event["data"]["scope"]) == ("u1", "c1", "conversation")


def test_publishing_an_unknown_type_is_a_programming_error(alice):
    with pytest.raises(ValueError, match="unknown event type"):
        events.publish(alice.product, "memory.exploded", user="u1")
