"""The admin: endpoints through the services (secret shown once), deliveries with their attempts, "redeliver"."""

from __future__ import annotations

from html import escape

import pytest

from memories.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from tests.support.admin import log_messages, staff_client

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

MEMORY = "/v1/users/u1/conversations/c1/memory"


def test_adding_an_endpoint_shows_its_secret_once(admin_client, alice, receiver):
    form = {"product": alice.product.pk, "url": receiver.url, "events": '["memory.updated"]', "enabled": "on"}
    response = admin_client.post("/admin/webhooks/webhookendpoint/add/", {**form, "description": ""}, follow=True)
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret.startswith("whsec_") and endpoint.secret in response.content.decode()
    receiver.secrets.append(endpoint.secret)
    alice.put(MEMORY, {"expectedRevision": 0, "memory": {}})
    assert receiver.types() == ["memory.updated"]
    page = admin_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert endpoint.secret not in page


def test_a_private_url_is_refused_by_the_form_without_the_setting(admin_client, alice, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    form = {"product": alice.product.pk, "url": "http://127.0.0.1/hook", "events": '["*"]', "description": ""}
    response = admin_client.post("/admin/webhooks/webhookendpoint/add/", form)
    assert response.status_code == 200 and "public addresses only" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_the_form_refuses_an_endpoint_over_the_products_limit(admin_client, alice, receiver, settings):
    settings.WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT = 1
    register(alice, receiver)
    form = {"product": alice.product.pk, "url": receiver.url, "events": '["*"]', "description": ""}
    response = admin_client.post("/admin/webhooks/webhookendpoint/add/", form)
    assert response.status_code == 200 and "WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT" in response.content.decode()
    assert WebhookEndpoint.objects.count() == 1


def test_deliveries_show_their_attempts_and_can_be_redelivered(admin_client, alice, receiver):
    register(alice, receiver, ["memory.updated"])
    alice.put(MEMORY, {"expectedRevision": 0, "memory": {}})
    delivery = WebhookDelivery.objects.get()
    listing = admin_client.get("/admin/webhooks/webhookdelivery/")
    assert listing.status_code == 200 and delivery.message_id in listing.content.decode()
    detail = admin_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/").content.decode()
    assert "success" in detail and escape('{"ok": true}') in detail  # the attempt inline, with the answer's excerpt
    action = {"action": "redeliver", "_selected_action": [delivery.pk]}
    done = admin_client.post("/admin/webhooks/webhookdelivery/", action, follow=True)
    assert "1 deliveries sent again." in done.content.decode()
    assert list(WebhookAttempt.objects.values_list("number", "trigger")) == [(1, "auto"), (2, "redeliver")]
    assert len(receiver.verified()) == 2
    assert admin_client.get("/admin/webhooks/webhookattempt/").status_code == 200


def test_rotating_from_the_admin_shows_the_new_secret(admin_client, alice, receiver):
    created = register(alice, receiver, ["memory.updated"])
    action = {"action": "rotate_secret", "_selected_action": [created["id"]]}
    done = admin_client.post("/admin/webhooks/webhookendpoint/", action, follow=True).content.decode()
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret in done and endpoint.previous_secret == created["secret"]


def test_rotating_needs_the_change_permission_and_is_logged(alice, receiver):
    created = register(alice, receiver, ["memory.updated"])
    action = {"action": "rotate_secret", "_selected_action": [created["id"]]}
    viewer = staff_client("webhooks.view_webhookendpoint")
    page = viewer.post("/admin/webhooks/webhookendpoint/", action, follow=True).content.decode()
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == created["secret"] and "whsec_" not in page and log_messages(endpoint) == []

    editor = staff_client("webhooks.view_webhookendpoint", "webhooks.change_webhookendpoint")
    done = editor.post("/admin/webhooks/webhookendpoint/", action, follow=True).content.decode()
    endpoint.refresh_from_db()
    assert endpoint.secret != created["secret"] and endpoint.secret in done
    assert log_messages(endpoint) == ["Rotated the signing secret (the old one signs too for a day)"]


@pytest.mark.parametrize("listing", ["webhookdelivery", "webhookattempt"])
def test_redelivering_needs_the_change_permission_on_deliveries_and_is_logged(alice, receiver, listing):
    register(alice, receiver, ["memory.updated"])
    alice.put(MEMORY, {"expectedRevision": 0, "memory": {}})
    delivery = WebhookDelivery.objects.get()
    selected = delivery.pk if listing == "webhookdelivery" else WebhookAttempt.objects.get().pk
    action = {"action": "redeliver", "_selected_action": [selected]}
    staff_client(f"webhooks.view_{listing}").post(f"/admin/webhooks/{listing}/", action)
    assert WebhookAttempt.objects.count() == 1 and log_messages(delivery) == []

    staff_client(f"webhooks.view_{listing}", "webhooks.change_webhookdelivery").post(
        f"/admin/webhooks/{listing}/", action
    )
    assert list(WebhookAttempt.objects.values_list("number", "trigger")) == [(1, "auto"), (2, "redeliver")]
    assert log_messages(delivery) == ["Redelivered now (same webhook-id)"]
