"""/mcp in-process: authentication, the transport's rules, and every tool's success and errors over JSON-RPC.

The clients no one here wrote (the official SDK, the conformance harness) run against a live server in
test_sdk_client.py and test_conformance.py; these tests pin memoryhub's own contract quickly, on SQLite too.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.core import signing
from django.test import Client
from django.utils import timezone
from jsonschema import Draft202012Validator

from memories.services.tools import TOKEN_PREFIX
from tests.mcp.support import MODERN, READ_TOOLS, WRITE_TOOLS, call, mint, rpc, seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def client() -> Client:
    return Client()


@pytest.fixture
def world(alice):
    return seed(alice)


def tool_names(client, token) -> set[str]:
    response = rpc(client, token, "tools/list")
    assert response.status_code == 200, response.content
    return {tool["name"] for tool in response.json()["result"]["tools"]}


def structured(result: dict) -> dict:
    assert result["isError"] is False, result
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]


def tool_error(result: dict) -> str:
    assert result["isError"] is True, result
    assert "structuredContent" not in result
    return result["content"][0]["text"]


# --- authentication ---------------------------------------------------------------------------------


def test_no_credential_is_401_with_a_bearer_challenge(client):
    response = rpc(client, None, "tools/list")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="memoryhub"'
    assert response.json()["error"]["code"] == "unauthenticated"


def test_a_product_api_key_is_refused(client, alice):
    response = rpc(client, alice.key, "tools/list")
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_expired_forged_and_deleted_product_tokens_are_401(client, alice, bob):
    expired_payload = {"p": alice.product.pk, "u": "u1", "c": "c1", "s": None, "j": "x", "e": 1}
    expired = TOKEN_PREFIX + signing.dumps(expired_payload, salt="memoryhub.tool-token", compress=True)
    forged = TOKEN_PREFIX + signing.dumps(
        {**expired_payload, "e": int((timezone.now() + timedelta(hours=1)).timestamp())}, key="another-deployment"
    )
    orphan = mint(bob)
    bob.product.delete()
    for token in (expired, forged, orphan, "mht_garbage"):
        response = rpc(client, token, "tools/list")
        assert response.status_code == 401, token
        assert response["WWW-Authenticate"].startswith('Bearer realm="memoryhub", error="invalid_token"')


def test_a_token_over_the_per_key_rate_gets_429_with_retry_after(client, alice, monkeypatch):
    from memoryhub.api.throttling import PerKeyRateThrottle

    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "3/min"})
    token, other = mint(alice), mint(alice)
    assert [rpc(client, token, "tools/list").status_code for _ in range(3)] == [200, 200, 200]
    refused = rpc(client, token, "tools/list")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["error"]["code"] == "rate_limited"
    assert rpc(client, other, "tools/list").status_code == 200  # per token, as per key on the REST API


@contextmanager
def redis_down_context():
    """The cache on a Redis that refuses connections (C3): a clear 503, never a 500 or a silent fallback."""
    from django.test import override_settings

    from tests.support.processes import closed_port

    url = f"redis://127.0.0.1:{closed_port()}/0"
    options = {"CLIENT_CLASS": "django_redis.client.DefaultClient", "SOCKET_CONNECT_TIMEOUT": 0.5}
    caches = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": url, "OPTIONS": options}}
    with override_settings(CACHES=caches, REDIS_URL=url, DJANGO_REDIS_IGNORE_EXCEPTIONS=False):
        yield


def test_redis_down_is_503_before_a_call_and_a_tool_error_within_one(client, alice, monkeypatch):
    from memoryhub.api.throttling import PerKeyRateThrottle

    token = mint(alice)
    with redis_down_context():
        refused = rpc(client, token, "tools/list")
        assert refused.status_code == 503
        assert refused.json()["error"] == {
            "code": "storage_unavailable",
            "message": "the cache (Redis) is unavailable",
            "details": {"dependency": "redis"},
        }
        monkeypatch.setattr(PerKeyRateThrottle, "allow_request", lambda self, request, view: True)
        tables = tool_error(call(client, token, "get_tables"))
        assert tables.startswith('storage_unavailable: the cache (Redis) is unavailable {"dependency": "redis"}')


# --- transport ----------------------------------------------------------------------------------------


def test_get_and_delete_are_405_in_stateless_mode(client, alice):
    token = mint(alice)
    for method in (client.get, client.delete):
        response = method("/mcp", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 405
        assert response["Allow"] == "POST"


def test_a_session_id_is_never_issued_and_one_sent_is_ignored(client, alice):
    token = mint(alice)
    listed = rpc(client, token, "tools/list")
    assert "Mcp-Session-Id" not in listed
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    headers = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": "made-up", "MCP-Protocol-Version": "2025-06-18"}
    stale = client.post("/mcp", json.dumps(body), content_type="application/json", headers=headers)
    assert stale.status_code == 200 and stale.json()["result"]["tools"]


def test_discover_names_2026_07_28_and_the_stateless_2025_revisions(client, alice):
    response = rpc(client, mint(alice), "server/discover")
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["supportedVersions"][0] == MODERN
    assert {"2025-11-25", "2025-06-18", "2025-03-26"} <= set(result["supportedVersions"])
    assert result["capabilities"] == {"tools": {}}


def test_a_2025_client_initializes_without_a_session(client, alice):
    token = mint(alice)
    response = rpc(client, token, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}, version=None)
    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"
    listed = rpc(client, token, "tools/list", version="2025-11-25")
    assert {t["name"] for t in listed.json()["result"]["tools"]} == READ_TOOLS - {"get_state"} | {"update_memory"}


def test_protocol_headers_are_checked_against_the_body(client, alice):
    token = mint(alice)
    unsupported = rpc(client, token, "tools/list", version="2099-01-01")
    assert unsupported.status_code == 400
    assert unsupported.json()["error"]["data"]["requested"] == "2099-01-01"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {}}}
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
    mismatch = client.post("/mcp", json.dumps(body), content_type="application/json", headers=headers)
    assert mismatch.status_code == 400


def test_malformed_json_is_a_parse_error(client, alice):
    headers = {"Authorization": f"Bearer {mint(alice)}"}
    response = client.post("/mcp", "{not json", content_type="application/json", headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


# --- tools/list -------------------------------------------------------------------------------------------


def test_every_tool_has_a_closed_input_schema_without_identity_and_an_output_schema(client, alice, world):
    response = rpc(client, mint(alice, scenarioId="tavern"), "tools/list")
    tools = response.json()["result"]["tools"]
    assert {t["name"] for t in tools} == READ_TOOLS | WRITE_TOOLS
    for tool in tools:
        schema = tool["inputSchema"]
        Draft202012Validator.check_schema(schema)
        Draft202012Validator.check_schema(tool["outputSchema"])
        assert schema["additionalProperties"] is False, tool["name"]
        named = json.dumps(schema).lower()
        assert not any(word in named for word in ("userid", "conversationid", "product", "tenant")), tool["name"]
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] in READ_TOOLS)


def test_tool_updates_false_withholds_the_writing_tools_and_refuses_them(client, alice, world):
    token = mint(alice, scenarioId="sealed")
    assert tool_names(client, token) == READ_TOOLS
    for name, arguments in (("update_memory", {"expectedRevision": 1, "memory": {}}), ("propose_state", {})):
        response = rpc(client, token, "tools/call", {"name": name, "arguments": arguments})
        assert response.json()["error"]["code"] == -32602, name
    assert call(client, token, "get_memory")["structuredContent"]["revision"] == 1


def test_state_tools_need_a_scenario_with_a_state_section(client, alice, world):
    assert tool_names(client, mint(alice)) == (READ_TOOLS | WRITE_TOOLS) - {"get_state", "propose_state"}


# --- the tools ----------------------------------------------------------------------------------------------


def test_get_and_update_memory_compare_and_set(client, alice, world):
    token = mint(alice)
    assert structured(call(client, token, "get_memory")) == {"revision": 1, "memory": {"mood": "calm", "user": "u1"}}
    assert structured(call(client, token, "update_memory", {"expectedRevision": 1, "memory": {"mood": "glad"}})) == {
        "revision": 2
    }
    stale = tool_error(call(client, token, "update_memory", {"expectedRevision": 1, "memory": {"mood": "sad"}}))
    assert stale.startswith("revision_conflict: memory changed (now revision 2): call get_memory")
    assert '"currentRevision": 2' in stale
    assert alice.get("/v1/users/u1/conversations/c1/memory").json() == {"revision": 2, "memory": {"mood": "glad"}}


def test_bad_arguments_are_tool_errors_the_model_can_correct(client, alice, world):
    token = mint(alice)
    unknown = tool_error(call(client, token, "get_memory", {"userId": "u2"}))
    assert unknown.startswith("invalid_request: invalid arguments for get_memory")
    wrong_type = tool_error(call(client, token, "update_memory", {"expectedRevision": "1", "memory": {}}))
    assert "expectedRevision" in wrong_type
    not_object = tool_error(call(client, token, "update_memory", {"expectedRevision": 1, "memory": [1]}))
    assert "memory" in not_object
    assert tool_error(call(client, token, "search_memories", {"query": "x", "mode": "fuzzy"})).startswith(
        "invalid_request:"
    )


@pytest.mark.parametrize(
    "name, arguments, field",
    [
        ("update_memory", {"expectedRevision": 1, "memory": [1]}, "arguments.memory"),
        ("update_memory", {"expectedRevision": True, "memory": {}}, "arguments.expectedRevision"),
        ("update_memory", {"expectedRevision": 1.0, "memory": {}}, "arguments.expectedRevision"),
        ("update_memory", {"memory": {}}, "arguments.expectedRevision"),
        ("get_memory", {"userId": "u2"}, "arguments.userId"),
    ],
)
def test_an_argument_error_names_the_same_field_as_the_rest_tool_call(client, alice, world, name, arguments, field):
    """docs/contract.md: `details.field: "arguments.…"`, whichever transport carries the call."""
    token = mint(alice)
    text = tool_error(call(client, token, name, arguments))
    assert text.startswith("invalid_request: ") and json.loads(text[text.rindex(' {"') + 1 :]) == {"field": field}
    body = {"name": name, "arguments": arguments}
    rest = Client().post("/v1/tools/call", body, "application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert rest.status_code == 400 and rest.json()["error"]["details"] == {"field": field}


def test_search_memories_keyword_finds_the_users_preference(client, alice, world):
    found = structured(call(client, mint(alice), "search_memories", {"query": "中文", "mode": "keyword"}))
    assert found["mode"] == "keyword"
    assert [r["id"] for r in found["results"]] == [world["preferenceId"]]
    assert found["results"][0]["kind"] == "preference" and found["results"][0]["version"] == 1


def test_search_memories_semantic_ranks_by_meaning(client, alice, world):
    found = structured(
        call(
            client,
            mint(alice),
            "search_memories",
            {"query": "reply briefly in Chinese", "mode": "semantic", "limit": 1},
        )
    )
    assert found["mode"] == "semantic"
    assert [r["id"] for r in found["results"]] == [world["preferenceId"]]


def test_get_diaries_serves_as_many_summaries_as_the_policy_allows(client, alice, world):
    diaries = structured(call(client, mint(alice), "get_diaries"))
    assert diaries["limit"] == 1 and diaries["subscriptionCategory"] == "default"
    assert [(e["roundFrom"], e["roundTo"]) for e in diaries["entries"]] == [(11, 20)]
    assert diaries["text"] == "Rounds 11-20: Rounds 11-20."


def test_the_plan_the_product_minted_into_the_token_decides_how_many_diaries(client, alice, world):
    diaries = structured(call(client, mint(alice, subscriptionCategory="plus"), "get_diaries"))
    assert diaries["limit"] == 2 and diaries["subscriptionCategory"] == "plus"
    assert [e["roundTo"] for e in diaries["entries"]] == [20, 10]
    refused = alice.post("/v1/users/u1/conversations/c1/tool-tokens", {"subscriptionCategory": "gold"})
    assert refused.status_code == 400 and refused.json()["error"]["details"]["field"] == "subscriptionCategory"


def test_get_tables_renders_the_tables(client, alice, world):
    tables = structured(call(client, mint(alice), "get_tables"))
    first = tables["tables"][0]
    assert first["id"] == world["tableId"] and first["rows"] == [world["row"]] and first["version"] == 2
    assert tables["text"].startswith("* 0:时空表格\n") and "c1 的酒馆" in tables["text"]


def test_get_and_propose_state(client, alice, world):
    token = mint(alice, scenarioId="tavern")
    state = structured(call(client, token, "get_state"))
    assert state["revision"] == 1 and state["text"] == "notes of c1"
    change = {"baseRevision": 1, "upsert": [{"category": "inventory", "key": "lamp", "value": 1}]}
    assert structured(call(client, token, "propose_state", change)) == {"revision": 2, "replayed": False}
    stale = tool_error(call(client, token, "propose_state", change))
    assert stale.startswith("revision_conflict: the state changed (now revision 2): call get_state")
    invalid = {"baseRevision": 2, "upsert": [{"category": "gossip", "key": "k", "value": 1}]}
    assert tool_error(call(client, token, "propose_state", invalid)).startswith("invalid_state_candidate:")


def test_get_story_of_a_conversation_without_one_is_the_empty_story(client, alice, world):
    story = structured(call(client, mint(alice), "get_story"))
    assert story == {"version": 0, "anchorMessageId": None, "worldFacts": {}, "events": [], "narrative": {}, "text": ""}


# --- isolation ----------------------------------------------------------------------------------------------


def test_a_token_reaches_only_its_own_conversation_and_product(client, alice, bob, world):
    seed(alice, user="u1", conversation="c2")
    seed(bob, user="u1", conversation="c1")
    other_conversation, other_product = mint(alice, conversation="c2"), mint(bob)
    assert structured(call(client, other_conversation, "update_memory", {"expectedRevision": 1, "memory": {"x": 1}}))
    assert structured(call(client, other_product, "update_memory", {"expectedRevision": 1, "memory": {"y": 1}}))
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["memory"] == {"mood": "calm", "user": "u1"}
    mine = mint(alice)
    assert structured(call(client, mine, "get_memory"))["memory"] == {"mood": "calm", "user": "u1"}
    tables = structured(call(client, other_conversation, "get_tables"))
    assert "c2 的酒馆" in tables["text"] and "c1 的酒馆" not in tables["text"]
    assert world["tableId"] not in {t["id"] for t in structured(call(client, other_product, "get_tables"))["tables"]}
    found = structured(call(client, other_product, "search_memories", {"query": "中文", "mode": "keyword"}))
    assert world["preferenceId"] not in {r["id"] for r in found["results"]}
