"""Frozen data passed between the turn pipeline, runtimes and variable producers."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

SourceStatus = Literal["ok", "empty", "error", "unavailable"]


@dataclass(frozen=True)
class SourceConfig:
    """One entry of a scenario's memorySources."""

    id: str
    agent_ref: str
    variable: str
    priority: int = 0


@dataclass(frozen=True)
class RecallRequest:
    """Everything a producer may use; identity comes from the authenticated product, never from model output."""

    product: Any
    user_id: str
    conversation_id: str
    source: SourceConfig
    scenario: Any = None
    user_message: str = ""
    subscription_category: str | None = None
    round: int = 0


@dataclass(frozen=True)
class SourceResult:
    """What one source produced for a turn, with the revision/version it was read at."""

    text: str
    status: SourceStatus
    revision: int | None = None
    version: int | None = None
    details: dict = field(default_factory=dict)
    cached: bool = False


class Producer(Protocol):
    def __call__(self, request: RecallRequest) -> SourceResult: ...


def empty_result(reason: str) -> SourceResult:
    return SourceResult(text="", status="empty", details={"reason": reason})
