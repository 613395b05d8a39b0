"""One webhook HTTP request (outbound HTTP only, no ORM): pinned to the checked address, redirects not followed.

The request connects to the address `targets.check` approved — not to whatever the name resolves to a
moment later — while the Host header and TLS (SNI and certificate check) still name the URL's host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from .targets import IPAddress, Target

EXCERPT_CHARS = 1000


@dataclass(frozen=True)
class SendResult:
    outcome: str  # success, http_error, timeout, network_error (models.WebhookAttempt.OUTCOMES)
    status_code: int | None
    latency_ms: int
    excerpt: str = ""
    error: str = ""


def _pinned_url(target: Target, address: IPAddress) -> str:
    parts = urlsplit(target.url)
    host = f"[{address}]" if address.version == 6 else str(address)
    return urlunsplit((parts.scheme, f"{host}:{target.port}", parts.path or "/", parts.query, ""))


def _host_header(target: Target) -> str:
    default = 443 if target.scheme == "https" else 80
    host = f"[{target.host}]" if ":" in target.host else target.host
    return host if target.port == default else f"{host}:{target.port}"


def send(target: Target, *, headers: dict[str, str], body: bytes, timeout_seconds: float) -> SendResult:
    """POST `body`; a 2xx answer is a success, anything else (3xx included: never followed) a failure."""
    started = time.monotonic()
    try:
        with httpx.Client(timeout=timeout_seconds, follow_redirects=False, trust_env=False) as client:
            response = _connect(client, target, headers, body)
            try:
                excerpt = _excerpt(response, started + timeout_seconds)
            finally:
                response.close()
    except httpx.TimeoutException as exc:
        return SendResult("timeout", None, _ms(started), error=f"no answer within {timeout_seconds:g} s ({exc!r})")
    except httpx.HTTPError as exc:
        return SendResult("network_error", None, _ms(started), error=f"{type(exc).__name__}: {exc}"[:500])
    outcome = "success" if 200 <= response.status_code < 300 else "http_error"
    return SendResult(outcome, response.status_code, _ms(started), excerpt=excerpt)


def _connect(client: httpx.Client, target: Target, headers: dict[str, str], body: bytes) -> httpx.Response:
    """Send to each checked address in turn until one accepts the connection (e.g. ::1, then 127.0.0.1)."""
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    for address in target.addresses[:-1]:
        try:
            return client.send(_request(client, target, address, headers, body, extensions), stream=True)
        except httpx.ConnectError:
            continue
    last = target.addresses[-1]
    return client.send(_request(client, target, last, headers, body, extensions), stream=True)


def _request(
    client: httpx.Client, target: Target, address: IPAddress, headers: dict[str, str], body: bytes, extensions: dict
) -> httpx.Request:
    return client.build_request(
        "POST",
        _pinned_url(target, address),
        content=body,
        headers={**headers, "host": _host_header(target)},
        extensions=extensions,
    )


def _excerpt(response: httpx.Response, deadline: float) -> str:
    """The answer's beginning, read until the attempt's time is up (a receiver trickling bytes cannot hold it)."""
    read = b""
    for chunk in response.iter_bytes():
        read += chunk
        if len(read) >= EXCERPT_CHARS * 4 or time.monotonic() >= deadline:
            break
    return read.decode("utf-8", errors="replace")[:EXCERPT_CHARS]


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
