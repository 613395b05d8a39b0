"""Model-facing memory tools through HTTP (T4, TOOL1–TOOL3): tokens, definitions, calls and their refusals."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import signing
from django.utils import timezone
from rest_framework.test import APIClient

from memories.services import tools as tool_service
from tests.support.api import assert_envelope, client_for

CONV = "/v1/users/u1/conversations/c1"


def mint(api, conv: str = CONV, **body) -> dict:
    response = api.post(f"{conv}/tool-tokens", body)
    assert response.status_code == 201, response.json()
    return response.json()


def call(token: str, name: str, arguments: object = None, **extra):
    body = {"name": name, "arguments": {} if arguments is None else arguments, **extra}
    return client_for(token).post("/v1/tools/call", body, format="json")


def tool_names(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [tool["function"]["name"] for tool in response.json()["tools"]]


def parse_utc(text: str) -> dt.datetime:
    assert text.endswith("Z"), text
    return dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=dt.UTC)


def make_scenario(api, slug: str, **fields) -> None:
    assert api.post("/v1/scenarios", {"id": slug, "name": slug, **fields}).status_code == 201


# --- tokens --------------------------------------------------------------------------------------------


def test_a_token_expires_after_15_minutes_by_default_in_iso_utc(alice):
    before = timezone.now()
    body = mint(alice)
    assert set(body) == {"id", "token", "expiresAt"} and body["token"].startswith("mht_")
    assert body["id"].startswith("ttk_")
    expires = parse_utc(body["expiresAt"])
    assert dt.timedelta(minutes=14, seconds=58) <= expires - before <= dt.timedelta(minutes=15, seconds=1)


def test_a_token_with_a_ttl(alice):
    before = timezone.now()
    expires = parse_utc(mint(alice, ttlSeconds=60)["expiresAt"])
    assert dt.timedelta(seconds=58) <= expires - before <= dt.timedelta(seconds=61)


@pytest.mark.parametrize(
    "body", [{"ttlSeconds": 0}, {"ttlSeconds": 86401}, {"ttlSeconds": "60"}, {"userId": "u2"}, {"scenarioId": 5}, [1]]
)
def test_a_bad_token_request_is_400(alice, body):
    assert_envelope(alice.post(f"{CONV}/tool-tokens", body), 400, "invalid_request")


def test_a_token_for_an_unknown_or_foreign_scenario_is_404(alice, bob):
    make_scenario(alice, "mine")
    assert_envelope(alice.post(f"{CONV}/tool-tokens", {"scenarioId": "nope"}), 404, "not_found")
    assert_envelope(bob.post(f"{CONV}/tool-tokens", {"scenarioId": "mine"}), 404, "not_found")


def test_an_expired_token_is_401(alice, monkeypatch):
    token = mint(alice)["token"]
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now + dt.timedelta(minutes=14))
    assert call(token, "get_memory").status_code == 200
    monkeypatch.setattr(timezone, "now", lambda: now + dt.timedelta(minutes=15, seconds=1))
    assert_envelope(call(token, "get_memory"), 401, "unauthenticated")
    assert_envelope(client_for(token).get("/v1/tools"), 401, "unauthenticated")


def test_a_one_second_token_expires(alice):
    import time

    token = mint(alice, ttlSeconds=1)["token"]
    time.sleep(1.1)
    assert_envelope(call(token, "get_memory"), 401, "unauthenticated")


def test_a_forged_or_tampered_token_is_401(alice):
    token = mint(alice)["token"]
    head, signature = token.rsplit(":", 1)
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    claims = signing.loads(token[len("mht_") :], salt="memoryhub.tool-token")
    other_user = "mht_" + signing.dumps({**claims, "u": "u2"}, salt="memoryhub.tool-token", key="not-the-secret")
    for bad in (f"{head}:{flipped}", other_user, "mht_", "mht_garbage", token + "x"):
        assert_envelope(call(bad, "get_memory"), 401, "unauthenticated")


def test_a_tool_token_cannot_call_product_endpoints(alice):
    token = mint(alice)["token"]
    client = client_for(token)
    assert client.get(f"{CONV}/memory").status_code in (401, 403)
    assert client.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"a": 1}}, format="json").status_code in (
        401,
        403,
    )
    assert client.post(f"{CONV}/tool-tokens", {}, format="json").status_code in (401, 403)
    assert client.get("/v1/scenarios").status_code in (401, 403)
    assert alice.get(f"{CONV}/memory").json() == {"revision": 0, "memory": None}


def test_a_product_key_cannot_call_tools_and_is_told_to_mint_a_tool_token(alice):
    response = alice.post("/v1/tools/call", {"name": "get_memory", "arguments": {}})
    error = assert_envelope(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "tool token" in error["message"] and "not a product API key" in error["message"]
    assert "tool-tokens" in error["message"]
    assert_envelope(APIClient().post("/v1/tools/call", {"name": "get_memory", "arguments": {}}, format="json"), 401)


# --- definitions ---------------------------------------------------------------------------------------


def test_tools_are_listed_as_strict_function_definitions(alice):
    tools = alice.get("/v1/tools").json()["tools"]
    assert [t["function"]["name"] for t in tools] == ["get_memory", "update_memory"]
    assert all(t["type"] == "function" and t["function"]["parameters"]["additionalProperties"] is False for t in tools)
    assert tools[0]["function"]["parameters"]["properties"] == {}
    update = tools[1]["function"]["parameters"]
    assert set(update["properties"]) == {"expectedRevision", "memory"} and set(update["required"]) == {
        "expectedRevision",
        "memory",
    }


def test_a_tool_token_lists_what_it_may_call(alice):
    make_scenario(alice, "open", toolUpdates=True)
    make_scenario(alice, "closed", toolUpdates=False)
    assert tool_names(client_for(mint(alice)["token"]).get("/v1/tools")) == ["get_memory", "update_memory"]
    assert tool_names(client_for(mint(alice, scenarioId="open")["token"]).get("/v1/tools")) == [
        "get_memory",
        "update_memory",
    ]
    assert tool_names(client_for(mint(alice, scenarioId="closed")["token"]).get("/v1/tools")) == ["get_memory"]


def test_tools_need_authentication(db):
    assert_envelope(APIClient().get("/v1/tools"), 401, "unauthenticated")


# --- calls ---------------------------------------------------------------------------------------------


def test_get_and_update_memory_through_the_tool(alice):
    token = mint(alice)["token"]
    assert call(token, "get_memory").json() == {"details": {"revision": 0, "memory": None}}
    response = call(token, "update_memory", {"expectedRevision": 0, "memory": {"keyHolder": "守卫"}})
    assert response.status_code == 200 and response.json() == {"details": {"revision": 1}}
    assert call(token, "get_memory").json() == {"details": {"revision": 1, "memory": {"keyHolder": "守卫"}}}
    assert alice.get(f"{CONV}/memory").json() == {"revision": 1, "memory": {"keyHolder": "守卫"}}
    (revision,) = alice.get(f"{CONV}/memory/revisions").json()["results"]
    assert revision["actor"]["type"] == "tool"


def test_the_token_alone_fixes_user_conversation_and_product(alice, bob):
    alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"who": "u1"}})
    alice.put("/v1/users/u2/conversations/c1/memory", {"expectedRevision": 0, "memory": {"who": "u2"}})
    u2 = mint(alice, conv="/v1/users/u2/conversations/c1")["token"]
    assert call(u2, "get_memory").json()["details"]["memory"] == {"who": "u2"}
    bobs = mint(bob)["token"]  # the same user and conversation names in another product
    assert call(bobs, "get_memory").json() == {"details": {"revision": 0, "memory": None}}
    assert call(bobs, "update_memory", {"expectedRevision": 0, "memory": {"who": "bob"}}).status_code == 200
    assert alice.get(f"{CONV}/memory").json()["memory"] == {"who": "u1"}


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("update_memory", {"expectedRevision": 0, "memory": {}, "userId": "x"}),
        ("update_memory", {"expectedRevision": 0, "memory": {}, "conversationId": "c2"}),
        ("update_memory", {"expectedRevision": 0, "memory": {}, "productId": 1}),
        ("get_memory", {"userId": "u2"}),
        ("get_memory", {"conversationId": "c2"}),
    ],
)
def test_arguments_naming_an_identity_are_refused(alice, name, arguments):
    alice.put("/v1/users/x/conversations/c1/memory", {"expectedRevision": 0, "memory": {"other": True}})
    assert_envelope(call(mint(alice)["token"], name, arguments), 400, "invalid_request")
    assert alice.get(f"{CONV}/memory").json()["revision"] == 0
    assert alice.get("/v1/users/x/conversations/c1/memory").json()["revision"] == 1


def test_a_call_body_naming_an_identity_is_refused(alice):
    response = call(mint(alice)["token"], "get_memory", {}, userId="u2")
    assert_envelope(response, 400, "invalid_request")


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("delete_memory", {}),
        ("update_memory", {"memory": {}}),
        ("update_memory", {"expectedRevision": "0", "memory": {}}),
        ("update_memory", {"expectedRevision": -1, "memory": {}}),
        ("update_memory", {"expectedRevision": 0, "memory": []}),
        ("update_memory", {"expectedRevision": 0, "memory": None}),
        ("get_memory", []),
    ],
)
def test_bad_calls_are_400_and_change_nothing(alice, name, arguments):
    assert_envelope(call(mint(alice)["token"], name, arguments), 400)
    assert alice.get(f"{CONV}/memory").json()["revision"] == 0


def test_a_conflict_tells_the_model_to_re_read_and_changes_nothing(alice):
    token = mint(alice)["token"]
    call(token, "update_memory", {"expectedRevision": 0, "memory": {"v": 1}})
    error = assert_envelope(
        call(token, "update_memory", {"expectedRevision": 0, "memory": {"v": 2}}), 409, "revision_conflict"
    )
    assert error["details"] == {"currentRevision": 1}
    assert "get_memory" in error["message"] and "again" in error["message"]
    assert alice.get(f"{CONV}/memory").json() == {"revision": 1, "memory": {"v": 1}}


def test_a_scenario_without_tool_updates_forbids_update_memory(alice):
    make_scenario(alice, "closed", toolUpdates=False)
    token = mint(alice, scenarioId="closed")["token"]
    assert call(token, "get_memory").status_code == 200
    assert_envelope(call(token, "update_memory", {"expectedRevision": 0, "memory": {"a": 1}}), 403, "forbidden")
    assert alice.get(f"{CONV}/memory").json() == {"revision": 0, "memory": None}


def test_withdrawing_tool_updates_applies_to_tokens_already_minted(alice):
    make_scenario(alice, "s", toolUpdates=True)
    token = mint(alice, scenarioId="s")["token"]
    alice.patch("/v1/scenarios/s", {"toolUpdates": False})
    assert_envelope(call(token, "update_memory", {"expectedRevision": 0, "memory": {"a": 1}}), 403, "forbidden")


def test_deleting_the_scenario_does_not_grant_update_memory(alice):
    make_scenario(alice, "closed", toolUpdates=False)
    token = mint(alice, scenarioId="closed")["token"]
    assert alice.delete("/v1/scenarios/closed").status_code == 204
    assert "update_memory" not in tool_names(client_for(token).get("/v1/tools"))
    response = call(token, "update_memory", {"expectedRevision": 0, "memory": {"a": 1}})
    assert response.status_code in (403, 404), response.json()
    assert alice.get(f"{CONV}/memory").json()["revision"] == 0


def test_the_scenario_memory_schema_refuses_a_tool_write_with_422(alice):
    schema = {"type": "object", "required": ["scene"], "properties": {"scene": {"type": "string"}}}
    make_scenario(alice, "strict", memorySchema=schema)
    token = mint(alice, scenarioId="strict")["token"]
    error = assert_envelope(
        call(token, "update_memory", {"expectedRevision": 0, "memory": {"keyHolder": "x"}}), 422, "rejected_by_policy"
    )
    # the refusal names the schema that refused it: the scenario's, not the product's
    assert error["message"].startswith("memory fails the scenario's JSON Schema at /: "), error["message"]
    assert alice.get(f"{CONV}/memory").json()["revision"] == 0
    assert call(token, "update_memory", {"expectedRevision": 0, "memory": {"scene": "gate"}}).status_code == 200
    # a token without the scenario is held only to the product's schema (none here)
    assert (
        call(mint(alice)["token"], "update_memory", {"expectedRevision": 1, "memory": {"keyHolder": "x"}}).status_code
        == 200
    )


def test_the_product_schema_applies_to_tool_writes(alice):
    alice.product.memory_schema = {"type": "object", "required": ["scene"]}
    alice.product.save()
    token = mint(alice)["token"]
    error = assert_envelope(
        call(token, "update_memory", {"expectedRevision": 0, "memory": {"a": 1}}), 422, "rejected_by_policy"
    )
    assert error["message"].startswith("memory fails the product's JSON Schema at /: "), error["message"]


def test_a_token_whose_product_is_gone_is_401(alice):
    token = mint(alice)["token"]
    alice.product.delete()
    assert_envelope(call(token, "get_memory"), 401, "unauthenticated")


def test_tokens_are_signed_not_stored(alice):
    claims = tool_service.tool_token_read(mint(alice, ttlSeconds=120)["token"])
    assert (claims.product_id, claims.user_id, claims.conversation_id, claims.scenario_slug) == (
        alice.product.pk,
        "u1",
        "c1",
        None,
    )
