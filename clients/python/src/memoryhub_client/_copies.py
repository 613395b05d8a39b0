"""Several memories stored for one adapter item (concurrent creates of one key): which one is current.

memoryhub has no uniqueness on a content field, so two writers creating the same new item at once both succeed.
Both adapters answer only the current copy and delete the others at their next write (docs/clients.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from .errors import NotFound, RevisionConflict
from .models import Memory


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def current_copy(copies: Iterable[Memory]) -> Memory:
    """The most recently written (greatest `updatedAt`, then `createdAt`, then `id`: every reader picks the same)."""
    return max(copies, key=lambda m: (parse_time(m["updatedAt"]), parse_time(m["createdAt"]), m["id"]))


def deleted_since_listing(error: NotFound) -> RevisionConflict:
    """An update of a listed memory answered 404: another writer deleted it since the listing. That is a lost
    compare-and-set like any other, so it is reported as the documented RevisionConflict (re-read and decide)."""
    message = "the item was deleted by another writer since it was listed: re-read and decide again"
    return RevisionConflict(409, "revision_conflict", message, {"deleted": True}, error.headers)
