"""The one client for an OpenAI-compatible `/chat/completions` endpoint (the admission judge, the summariser).

Only the wire protocol lives here; prompting and reading the model's text belong to the caller
(`memories.longterm.admission.judge`, `diaries.summarizers`). Every failure surfaces as a typed upstream
error from `errors` naming the caller's service: UpstreamTimeout, UpstreamUnavailable (5xx, connection
failures) or UpstreamProtocolError (the answer's shape).
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import UpstreamProtocolError
from .http import make_client, new_request_id, post_json

PATH = "/chat/completions"


class ChatCompletionsClient:
    """`url` is the API base (…/v1) or the full …/chat/completions address; `service` names it in errors."""

    def __init__(
        self, url: str, model: str, api_key: str | None = None, timeout_seconds: float = 30.0, *, service: str
    ):
        if not url:
            raise ValueError("url is required")
        if not model:
            raise ValueError("model is required")
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        trimmed = url.rstrip("/")
        self.base_url = trimmed[: -len(PATH)] if trimmed.endswith(PATH) else trimmed
        self.model = model
        self.api_key = api_key or None
        self.timeout_seconds = float(timeout_seconds)
        self.service = service

    def _headers(self) -> dict[str, str]:
        headers = {"X-Request-Id": new_request_id()}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def complete(self, messages: list[dict[str, str]]) -> str:
        """Send `messages` (temperature 0) and return the first choice's text."""
        body = {"model": self.model, "messages": messages, "temperature": 0}
        # A client per call: calls are rare (a diary, an admission) and this stays safe across Celery forks.
        with make_client(base_url=self.base_url, timeout_seconds=self.timeout_seconds) as client:
            response = post_json(client, PATH, service=self.service, json=body, headers=self._headers())
        return self.content(response)

    def content(self, response: object) -> str:
        """`choices[0].message.content` as a string, or UpstreamProtocolError naming what is wrong."""
        if not isinstance(response, Mapping):
            raise self._protocol_error("response is not a JSON object")
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise self._protocol_error("response has no choices")
        first = choices[0]
        message = first.get("message") if isinstance(first, Mapping) else None
        if not isinstance(message, Mapping):
            raise self._protocol_error("choices[0].message is missing")
        content = message.get("content")
        if not isinstance(content, str):
            raise self._protocol_error("choices[0].message.content is not a string")
        return content

    def _protocol_error(self, problem: str) -> UpstreamProtocolError:
        return UpstreamProtocolError(
            f"{self.service} answered outside the chat completions protocol: {problem}",
            service=self.service,
            details={"problem": problem},
        )
