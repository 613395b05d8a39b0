"""Identifiers as clients send them: user, conversation, scenario and operation ids, and JSON-safe integers."""

from __future__ import annotations

import re

from memoryhub.errors import InvalidRequest

ID_PATTERN = re.compile(r"[A-Za-z0-9_.@-]{1,128}")
MAX_SAFE_INTEGER = 9_007_199_254_740_991  # Number.MAX_SAFE_INTEGER; revisions stay strictly below it


def validate_identifier(value: str, field: str) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise InvalidRequest(
            f"{field} must be 1-128 characters of A-Za-z0-9_.@-", details={"field": field}, code="invalid_id"
        )
    return value
