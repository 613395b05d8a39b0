"""Who performed a write: an API key, an operator or a model through a tool token."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    type: str  # "api_key" | "operator" | "tool"
    id: str

    @classmethod
    def operator(cls, username: str) -> Actor:
        return cls("operator", username)

    def __str__(self) -> str:
        return f"{self.type}:{self.id}"
