"""The variable registry: which variables exist and which app produces each one.

Apps register producers in AppConfig.ready; the core never imports diaries, tables or Hinos code.
"""
from __future__ import annotations

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


def register_producer(variable: str, producer: Producer) -> None:
    if variable not in KNOWN_VARIABLES:
        raise ValueError(f"unknown variable {variable!r}")
    _producers[variable] = producer


def get_producer(variable: str) -> Producer | None:
    return _producers.get(variable)


def produce(request: RecallRequest) -> SourceResult:
    """Run the registered producer; a variable with no producer yields empty text and says so."""
    producer = get_producer(request.source.variable)
    if producer is None:
        return SourceResult(text="", status="unavailable", details={"reason": "no producer is installed for this variable"})
    return producer(request)
