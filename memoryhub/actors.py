"""Who performed a write: an API key, an operator or a model through a tool token."""

from __future__ import annotations

from dataclasses import dataclass

TYPES = ("api_key", "operator", "tool")


@dataclass(frozen=True)
class Actor:
    type: str  # "api_key" | "operator" | "tool"
    id: str

    @classmethod
    def operator(cls, username: str) -> Actor:
        return cls("operator", username)

    @classmethod
    def parse(cls, text: str) -> Actor:
        """The actor `str(actor)` wrote (`api_key:mhk_…`); text without a known type is an API key's id."""
        kind, sep, ident = text.partition(":")
        return cls(kind, ident) if sep and kind in TYPES else cls("api_key", text)

    def __str__(self) -> str:
        return f"{self.type}:{self.id}"
