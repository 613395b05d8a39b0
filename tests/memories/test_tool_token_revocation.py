"""Tool tokens live only as long as their key, and can be revoked one by one or all at once (REST, /mcp, admin)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIRequestFactory

from memories.api.authentication import ToolTokenAuthentication
from memories.models import ApiKey, IssuedToolToken, MemoryDocument
from memories.services.products import api_key_create, api_key_revoke
from tests.mcp.support import rpc
from tests.support.api import assert_envelope, client_for

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"


def mint(api, conv: str = CONV, **body) -> dict:
    response = api.post(f"{conv}/tool-tokens", body)
    assert response.status_code == 201, response.json()
    return response.json()


def get_memory(token: str):
    return client_for(token).post("/v1/tools/call", {"name": "get_memory", "arguments": {}}, format="json")


def update_memory(token: str, revision: int = 0):
    arguments = {"expectedRevision": revision, "memory": {"k": "v"}}
    return client_for(token).post("/v1/tools/call", {"name": "update_memory", "arguments": arguments}, format="json")


def refused(response) -> None:
    error = assert_envelope(response, 401, "unauthenticated")
    assert "revoked" in error["message"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def mcp_status(token: str) -> int:
    return rpc(Client(), token, "tools/list").status_code


def test_a_token_stops_reading_and_writing_once_its_key_is_revoked(alice):
    second = api_key_create(product=alice.product, name="minter")
    token = client_for(second.plaintext).post(f"{CONV}/tool-tokens", {}, format="json").json()["token"]
    kept = mint(alice)["token"]  # minted by the product's other key
    assert get_memory(token).status_code == 200 and mcp_status(token) == 200
    api_key_revoke(api_key=second.api_key)
    refused(get_memory(token))
    refused(update_memory(token))
    refused(client_for(token).get("/v1/tools"))
    assert mcp_status(token) == 401
    assert not MemoryDocument.objects.filter(product=alice.product).exists()  # the refused write wrote nothing
    assert get_memory(kept).status_code == 200 and mcp_status(kept) == 200


def test_a_revoked_token_is_refused_and_its_siblings_still_work(alice):
    first, second = mint(alice), mint(alice)
    revoked = alice.post(f"/v1/tool-tokens/{first['id']}/revoke")
    assert revoked.status_code == 200, revoked.json()
    body = revoked.json()
    assert set(body) == {"id", "userId", "conversationId", "scenarioId", "createdAt", "expiresAt", "revokedAt"}
    assert (body["id"], body["userId"], body["conversationId"]) == (first["id"], "u1", "c1")
    assert body["revokedAt"].endswith("Z") and body["expiresAt"] == first["expiresAt"]
    refused(get_memory(first["token"]))
    assert mcp_status(first["token"]) == 401
    assert get_memory(second["token"]).status_code == 200
    again = alice.post(f"/v1/tool-tokens/{first['id']}/revoke").json()
    assert again["revokedAt"] == body["revokedAt"]  # revoking twice changes nothing


def test_revoke_all_revokes_every_live_token_of_the_product_only(alice, bob):
    mine = [mint(alice), mint(alice, "/v1/users/u2/conversations/c9")]
    theirs = mint(bob)
    response = alice.post("/v1/tool-tokens/revoke-all")
    assert response.status_code == 200 and response.json() == {"revoked": 2}
    for token in mine:
        refused(get_memory(token["token"]))
    assert get_memory(theirs["token"]).status_code == 200
    assert alice.post("/v1/tool-tokens/revoke-all").json() == {"revoked": 0}
    assert mint(alice) and get_memory(mint(alice)["token"]).status_code == 200  # new tokens work again


def test_another_products_token_is_not_found_and_stays_valid(alice, bob):
    theirs = mint(bob)
    assert_envelope(alice.post(f"/v1/tool-tokens/{theirs['id']}/revoke"), 404, "not_found")
    assert_envelope(alice.post("/v1/tool-tokens/ttk_nope/revoke"), 404, "not_found")
    assert get_memory(theirs["token"]).status_code == 200


def test_a_tool_token_cannot_revoke_tokens(alice):
    token = mint(alice)
    assert_envelope(client_for(token["token"]).post(f"/v1/tool-tokens/{token['id']}/revoke"), 401)
    assert_envelope(client_for(token["token"]).post("/v1/tool-tokens/revoke-all"), 401)
    assert get_memory(token["token"]).status_code == 200


def test_a_token_costs_one_query_to_authenticate(alice):
    token = mint(alice)["token"]
    request = APIRequestFactory().get("/v1/tools", HTTP_AUTHORIZATION=f"Bearer {token}")
    with CaptureQueriesContext(connection) as queries:
        client, _claims = ToolTokenAuthentication().authenticate(request)
    assert len(queries) == 1 and client.product == alice.product


def test_the_admin_lists_token_states_and_revokes_a_products_tokens(admin_client, alice):
    live, gone = mint(alice), mint(alice)
    alice.post(f"/v1/tool-tokens/{gone['id']}/revoke")
    listing = admin_client.get(reverse("admin:memories_issuedtooltoken_changelist"))
    assert listing.status_code == 200
    page = listing.content.decode()
    assert live["id"] in page and gone["id"] in page and "revoked" in page and "active" in page
    response = admin_client.post(
        reverse("admin:memories_product_changelist"),
        {"action": "revoke_tool_tokens", "_selected_action": [alice.product.pk]},
        follow=True,
    )
    assert "Revoked 1 tool token(s)." in response.content.decode()
    refused(get_memory(live["token"]))
    assert IssuedToolToken.objects.filter(product=alice.product, revoked_at__isnull=True).count() == 0


def test_the_admin_revoke_action_revokes_the_selected_tokens(admin_client, alice):
    token = mint(alice)
    response = admin_client.post(
        reverse("admin:memories_issuedtooltoken_changelist"),
        {"action": "revoke", "_selected_action": [token["id"]]},
        follow=True,
    )
    assert "Revoked 1 tool token(s)." in response.content.decode()
    refused(get_memory(token["token"]))


def test_a_key_revoked_in_the_admin_shows_its_tokens_as_key_revoked(admin_client, alice):
    token = mint(alice)
    api_key = ApiKey.objects.get(product=alice.product)
    admin_client.post(
        reverse("admin:memories_apikey_changelist"), {"action": "revoke", "_selected_action": [api_key.pk]}
    )
    refused(get_memory(token["token"]))
    page = admin_client.get(reverse("admin:memories_issuedtooltoken_changelist")).content.decode()
    assert "key revoked" in page
