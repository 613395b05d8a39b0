"""Client of the Hinos external memory protocol (docs/hinos.md).

prepare: before the reply, send the rendered system message and the formal chat (last message is
the current user message); get back `claim_id`, `memory` text, `turn`, `state_through_round`.
commit: after the reply, send the same `claim_id` with the user input and assistant text; only a
`committed: true` answer counts as the receipt. Every failure is a typed `UpstreamError` with
service="hinos": timeout → 504, unreachable/non-2xx/protocol violation → 502.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from .errors import UpstreamProtocolError, UpstreamUnavailable
from .http import make_client, new_request_id, post_json

SERVICE = "hinos"
DEFAULT_TIMEOUT_MS = 10000
PREPARE_PATH = "/v1/memory/prepare"
COMMIT_PATH = "/v1/memory/commit"
_ROLES = ("user", "assistant")


class HinosNotConfigured(UpstreamUnavailable):
    """A scenario uses the hinos runtime but HINOS_MEMORY_URL is not set."""


@dataclass(frozen=True)
class HinosPrepared:
    claim_id: str
    memory: str
    turn: int
    state_through_round: int


@dataclass(frozen=True)
class HinosCommitted:
    committed: bool
    raw: dict = field(default_factory=dict)


def _protocol(message: str) -> UpstreamProtocolError:
    return UpstreamProtocolError(f"hinos protocol violation: {message}", service=SERVICE)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a turn number


def _require_text(name: str, value: object, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value):
        raise ValueError(f"{name} must be a{'' if allow_empty else ' non-empty'} string")
    return value


def _optional_text(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name} must be a string or None")
    return value


def _check_messages(messages: Sequence[Mapping[str, object]]) -> list[dict[str, str]]:
    """The formal chat: user/assistant only, ending with the current user message (docs/hinos.md)."""
    if isinstance(messages, (str, bytes)) or not messages:
        raise ValueError("messages must be a non-empty list")
    checked = []
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in _ROLES:
            raise ValueError(f"messages[{position}].role must be 'user' or 'assistant'")
        content = _require_text(f"messages[{position}].content", message.get("content"), allow_empty=True)
        checked.append({"role": role, "content": content})
    if checked[-1]["role"] != "user":
        raise ValueError("the last message must be the current user message")
    return checked


def _parse_prepared(payload: object) -> HinosPrepared:
    if not isinstance(payload, dict):
        raise _protocol("prepare response is not a JSON object")
    claim_id, memory = payload.get("claim_id"), payload.get("memory")
    turn, through = payload.get("turn"), payload.get("state_through_round")
    if not isinstance(claim_id, str) or not claim_id.strip():
        raise _protocol("claim_id must be a non-empty string")
    if not isinstance(memory, str):
        raise _protocol("memory must be a string")
    if not _is_int(turn) or turn < 0:
        raise _protocol("turn must be a non-negative integer")
    if not _is_int(through) or through < 0:
        raise _protocol("state_through_round must be a non-negative integer")
    return HinosPrepared(claim_id=claim_id, memory=memory, turn=turn, state_through_round=through)


def _parse_committed(payload: object) -> HinosCommitted:
    if not isinstance(payload, dict) or payload.get("committed") is not True:
        raise _protocol("commit not acknowledged (expected a JSON object with committed: true)")
    return HinosCommitted(committed=True, raw=payload)


class HinosClient:
    def __init__(self, base_url: str, timeout_ms: int = DEFAULT_TIMEOUT_MS, token: str | None = None) -> None:
        if not base_url:
            raise ValueError("HinosClient needs a base_url")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise ValueError("timeout_ms must be a positive integer")
        self.base_url = base_url.rstrip("/")
        self.timeout_ms = timeout_ms
        # The conversation id header is not authentication (docs/hinos.md); a token is the deployment's.
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = make_client(base_url=self.base_url, timeout_seconds=timeout_ms / 1000, headers=headers)

    def close(self) -> None:
        self._client.close()

    def prepare(
        self,
        *,
        conversation_id: str,
        request_id: str | None,
        user_id: str,
        scenario_id: str | None,
        model_config_id: str | None,
        prompt_id: str | None,
        system: str,
        messages: Sequence[Mapping[str, object]],
    ) -> HinosPrepared:
        request_id = request_id or new_request_id()
        body = {
            "user_id": _require_text("user_id", user_id),
            "request_id": request_id,
            "scenario_id": _optional_text("scenario_id", scenario_id),
            "model_config_id": _optional_text("model_config_id", model_config_id),
            "prompt_id": _optional_text("prompt_id", prompt_id),
            "system": _require_text("system", system, allow_empty=True),
            "messages": _check_messages(messages),
        }
        payload = self._post(PREPARE_PATH, body, conversation_id=conversation_id, request_id=request_id)
        return _parse_prepared(payload)

    def commit(
        self,
        *,
        conversation_id: str,
        request_id: str | None,
        claim_id: str,
        user: str,
        assistant: str,
    ) -> HinosCommitted:
        request_id = request_id or new_request_id()
        body = {
            "claim_id": _require_text("claim_id", claim_id),
            "user": _require_text("user", user, allow_empty=True),
            "assistant": _require_text("assistant", assistant, allow_empty=True),
        }
        payload = self._post(COMMIT_PATH, body, conversation_id=conversation_id, request_id=request_id)
        return _parse_committed(payload)

    def _post(self, path: str, body: dict, *, conversation_id: str, request_id: str) -> object:
        headers = {
            "x-flow-conversation-id": _require_text("conversation_id", conversation_id),
            "x-request-id": request_id,
        }
        return post_json(self._client, path, service=SERVICE, json=body, headers=headers)


_cache_lock = threading.Lock()
_cached: tuple[tuple, HinosClient] | None = None


def _settings_config() -> tuple:
    from django.conf import settings

    url = getattr(settings, "HINOS_MEMORY_URL", None) or None
    if url is None:
        raise HinosNotConfigured("the hinos memory runtime needs HINOS_MEMORY_URL, which is not set", service=SERVICE)
    timeout_ms = int(getattr(settings, "HINOS_MEMORY_TIMEOUT_MS", None) or DEFAULT_TIMEOUT_MS)
    return (str(url), timeout_ms, getattr(settings, "HINOS_MEMORY_TOKEN", None) or None)


def get_hinos_client() -> HinosClient:
    """The configured client, built once per process (rebuilt only if the settings change).

    Raises `HinosNotConfigured` (502, code upstream_failed) when HINOS_MEMORY_URL is unset.
    """
    global _cached
    config = _settings_config()
    with _cache_lock:
        if _cached is None or _cached[0] != config:
            _cached = (config, HinosClient(*config))
        return _cached[1]


def reset_hinos_client_cache() -> None:
    global _cached
    with _cache_lock:
        _cached = None


__all__ = [
    "HinosClient",
    "HinosCommitted",
    "HinosNotConfigured",
    "HinosPrepared",
    "get_hinos_client",
    "reset_hinos_client_cache",
]
