"""Client for the admission judge: an OpenAI-compatible `/chat/completions` endpoint.

Only the wire protocol lives here; the prompt and the reading of the model's answer belong to
`memories.longterm.admission.judge`. Every failure surfaces as a typed upstream error from `errors`
(UpstreamTimeout, UpstreamUnavailable for 5xx and connection failures, UpstreamProtocolError).
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import UpstreamProtocolError
from .http import make_client, new_request_id, post_json

SERVICE = "admission_judge"
_PATH = "/chat/completions"


class JudgeClient:
    """`url` is the API base (…/v1) or the full …/chat/completions address."""

    def __init__(self, url: str, model: str, api_key: str | None = None, timeout_seconds: float = 3.0):
        if not url:
            raise ValueError("url is required")
        if not model:
            raise ValueError("model is required")
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        trimmed = url.rstrip("/")
        self.base_url = trimmed[: -len(_PATH)] if trimmed.endswith(_PATH) else trimmed
        self.model = model
        self.api_key = api_key or None
        self.timeout_seconds = float(timeout_seconds)

    def _headers(self) -> dict[str, str]:
        headers = {"X-Request-Id": new_request_id()}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def complete(self, messages: list[dict[str, str]]) -> str:
        """Send `messages` (temperature 0) and return the first choice's text."""
        body = {"model": self.model, "messages": messages, "temperature": 0}
        with make_client(base_url=self.base_url, timeout_seconds=self.timeout_seconds) as client:
            response = post_json(client, _PATH, service=SERVICE, json=body, headers=self._headers())
        return _content(response)


def _content(response: object) -> str:
    if not isinstance(response, Mapping):
        raise _protocol_error("response is not a JSON object")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _protocol_error("response has no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, str):
        raise _protocol_error("choices[0].message.content is not a string")
    return content


def _protocol_error(problem: str) -> UpstreamProtocolError:
    return UpstreamProtocolError(
        f"{SERVICE} answered outside the chat completions protocol: {problem}",
        service=SERVICE,
        details={"problem": problem},
    )
