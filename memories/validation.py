"""Input rules shared by the API, the admin and the model-facing tools (one validation path)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from memoryhub.errors import InvalidMemory, InvalidRequest, MemoryTooLarge
from memoryhub.identifiers import MAX_SAFE_INTEGER

MAX_MEMORY_BYTES = 65_536
MAX_MEMORY_DEPTH = 32
# A conversation's messages: a user message as a prepare takes it, a reply as a complete takes it; an edit of a
# stored message gets its role's limit, so no edit stores a message no turn could have sent.
MAX_MESSAGE_CHARS = {"user": 100_000, "assistant": 200_000}


def validate_message_length(role: str, content: str, field: str) -> str:
    """`content` within its role's limit, else 400 naming `field` in the serializers' words (details.fields)."""
    limit = MAX_MESSAGE_CHARS[role]
    if len(content) > limit:
        message = f"Ensure this field has no more than {limit} characters."
        raise InvalidRequest(message, details={"fields": {field: message}})
    return content


def validate_revision(value: object, field: str = "expectedRevision") -> int:
    # bool is an int subclass in Python; JSON true must not pass as revision 1.
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_SAFE_INTEGER:
        raise InvalidRequest(
            f"{field} must be an integer with 0 <= {field} < {MAX_SAFE_INTEGER}", details={"field": field}
        )
    return value


def compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def json_depth(value: object) -> int:
    """Nesting depth counting objects and arrays only; iterative so hostile input cannot recurse."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[object]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def validate_memory(memory: object) -> str:
    """Check a memory document (M4) and return its compact serialization."""
    if not isinstance(memory, dict):
        raise InvalidMemory("memory must be a JSON object", details={"field": "memory"})
    depth = json_depth(memory)
    if depth > MAX_MEMORY_DEPTH:
        raise InvalidMemory(
            f"memory is nested {depth} levels deep; the limit is {MAX_MEMORY_DEPTH}",
            details={"field": "memory", "depth": depth, "limit": MAX_MEMORY_DEPTH},
        )
    serialized = compact_json(memory)
    size = len(serialized.encode("utf-8"))
    if size > MAX_MEMORY_BYTES:
        raise MemoryTooLarge(
            f"memory is {size} bytes serialized; the limit is {MAX_MEMORY_BYTES}",
            details={"field": "memory", "bytes": size, "limit": MAX_MEMORY_BYTES},
        )
    return serialized
