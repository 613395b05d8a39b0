"""The variable registry: which variables exist and which app produces each one.

Apps register producers in AppConfig.ready; the core never imports diaries, tables or Hinos code.
"""
from __future__ import annotations

from collections.abc import Callable

from memoryhub.working_set import Scope

from .base import Producer, RecallRequest, SourceResult

KNOWN_VARIABLES: dict[str, str] = {
    "jsonMemory": "the conversation's JSON memory document as compact JSON text",
    "preferences": "the user's long-term preference memories as text",
    "compassMemory": "the newest diary summaries of the conversation",
    "memoryTable": "the conversation's memory tables rendered as prompt text",
    "hinosMemory": "memory text served by the Hinos external memory service",
}
BUILTIN_VARIABLES: dict[str, str] = {"userMessage": "the current user message"}

_producers: dict[str, Producer] = {}
# Which working-set entries a producer will read, so a turn can fetch all of them in one round trip.
_scopes: dict[str, Callable[[RecallRequest], list[Scope]]] = {}


def register_producer(
    variable: str, producer: Producer, *, scopes: Callable[[RecallRequest], list[Scope]] | None = None
) -> None:
    if variable not in KNOWN_VARIABLES:
        raise ValueError(f"unknown variable {variable!r}")
    _producers[variable] = producer
    if scopes is not None:
        _scopes[variable] = scopes


def declared_scopes(requests: list[RecallRequest]) -> list[Scope]:
    return [scope for r in requests if r.source.variable in _scopes for scope in _scopes[r.source.variable](r)]


def get_producer(variable: str) -> Producer | None:
    return _producers.get(variable)


def produce(request: RecallRequest) -> SourceResult:
    """Run the registered producer; a variable with no producer yields empty text and says so."""
    producer = get_producer(request.source.variable)
    if producer is None:
        return SourceResult(text="", status="unavailable", details={"reason": "no producer is installed for this variable"})
    return producer(request)
