"""This app's variable producer, jsonMemory; registered in MemoriesConfig.ready."""

from __future__ import annotations

from memoryhub import working_set
from memoryhub.runtimes.base import RecallRequest, SourceResult


def produce_json_memory(request: RecallRequest) -> SourceResult:
    from memories.selectors.documents import memory_document_get
    from memories.services.documents import json_memory_scope
    from memories.validation import compact_json

    address = request.address
    (revision, memory), cached = working_set.get_or_build(
        json_memory_scope(address), lambda: memory_document_get(address)
    )
    if memory is None:
        return SourceResult(
            text="", status="empty", revision=0, details={"reason": "no memory written yet"}, cached=cached
        )
    return SourceResult(text=compact_json(memory), status="ok", revision=revision, cached=cached)


def json_memory_scopes(request: RecallRequest) -> list[working_set.Scope]:
    from memories.services.documents import json_memory_scope

    return [json_memory_scope(request.address)]
