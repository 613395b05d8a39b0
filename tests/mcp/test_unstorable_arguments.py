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


@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
def test_a_deeply_nested_body_is_a_parse_error_not_a_500(alice, method):
    """1,000 nested arrays in 2 KB: the library's decoder recurses per level; the REST API answers 400 here too."""
    seed(alice)
    token = mint(alice)
    params = {"name": "update_memory", "arguments": {"expectedRevision": 1, "memory": {"mood": "DEEP"}}}
    body = json.dumps(rpc_body(method, params)).replace('"DEEP"', "[" * 1000 + "]" * 1000)
    response = Client().post("/mcp", body, content_type="application/json", headers=rpc_headers(token, method, params))
    assert response.status_code == 400, response.content
    assert response.json()["error"] == {"code": -32700, "message": "Invalid JSON: nested too deeply"}
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["revision"] == 1


def test_a_body_over_the_upload_limit_is_413_with_the_envelope(alice, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    seed(alice)
    token = mint(alice)
    params = {"name": "update_memory", "arguments": {"expectedRevision": 1, "memory": {"notes": "x" * 20_000}}}
    body = json.dumps(rpc_body("tools/call", params))
    response = Client().post(
        "/mcp", body, content_type="application/json", headers=rpc_headers(token, "tools/call", params)
    )
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] == "request_too_large"
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["revision"] == 1


@pytest.mark.parametrize("number", ["1" + "0" * 400, "-1" + "0" * 400])
def test_an_integer_beyond_a_double_is_a_tool_error_and_writes_nothing(alice, number):
    """10^400 as digits: the library parses it to a Python int (1e400 it refuses as invalid JSON); a JavaScript
    reader of the document would get Infinity, so the arguments' check refuses it as the REST API does."""
    seed(alice)
    token = mint(alice)
    params = {"name": "update_memory", "arguments": {"expectedRevision": 1, "memory": {"mood": "VALUE"}}}
    body = json.dumps(rpc_body("tools/call", params)).replace('"VALUE"', number)
    response = Client().post(
        "/mcp", body, content_type="application/json", headers=rpc_headers(token, "tools/call", params)
    )
    assert response.status_code == 200, response.content
    error = tool_error(response.json()["result"])
    assert error.startswith("invalid_request: a number is beyond the range of a double") and '"/memory/mood"' in error
    assert alice.get("/v1/users/u1/conversations/c1/memory").json()["revision"] == 1
