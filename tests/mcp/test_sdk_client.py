"""The official MCP Python SDK (mcp 2.x) client against a live memoryhub over Streamable HTTP.

Both eras the server speaks: protocol 2026-07-28 (stateless, `server/discover`, the client pinned to it and in
`auto` negotiation) and the 2025 initialize handshake (`mode="legacy"`) in its stateless mode. Every tool is
called with success and with each of its errors, and a token of another conversation never reaches this one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.support import READ_TOOLS, WRITE_TOOLS, mint, seed

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]


@asynccontextmanager
async def connect(url: str, token: str, mode: str, seen: list | None = None) -> AsyncIterator[Client]:
    async def record(response: httpx2.Response) -> None:
        if seen is not None:
            seen.append((response.status_code, response.headers.get("WWW-Authenticate")))

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]})
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
        yield client


def run(url: str, token: str, mode: str, body: Callable[[Client], Awaitable[Any]], seen: list | None = None) -> Any:
    async def main() -> Any:
        async with connect(url, token, mode, seen) as client:
            return await body(client)

    return asyncio.run(main())


def ok(result) -> dict:
    assert result.is_error is False, result
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def failed(result) -> str:
    assert result.is_error is True, result
    return result.content[0].text


MODES = ["2026-07-28", "auto", "legacy"]


@pytest.mark.parametrize("mode", MODES)
def test_the_official_client_lists_and_calls_every_tool(memoryhub_server, alice, mode):
    world = seed(alice)
    token = mint(alice, scenarioId="tavern")

    async def session(client: Client) -> dict:
        listed = await client.list_tools()
        calls = {
            "get_memory": await client.call_tool("get_memory", {}),
            "update_memory": await client.call_tool("update_memory", {"expectedRevision": 1, "memory": {"m": mode}}),
            "update_stale": await client.call_tool("update_memory", {"expectedRevision": 1, "memory": {"m": "x"}}),
            "update_invalid": await client.call_tool("update_memory", {"expectedRevision": -1, "memory": {}}),
            "keyword": await client.call_tool("search_memories", {"query": "中文", "mode": "keyword"}),
            "semantic": await client.call_tool("search_memories", {"query": "answer in Chinese", "mode": "semantic"}),
            "search_invalid": await client.call_tool("search_memories", {"query": "", "mode": "keyword"}),
            "get_diaries": await client.call_tool("get_diaries", {}),
            "get_tables": await client.call_tool("get_tables", {}),
            "get_state": await client.call_tool("get_state", {}),
            "propose_state": await client.call_tool(
                "propose_state", {"baseRevision": 1, "upsert": [{"category": "inventory", "key": "lamp", "value": 1}]}
            ),
            "propose_stale": await client.call_tool("propose_state", {"baseRevision": 1, "delete": []}),
            "propose_invalid": await client.call_tool(
                "propose_state", {"baseRevision": 2, "upsert": [{"category": "gossip", "key": "k", "value": 1}]}
            ),
            "get_story": await client.call_tool("get_story", {}),
            "update_too_large": await client.call_tool(
                "update_memory", {"expectedRevision": 2, "memory": {"note": "x" * 70_000}}
            ),
        }
        for name in READ_TOOLS:  # an identity argument is no way in: unknown arguments are refused
            calls[f"{name}:identity"] = await client.call_tool(name, {"conversationId": "c2", "query": "x"})
        return {"version": client.protocol_version, "tools": listed.tools, "calls": calls}

    got = run(memoryhub_server.url, token, mode, session)
    assert got["version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert {tool.name for tool in got["tools"]} == READ_TOOLS | WRITE_TOOLS
    assert all(tool.output_schema and tool.input_schema["additionalProperties"] is False for tool in got["tools"])
    calls = got["calls"]
    assert ok(calls["get_memory"]) == {"revision": 1, "memory": {"mood": "calm", "user": "u1"}}
    assert ok(calls["update_memory"]) == {"revision": 2}
    assert failed(calls["update_stale"]).startswith("revision_conflict: memory changed (now revision 2)")
    assert failed(calls["update_invalid"]).startswith("invalid_request: invalid arguments for update_memory")
    assert [r["id"] for r in ok(calls["keyword"])["results"]] == [world["preferenceId"]]
    assert [r["id"] for r in ok(calls["semantic"])["results"]] == [world["preferenceId"]]
    assert failed(calls["search_invalid"]).startswith("invalid_request:")
    assert [e["roundTo"] for e in ok(calls["get_diaries"])["entries"]] == [20]
    assert ok(calls["get_tables"])["tables"][0]["rows"] == [world["row"]]
    assert ok(calls["get_state"])["revision"] == 1
    assert ok(calls["propose_state"]) == {"revision": 2, "replayed": False}
    assert failed(calls["propose_stale"]).startswith("revision_conflict: the state changed (now revision 2)")
    assert failed(calls["propose_invalid"]).startswith("invalid_state_candidate:")
    assert ok(calls["get_story"])["version"] == 0
    assert failed(calls["update_too_large"]).startswith("memory_too_large:")
    for name in READ_TOOLS:
        assert failed(calls[f"{name}:identity"]).startswith(f"invalid_request: invalid arguments for {name}"), name
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["memory"] == {"m": mode}


@pytest.mark.parametrize("mode", MODES)
def test_tool_updates_false_withholds_and_refuses_the_writing_tools(memoryhub_server, alice, mode):
    seed(alice)

    async def session(client: Client) -> tuple[set[str], Exception | None]:
        names = {tool.name for tool in (await client.list_tools()).tools}
        try:
            await client.call_tool("update_memory", {"expectedRevision": 1, "memory": {}})
        except Exception as exc:  # the SDK raises the JSON-RPC error (unknown tool)
            return names, exc
        return names, None

    names, refused = run(memoryhub_server.url, mint(alice, scenarioId="sealed"), mode, session)
    assert names == READ_TOOLS
    assert refused is not None and "Unknown tool" in str(refused)
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["revision"] == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_token_of_another_conversation_never_reaches_this_one(memoryhub_server, alice, bob, mode):
    mine = seed(alice, conversation="c1")
    seed(alice, conversation="c2")
    seed(bob, conversation="c1")

    async def trespass(client: Client) -> list[dict]:
        return [
            ok(await client.call_tool("update_memory", {"expectedRevision": 1, "memory": {"from": "elsewhere"}})),
            ok(await client.call_tool("get_tables", {})),
            ok(await client.call_tool("search_memories", {"query": "中文", "mode": "keyword"})),
        ]

    # Long-term memories belong to the user, not the conversation: alice's u1 finds them from c2; bob's u1 never.
    for token, same_user in ((mint(alice, conversation="c2"), True), (mint(bob), False)):
        written, tables, found = run(memoryhub_server.url, token, mode, trespass)
        assert written == {"revision": 2}
        assert mine["tableId"] not in {table["id"] for table in tables["tables"]}
        assert (mine["preferenceId"] in {r["id"] for r in found["results"]}) is same_user
    assert alice.get("/v1/users/u1/conversations/c1/memory").json() == {
        "revision": 1,
        "memory": {"mood": "calm", "user": "u1"},
    }


@pytest.mark.parametrize("mode", MODES)
def test_missing_expired_and_product_key_credentials_are_refused(memoryhub_server, alice, mode):
    async def session(client: Client) -> None:
        await client.list_tools()

    expired = mint(alice, ttlSeconds=1)
    time.sleep(1.5)
    for credential in (alice.key, expired, "mht_forged", ""):
        seen: list = []
        with pytest.raises(Exception):  # noqa: B017  the SDK surfaces the refusal as its own error type
            run(memoryhub_server.url, credential, mode, session, seen)
        assert seen and all(status == 401 for status, _ in seen), (credential, seen)
        challenge = seen[0][1]
        assert challenge.startswith('Bearer realm="memoryhub"'), challenge
        assert ('error="invalid_token"' in challenge) is bool(credential)
