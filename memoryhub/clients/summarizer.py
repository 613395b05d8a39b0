"""Client for an OpenAI-compatible `/chat/completions` endpoint (the diary summariser's model).

Only the wire protocol lives here; prompting and parsing of the model's text belong to
`diaries.summarizers`. Every failure surfaces as a typed upstream error from `errors`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import UpstreamProtocolError
from .http import make_client, new_request_id, post_json

SERVICE = "summarizer"


class ChatCompletionsClient:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_seconds: float = 30.0):
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        self.base_url = base_url
        self.model = model
        self.api_key = api_key or None
        self.timeout_seconds = float(timeout_seconds)

    def _headers(self) -> dict[str, str]:
        headers = {"X-Request-Id": new_request_id()}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def complete(self, messages: list[dict[str, str]]) -> str:
        """Send `messages` and return the first choice's text.

        Raises UpstreamTimeout, UpstreamUnavailable (5xx, connection) or UpstreamProtocolError (shape).
        """
        body = {"model": self.model, "messages": messages, "temperature": 0}
        # A client per call: calls are rare (one per diary) and this stays safe across Celery forks.
        with make_client(base_url=self.base_url, timeout_seconds=self.timeout_seconds) as client:
            response = post_json(client, "/chat/completions", service=SERVICE, json=body, headers=self._headers())
        return extract_content(response)


def extract_content(response: object) -> str:
    """`choices[0].message.content` as a string, or UpstreamProtocolError naming what is wrong."""
    if not isinstance(response, Mapping):
        raise _protocol_error("response is not a JSON object")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _protocol_error("response has no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        raise _protocol_error("choices[0].message is missing")
    content = message.get("content")
    if not isinstance(content, str):
        raise _protocol_error("choices[0].message.content is not a string")
    return content


def _protocol_error(problem: str) -> UpstreamProtocolError:
    return UpstreamProtocolError(
        f"{SERVICE} answered outside the chat completions protocol: {problem}",
        service=SERVICE,
        details={"problem": problem},
    )
