"""/v1/webhooks: registration, the secret shown once, changes, rotation, validation, isolation between products."""

from __future__ import annotations

import base64

import pytest

from memories.webhooks.models import WebhookEndpoint
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hooks"


def create(api, **body) -> dict:
    response = api.post("/v1/webhooks", {"url": URL, "events": ["turn.completed"], **body})
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_answers_the_endpoint_with_a_standard_webhooks_secret_shown_once(alice):
    created = create(alice, description="CRM sync")
    assert set(created) == {
        *("id", "url", "description", "events", "enabled", "previousSecretExpiresAt", "createdAt", "updatedAt"),
        "secret",
    }
    assert created["secret"].startswith("whsec_") and len(base64.b64decode(created["secret"][6:])) == 24
    assert (created["url"], created["events"], created["enabled"]) == (URL, ["turn.completed"], True)
    shown = alice.get(f"/v1/webhooks/{created['id']}").json()
    assert "secret" not in shown and shown == {k: v for k, v in created.items() if k != "secret"}
    assert alice.get("/v1/webhooks").json() == {"results": [shown], "next": None}


def test_every_secret_is_different(alice):
    assert create(alice)["secret"] != create(alice)["secret"]


def test_patch_changes_only_the_fields_sent(alice):
    created = create(alice)
    patched = alice.patch(f"/v1/webhooks/{created['id']}", {"enabled": False, "events": ["*"]})
    assert patched.status_code == 200, patched.json()
    assert (patched.json()["enabled"], patched.json()["events"], patched.json()["url"]) == (False, ["*"], URL)


def test_delete_removes_the_endpoint(alice):
    created = create(alice)
    assert alice.delete(f"/v1/webhooks/{created['id']}").status_code == 204
    assert_envelope(alice.get(f"/v1/webhooks/{created['id']}"), 404, "not_found")
    assert not WebhookEndpoint.objects.exists()


def test_rotation_shows_a_new_secret_once_and_the_overlap_end(alice):
    created = create(alice)
    rotated = alice.post(f"/v1/webhooks/{created['id']}/rotate-secret", {"overlapSeconds": 3600}).json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != created["secret"]
    assert rotated["previousSecretExpiresAt"].endswith("Z")
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.secret, endpoint.previous_secret) == (rotated["secret"], created["secret"])
    at_once = alice.post(f"/v1/webhooks/{created['id']}/rotate-secret", {"overlapSeconds": 0}).json()
    assert at_once["previousSecretExpiresAt"] is None
    assert WebhookEndpoint.objects.get().previous_secret == ""


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"url": "ftp://example.com/x"}, 400, "url"),
        ({"url": "http://user:pw@example.com/x"}, 400, "url"),
        ({"url": 5}, 400, None),
        ({"events": []}, 400, None),
        ({"events": ["turn.completed", "no.such"]}, 400, "events"),
        ({"enabled": "yes"}, 400, None),
        ({"secret": "whsec_mine"}, 400, None),
    ],
)
def test_invalid_bodies_are_400_and_store_nothing(alice, body, status, field):
    error = assert_envelope(alice.post("/v1/webhooks", {"url": URL, "events": ["*"], **body}), status)
    if field:
        assert error["details"]["field"] == field
    assert not WebhookEndpoint.objects.exists()


def test_overlap_out_of_range_is_400(alice):
    created = create(alice)
    assert_envelope(alice.post(f"/v1/webhooks/{created['id']}/rotate-secret", {"overlapSeconds": -1}), 400)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "https://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://0.0.0.0/hook",
        "http://100.100.100.200/latest/meta-data",
        "http://100.64.0.1/hook",
        "http://[fec0::1]/hook",
        "http://[2002:7f00:1::]/hook",
        "http://[64:ff9b::a9fe:a9fe]/hook",
        "http://[::ffff:100.100.100.200]/hook",
    ],
)
def test_a_private_target_is_refused_without_the_setting(alice, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    error = assert_envelope(alice.post("/v1/webhooks", {"url": url, "events": ["*"]}), 422, "webhook_target_refused")
    assert error["details"]["field"] == "url"
    assert not WebhookEndpoint.objects.exists()


def test_a_patch_to_a_private_target_is_refused_without_the_setting(alice, settings):
    created = create(alice)
    settings.WEBHOOK_ALLOW_PRIVATE = False
    assert_envelope(alice.patch(f"/v1/webhooks/{created['id']}", {"url": URL}), 422, "webhook_target_refused")


def test_another_products_webhook_is_404_everywhere(alice, bob):
    created = create(alice)
    base = f"/v1/webhooks/{created['id']}"
    assert_envelope(bob.get(base), 404, "not_found")
    assert_envelope(bob.patch(base, {"enabled": False}), 404, "not_found")
    assert_envelope(bob.delete(base), 404, "not_found")
    assert_envelope(bob.post(f"{base}/rotate-secret", {}), 404, "not_found")
    assert_envelope(bob.get(f"{base}/deliveries"), 404, "not_found")
    assert bob.get("/v1/webhooks").json() == {"results": [], "next": None}
    assert WebhookEndpoint.objects.get().enabled is True


def test_the_list_is_paged(alice):
    ids = [create(alice)["id"] for _ in range(3)]
    first = alice.get("/v1/webhooks", data={"limit": 2}).json()
    second = alice.get("/v1/webhooks", data={"limit": 2, "cursor": first["next"]}).json()
    assert [w["id"] for w in first["results"] + second["results"]] == ids and second["next"] is None
