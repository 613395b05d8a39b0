"""A conversation with something in every store the MCP tools read, tool tokens, and JSON-RPC requests to /mcp.

Everything is written through the product API or the services (as production writes it), so the same seed
serves the in-process tests and those against a live server on the test database.
"""

from __future__ import annotations

import json

from memoryhub.addresses import ConversationAddress
from tables.services import tables_ensure
from tables.validation import validate_tables_section
from tests.factories import TABLE_TEMPLATES, DiaryEntryFactory
from tests.longterm.support import PREFERENCE_ZH
from tests.longterm.support import create as create_memory
from tests.state.support import SECTION
from tests.support.scenarios import create as create_scenario

MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
READ_TOOLS = {"get_memory", "search_memories", "get_diaries", "get_tables", "get_state", "get_story"}
WRITE_TOOLS = {"update_memory", "propose_state"}


def state_scenario_body(slug: str, *, tool_updates: bool = True) -> dict:
    return {
        "id": slug,
        "name": slug.title(),
        "memoryRuntime": "personalization",
        "memorySources": [
            {"id": "st", "agentRef": "state", "variable": "conversationState"},
            {"id": "story", "agentRef": "story", "variable": "story"},
        ],
        "template": "State:\n{{conversationState}}\nStory:\n{{story}}\nUser: {{userMessage}}",
        "state": SECTION,
        "toolUpdates": tool_updates,
    }


def seed(api, user: str = "u1", conversation: str = "c1") -> dict:
    """Scenarios `tavern` (writes allowed) and `sealed` (toolUpdates: false); a memory document, a preference,
    two diary summaries, the template tables with one row, and a state at revision 1 in (user, conversation)."""
    conv = f"/v1/users/{user}/conversations/{conversation}"
    for slug, writes in (("tavern", True), ("sealed", False)):
        if api.get(f"/v1/scenarios/{slug}").status_code == 404:
            create_scenario(api, state_scenario_body(slug, tool_updates=writes))
    memory = api.put(f"{conv}/memory", {"expectedRevision": 0, "memory": {"mood": "calm", "user": user}})
    assert memory.status_code == 200, memory.json()
    preference = create_memory(api, PREFERENCE_ZH, user=user)
    for first in (1, 11):
        DiaryEntryFactory(
            product=api.product, user_id=user, conversation_id=conversation, round_from=first, round_to=first + 9
        )
    address = ConversationAddress(api.product, user, conversation)
    table = tables_ensure(address, validate_tables_section(TABLE_TEMPLATES))[0]
    row = ["2026-07-28", "夜", f"{conversation} 的酒馆", "店主"]
    edited = api.put(f"{conv}/tables/{table.pk}", {"expectedVersion": table.version, "rows": [row]})
    assert edited.status_code == 200, edited.json()
    candidate = {
        "scenarioId": "tavern",
        "baseRevision": 0,
        "text": f"notes of {conversation}",
        "upsert": [{"category": "relationships", "key": "innkeeper", "value": "wary"}],
    }
    state = api.post(f"{conv}/state/candidates", candidate)
    assert state.status_code == 201, state.json()
    return {"preferenceId": preference["id"], "tableId": table.pk, "row": row}


def mint(api, user: str = "u1", conversation: str = "c1", **body) -> str:
    response = api.post(f"/v1/users/{user}/conversations/{conversation}/tool-tokens", body)
    assert response.status_code == 201, response.json()
    return response.json()["token"]


def rpc_body(method: str, params: dict | None = None, *, version: str | None = MODERN, request_id: int = 1) -> dict:
    params = dict(params or {})
    if version == MODERN:
        params["_meta"] = {META_VERSION: MODERN, META_CAPABILITIES: {}}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def rpc_headers(token: str | None, method: str, params: dict | None, version: str | None = MODERN) -> dict:
    """Headers of a 2026-07-28 request (protocol version, method and tool name mirrored from the body)."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if version == MODERN:
        headers["Mcp-Method"] = method
        if method == "tools/call":
            headers["Mcp-Name"] = (params or {})["name"]
    return headers


def rpc(client, token: str | None, method: str, params: dict | None = None, *, version: str | None = MODERN):
    """POST one JSON-RPC request to /mcp with Django's test client."""
    headers = rpc_headers(token, method, params, version)
    return client.post(
        "/mcp",
        json.dumps(rpc_body(method, params, version=version)),
        content_type="application/json",
        headers=headers,
    )


def call(client, token: str, name: str, arguments: dict | None = None) -> dict:
    """tools/call → the result (asserting a JSON-RPC result, not an error)."""
    response = rpc(client, token, "tools/call", {"name": name, "arguments": arguments or {}})
    assert response.status_code == 200, response.content
    body = response.json()
    assert "result" in body, body
    return body["result"]
