"""The admission judge's model: the chat-completions client (`chat.py`) under the judge's service name.

The prompt and the reading of the model's answer belong to `memories.longterm.admission.judge`.
"""

from __future__ import annotations

from .chat import ChatCompletionsClient

SERVICE = "admission_judge"


class JudgeClient(ChatCompletionsClient):
    def __init__(self, url: str, model: str, api_key: str | None = None, timeout_seconds: float = 3.0):
        super().__init__(url, model, api_key, timeout_seconds, service=SERVICE)
