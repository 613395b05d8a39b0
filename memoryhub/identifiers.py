"""Identifiers as clients send them: user, conversation, scenario and operation ids, and JSON-safe integers."""

from __future__ import annotations

import re

from memoryhub.errors import InvalidRequest

# Not only dots: `.` and `..` are path segments every URL parser (httpx, WHATWG `fetch`) folds away, even written
# `%2e%2e`, so `DELETE …/conversations/..` would reach the user (docs/contract.md, "Identifiers").
ID_PATTERN = re.compile(r"(?!\.+\Z)[A-Za-z0-9_.@-]{1,128}")
# The same rule as an ECMA-262 regex for the OpenAPI document (JSON Schema's dialect has no \Z).
ID_PATTERN_OPENAPI = r"^(?!\.+$)[A-Za-z0-9_.@-]{1,128}$"
ID_RULE = "1-128 characters of A-Za-z0-9_.@-, not only dots"
MAX_SAFE_INTEGER = 9_007_199_254_740_991  # Number.MAX_SAFE_INTEGER; revisions stay strictly below it


def validate_identifier(value: str, field: str) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise InvalidRequest(f"{field} must be {ID_RULE}", details={"field": field}, code="invalid_id")
    return value


def only_dots(value: str) -> bool:
    """An id a URL parser would read as `.` or `..` (docs/contract.md, "Identifiers")."""
    return value != "" and value.strip(".") == ""
