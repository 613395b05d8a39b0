"""The one httpx factory: every outbound call gets explicit timeouts and a request id."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

import httpx

from .errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable

logger = logging.getLogger(__name__)


def make_client(*, base_url: str, timeout_seconds: float, headers: Mapping[str, str] | None = None) -> httpx.Client:
    """Build a client whose connect/read/write/pool timeouts all equal `timeout_seconds`."""
    return httpx.Client(
        base_url=base_url.rstrip("/"),
        timeout=httpx.Timeout(timeout_seconds),
        headers=dict(headers or {}),
    )


def new_request_id() -> str:
    return uuid.uuid4().hex


def post_json(
    client: httpx.Client, path: str, *, service: str, json: dict, headers: Mapping[str, str] | None = None
) -> object:
    """POST JSON and return the decoded body; every failure becomes a typed upstream error."""
    try:
        response = client.post(path, json=json, headers=dict(headers or {}))
    except httpx.TimeoutException as exc:
        raise UpstreamTimeout(f"{service} did not answer in time", service=service) from exc
    except httpx.HTTPError as exc:
        raise UpstreamUnavailable(f"{service} is unreachable: {exc.__class__.__name__}", service=service) from exc
    if not response.is_success:
        # The body is the upstream's own text (possibly internal): the log keeps it, the error never does.
        logger.warning("%s answered HTTP %s: %s", service, response.status_code, response.text[:500])
        raise UpstreamUnavailable(
            f"{service} answered HTTP {response.status_code}", service=service, details={"status": response.status_code}
        )
    try:
        return response.json()
    except ValueError as exc:
        raise UpstreamProtocolError(f"{service} answered with a body that is not JSON", service=service) from exc
