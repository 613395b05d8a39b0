"""/mcp tool arguments get the REST API's rule (docs/contract.md#request-bodies): a NUL is a tool error naming
its path, and nothing is written (PostgreSQL refused the write). The MCP library itself refuses a lone
surrogate and a number beyond a double (`1e400`), as invalid JSON."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.mcp.support import mint, rpc_body, rpc_headers, seed
from tests.mcp.test_server import tool_error

pytestmark = pytest.mark.django_db


def test_a_nul_in_an_argument_is_a_tool_error_and_writes_nothing(alice):
    seed(alice)
    token = mint(alice)
    params = {"name": "update_memory", "arguments": {"expectedRevision": 1, "memory": {"mood": "VALUE"}}}
    body = json.dumps(rpc_body("tools/call", params)).replace("VALUE", "calm\\u0000")
    response = Client().post(
        "/mcp", body, content_type="application/json", headers=rpc_headers(token, "tools/call", params)
    )
    assert response.status_code == 200, response.content
    error = tool_error(response.json()["result"])
    assert error.startswith("invalid_request: ") and '"path": "/memory/mood"' in error
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["revision"] == 1
