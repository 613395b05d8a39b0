"""Several memories stored for one adapter item (concurrent creates of one key): which one is current.

memoryhub has no uniqueness on a content field, so two writers creating the same new item at once both succeed.
Both adapters answer only the current copy and delete the others at their next write (docs/clients.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from .models import Memory


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def current_copy(copies: Iterable[Memory]) -> Memory:
    """The most recently written (greatest `updatedAt`, then `createdAt`, then `id`: every reader picks the same)."""
    return max(copies, key=lambda m: (parse_time(m["updatedAt"]), parse_time(m["createdAt"]), m["id"]))
