"""The diary summariser's model: the chat-completions client (`chat.py`) under the summariser's service name.

Prompting and parsing of the model's text belong to `diaries.summarizers`.
"""

from __future__ import annotations

from .chat import ChatCompletionsClient

SERVICE = "summarizer"


class SummarizerClient(ChatCompletionsClient):
    def __init__(self, url: str, model: str, api_key: str | None = None, timeout_seconds: float = 30.0):
        super().__init__(url, model, api_key, timeout_seconds, service=SERVICE)
