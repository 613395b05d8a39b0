"""What the sync and the async client share: the request description, the retry rule, the answers."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from .errors import MemoryHubError, error_from_response

RETRYABLE_STATUS = frozenset({502, 503, 504})
USER_AGENT = "memoryhub-client-python/0.1.0"


def new_key() -> str:
    """An Idempotency-Key / operationId (docs/contract.md#identifiers: A-Za-z0-9_.:@-)."""
    return f"mhc-{uuid.uuid4().hex}"


def seg(value: str | int) -> str:
    """One path segment, escaped (an id that is not one is refused by the server with invalid_id).

    An empty id, one made only of dots or one holding `/` is refused here, before anything is sent: httpx, like
    every URL parser, folds `.` and `..` segments (escaped as `%2e%2e` too), so `erase_conversation(u, "..")` would
    send `DELETE /v1/users/u` and erase the whole user; and a `/` escaped as `%2F` is decoded by web servers and
    proxies before routing, so `erase_user("u/conversations/c")` would erase conversation `c` of user `u`
    (docs/contract.md#identifiers)."""
    text = str(value)
    if text.strip(".") == "":
        raise ValueError(
            f"{text!r} cannot be an id in a URL path: an id is never empty or only dots ('.', '..'), which URL "
            "parsers fold into the parent path (docs/contract.md#identifiers)"
        )
    if "/" in text:
        raise ValueError(
            f"{text!r} cannot be an id in a URL path: an id never holds '/', which servers and proxies decode "
            "from %2F into a path separator (docs/contract.md#identifiers)"
        )
    return quote(text, safe="")


@dataclass
class Call:
    """One API request. `idempotent`: a retry cannot apply it twice (a read, a write carrying a key, an erasure, or
    the DELETE of an id the server never gives again)."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = False
    raw: bool = False  # the answer's bytes, not JSON

    def query(self) -> dict[str, Any]:
        return {
            k: ("true" if v is True else "false" if v is False else v) for k, v in self.params.items() if v is not None
        }


@dataclass(frozen=True)
class RetryPolicy:
    """Transient failures retried: connection errors (for any request: nothing was sent), 429 (refused before it
    counted, docs/contract.md#tenancy-and-authentication) and, for idempotent requests only, 502/503/504 and
    lost answers (read timeouts, resets)."""

    max_retries: int = 3
    backoff: float = 0.25
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return float(min(self.max_backoff, self.backoff * 2.0**attempt) * (0.5 + random.random() / 2))


def transport_error_retryable(exc: httpx.TransportError, call: Call) -> bool:
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
        return True  # the request never left
    return call.idempotent


def status_retryable(status: int, call: Call) -> bool:
    return status == 429 or (status in RETRYABLE_STATUS and call.idempotent)


def auth_headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT, "Accept": "application/json"}


def request_kwargs(call: Call) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"params": call.query(), "headers": call.headers}
    if call.content is not None:
        kwargs["content"] = call.content
    elif call.json is not None:
        kwargs["json"] = call.json
    return kwargs


def answer(response: httpx.Response, call: Call) -> Any:
    """The decoded body of a successful answer, or the typed exception of an error answer."""
    if response.status_code >= 400:
        try:
            body: object = response.json()
        except ValueError:
            body = None
        raise error_from_response(response.status_code, body, response.headers)
    if call.raw:
        return response.content
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def retry_after(response: httpx.Response) -> float | None:
    from .errors import parse_retry_after

    return parse_retry_after(response.headers.get("retry-after"))


def body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the fields left at None (an absent optional field, not an explicit null)."""
    return {k: v for k, v in fields.items() if v is not None}


def with_extra(base: dict[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**base, **(extra or {})}


__all__ = ["Call", "MemoryHubError", "RetryPolicy"]
