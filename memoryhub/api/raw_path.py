"""An encoded slash in a path is refused before routing: WSGI servers decode `%2F` into the path Django routes.

`DELETE /v1/users/victim%2Fconversations%2Fcx` arrives as PATH_INFO `/v1/users/victim/conversations/cx`: the user
id the client sent (`victim/conversations/cx`, escaped as it should be) would erase another resource, conversation
`cx` of user `victim` (docs/contract.md, "Identifiers"). Only the raw request line tells them apart: gunicorn passes
it as RAW_URI, and so does `manage.py runserver` here (memoryhub/devserver). No id of any kind may hold a `/`.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from django.http import JsonResponse
from django.urls import Resolver404, resolve

from memoryhub.identifiers import ID_RULE

from .handler import envelope

_ENCODED_SLASH = re.compile("%2f", re.IGNORECASE)


class EncodedSlashMiddleware:
    """`400 invalid_id` with `details.field` (the path parameter, camelCase; `path` if none) for a raw path
    holding `%2F`; nothing is read or written."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw = raw_path(request.META)
        if raw is not None and _ENCODED_SLASH.search(raw):
            field = _parameter_holding_slash(raw)
            message = f"{field} must be {ID_RULE}: a path segment holds an encoded slash (%2F)"
            return JsonResponse(envelope("invalid_id", message, {"field": field}), status=400)
        return self.get_response(request)


def raw_path(meta: dict) -> str | None:
    """The request line's path, still percent-encoded, when the server passed it (gunicorn's RAW_URI)."""
    raw = meta.get("RAW_URI") or meta.get("REQUEST_URI")
    if not raw:
        return None
    return urlsplit(raw).path if "://" in raw.split("?", 1)[0] else raw.split("?", 1)[0]


def _parameter_holding_slash(raw: str) -> str:
    """The URL pattern's parameter whose segment holds the slash, routed with a stand-in for that segment."""
    segments = raw.split("/")
    probe = "memoryhub-slash-probe"
    marked = [probe if _ENCODED_SLASH.search(segment) else unquote(segment) for segment in segments]
    try:
        match = resolve("/".join(marked))
    except Resolver404:
        return "path"
    for name, value in match.kwargs.items():
        if value == probe:
            return re.sub(r"_(\w)", lambda m: m.group(1).upper(), name)
    return "path"
