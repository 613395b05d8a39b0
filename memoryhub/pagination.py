"""Keyset (cursor) pagination: `{"results": [...], "next": cursor|null}`; stable under concurrent inserts."""

from __future__ import annotations

import base64
import json

from django.db.models import QuerySet

from memoryhub.errors import InvalidRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def parse_limit(raw: str | int | None, default: int = DEFAULT_LIMIT) -> int:
    if raw in (None, ""):
        return default
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        raise InvalidRequest(
            f"limit must be an integer between 1 and {MAX_LIMIT}", details={"field": "limit"}
        ) from None
    if isinstance(raw, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be an integer between 1 and {MAX_LIMIT}", details={"field": "limit"})
    return limit


def encode_cursor(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def decode_cursor(raw: str | None) -> object | None:
    if not raw:
        return None
    try:
        return json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (ValueError, TypeError, RecursionError):  # a forged cursor of nested brackets must not be a 500
        raise InvalidRequest("cursor is not valid", details={"field": "cursor"}) from None


def keyset_page(
    queryset: QuerySet,
    *,
    field: str,
    descending: bool,
    cursor: str | None,
    limit: int,
    key_type: type[int] | type[str] = int,
) -> tuple[list, str | None]:
    """Page `queryset` ordered by the unique `field` (an integer, or text with key_type=str); the cursor is the
    last value seen, so rows written or deleted meanwhile never shift the rows still to come."""
    after = decode_cursor(cursor)
    if after is not None:
        if not _storable(after, key_type):
            raise InvalidRequest("cursor is not valid", details={"field": "cursor"})
        queryset = queryset.filter(**{f"{field}__lt" if descending else f"{field}__gt": after})
    rows = list(queryset.order_by(f"-{field}" if descending else field)[: limit + 1])
    next_cursor = encode_cursor(getattr(rows[limit - 1], field)) if len(rows) > limit else None
    return rows[:limit], next_cursor


def _storable(value: object, key_type: type) -> bool:
    """A forged cursor holds a value the column could hold, or the database answers 500/503 instead of 400."""
    if type(value) is not key_type:  # exact type: a JSON true is not the integer 1
        return False
    if isinstance(value, str):
        return value.isprintable()  # no NUL (PostgreSQL refuses it) nor lone surrogate (not UTF-8)
    return True
