"""Product.webhook_endpoints_enabled: exact through every way an endpoint changes, so a product without endpoints
pays no webhook query on its writes, and a product with endpoints gets the write and its event in one transaction."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import MemoryDocument, Product
from memories.services.documents import memory_document_replace
from memories.webhooks.models import WebhookEndpoint, WebhookMessage
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

MEMORY = "/v1/users/u1/conversations/c1/memory"


def _count(api) -> int:
    return Product.objects.get(pk=api.product.pk).webhook_endpoints_enabled


def test_the_counter_follows_create_disable_enable_and_delete(alice, bob, receiver):
    first = register(alice, receiver)
    register(alice, receiver, ["memory.updated"])
    assert (_count(alice), _count(bob)) == (2, 0)
    alice.patch(f"/v1/webhooks/{first['id']}", {"enabled": False})
    assert _count(alice) == 1
    alice.patch(f"/v1/webhooks/{first['id']}", {"enabled": True})
    assert _count(alice) == 2
    alice.delete(f"/v1/webhooks/{first['id']}")
    assert _count(alice) == 1
    WebhookEndpoint.objects.filter(product_id=alice.product.pk).delete()  # a bulk delete, as the admin's action
    assert _count(alice) == 0


def test_without_endpoints_a_memory_write_asks_nothing_of_webhooks(alice):
    with CaptureQueriesContext(connection) as queries:
        assert alice.put(MEMORY, {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    assert not [q["sql"] for q in queries if "webhooks_" in q["sql"]]
    assert not WebhookMessage.objects.exists()


def test_with_endpoints_the_revision_and_its_event_commit_together(alice, receiver, monkeypatch):
    register(alice, receiver, ["memory.updated"])
    product = Product.objects.get(pk=alice.product.pk)
    address = ConversationAddress(product=product, user_id="u1", conversation_id="c1")

    def fail(*args, **kwargs):
        raise RuntimeError("the event could not be written")

    monkeypatch.setattr("memories.webhooks.services.deliveries.message_emit", fail)
    with pytest.raises(RuntimeError):
        memory_document_replace(address=address, expected_revision=0, memory={"a": 1}, actor=Actor.operator("test"))
    assert not MemoryDocument.objects.filter(product=product).exists()  # the write rolled back with its event
    monkeypatch.undo()
    assert (
        memory_document_replace(address=address, expected_revision=0, memory={"a": 1}, actor=Actor.operator("test"))
        == 1
    )
    assert WebhookMessage.objects.filter(product_id=product.pk, type="memory.updated").count() == 1
