"""`/mcp`: the Streamable HTTP MCP endpoint (django-mcpz, a synchronous Django view; docs/mcp.md).

django-mcpz speaks protocol 2026-07-28 (stateless: every POST stands alone, `server/discover`, the
`MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers checked against the body) and serves clients of the
2025 revisions in their stateless mode (`initialize` answered without `Mcp-Session-Id`). GET and DELETE are 405:
there is no standalone stream and no session to end. This module only authenticates and adapts the tools of
memories.mcp.services; the library owns the protocol.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from http import HTTPStatus
from types import SimpleNamespace
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django_mcpz.jsonrpc import PARSE_ERROR, error_response
from django_mcpz.server import MCPServer, ToolError
from rest_framework.exceptions import Throttled

from memories.mcp.services import TOOLS, Caller, McpTool, caller_from_token, tool_offered, tool_run
from memories.services.products import hash_key
from memoryhub import json_text
from memoryhub.api import auth_failures
from memoryhub.api.authentication import ProductClient
from memoryhub.api.handler import dependency_outage, envelope
from memoryhub.api.throttling import PerKeyRateThrottle
from memoryhub.clients.errors import UpstreamError
from memoryhub.errors import DomainError

INSTRUCTIONS = (
    "memoryhub keeps this conversation's memory. The credential fixes the user and conversation: no tool takes "
    "a user or conversation id. Writes are compare-and-set: read, then write with the revision you read; on a "
    "conflict read again and decide again, never repeat the write blindly."
)


def _challenge(error: str | None, message: str) -> HttpResponse:
    """401 with an RFC 6750 bearer challenge, and the error envelope the REST API uses."""
    challenge = 'Bearer realm="memoryhub"'
    if error is not None:
        challenge += f', error="{error}", error_description="{message}"'
    body = {"error": {"code": "unauthenticated", "message": message, "details": {}}}
    response = JsonResponse(body, status=HTTPStatus.UNAUTHORIZED)
    response["WWW-Authenticate"] = challenge
    return response


def tool_token_auth(request: HttpRequest) -> HttpResponse | None:
    """Only a tool token (`POST …/tool-tokens`) is accepted; it alone names product, user and conversation."""
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        return _challenge(None, "a tool token is required: Authorization: Bearer <tool token>")
    digest = hash_key(credential)
    try:
        auth_failures.refuse_if_blocked(request, digest)  # an address over its failed-authentication limit
        caller = caller_from_token(credential)
        if caller is None:
            auth_failures.failed(request)
        else:
            auth_failures.verified(digest)
        refused = None if caller is None else _rate_limited(caller)
    except Throttled as exc:
        return _too_many(exc.wait)
    except Exception as exc:
        outage = dependency_outage(exc)  # C3: Redis or the database down is a clear 503, never a 500
        if outage is None:
            raise
        return JsonResponse(outage, status=HTTPStatus.SERVICE_UNAVAILABLE)
    if caller is None:
        message = "the tool token is invalid, expired or revoked (product API keys are not accepted)"
        return _challenge("invalid_token", message)
    if refused is not None:
        return refused
    request.mcp_caller = caller  # type: ignore[attr-defined]
    return None


def _rate_limited(caller: Caller) -> HttpResponse | None:
    """The REST API's per-key limit (R5), on the same counter as the token's calls of POST /v1/tools/call."""
    throttle = PerKeyRateThrottle()
    client = ProductClient(caller.product, "tool", caller.token.token_id)
    if throttle.allow_request(SimpleNamespace(user=client), None):
        return None
    return _too_many(throttle.wait())


def _too_many(wait_seconds: float | None) -> HttpResponse:
    wait = math.ceil(wait_seconds or 1)
    body = {"error": {"code": "rate_limited", "message": f"too many requests; retry in {wait} s", "details": {}}}
    response = JsonResponse(body, status=HTTPStatus.TOO_MANY_REQUESTS)
    response["Retry-After"] = str(wait)
    return response


def _caller(request: HttpRequest) -> Caller:
    return request.mcp_caller  # type: ignore[attr-defined]


def _as_tool_error(exc: DomainError | UpstreamError) -> ToolError:
    """The model reads the error code, the message and its details, and can act on them (e.g. re-read)."""
    text = f"{exc.code}: {exc.message}"
    if exc.details:
        text += " " + json.dumps(exc.details, ensure_ascii=False, sort_keys=True)
    return ToolError(text)


def _handler(tool: McpTool) -> Callable[[HttpRequest, dict], dict[str, Any]]:
    def handle(request: HttpRequest, arguments: dict) -> dict[str, Any]:
        caller = _caller(request)
        if not tool_offered(caller, tool):  # the library checks too; this keeps the refusal next to the call
            raise ToolError(f"forbidden: {tool.name} is not available to this token")
        try:
            json_text.check_storable(arguments)  # NUL, lone surrogates, 1e400: refused as the REST API does
            return tool_run(caller, tool, arguments)
        except (DomainError, UpstreamError) as exc:
            raise _as_tool_error(exc) from None
        except Exception as exc:
            outage = dependency_outage(exc)
            if outage is None:
                raise  # the library reports it as a tool that failed unexpectedly, and logs it
            error = outage["error"]
            raise ToolError(f"{error['code']}: {error['message']} {json.dumps(error['details'])}") from None

    handle.__name__ = tool.name
    return handle


def _permission(tool: McpTool) -> Callable[[HttpRequest], bool]:
    return lambda request: tool_offered(_caller(request), tool)


class _Server(MCPServer):
    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return super().__call__(request)
        except RecursionError:
            # The library's JSON decoder recurses per nesting level: a small, deeply nested body must be the
            # parse error it is (400, as the REST API's "JSON nested too deeply"), never a 500.
            return error_response(None, PARSE_ERROR, "Invalid JSON: nested too deeply", status=HTTPStatus.BAD_REQUEST)
        except RequestDataTooBig:  # over DATA_UPLOAD_MAX_MEMORY_SIZE: the REST API's 413, not Django's bare 400
            body = envelope("request_too_large", "the request body is too large")
            return JsonResponse(body, status=HTTPStatus.REQUEST_ENTITY_TOO_LARGE)


def build_server() -> MCPServer:
    server = _Server(
        name="memoryhub",
        version="1.0.0",
        title="memoryhub",
        description="Memory and state of one conversation, under a tool token.",
        instructions=INSTRUCTIONS,
        auth=tool_token_auth,
    )
    for tool in TOOLS:
        server.tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            read_only=not tool.writes,
            destructive=tool.writes,
            idempotent=not tool.writes,
            open_world=False,
            permission=_permission(tool),
        )(_handler(tool))
    return server


mcp_server = build_server()
