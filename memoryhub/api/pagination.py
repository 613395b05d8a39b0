"""The query parameters of a paged list endpoint (the paging itself is memoryhub.pagination)."""

from __future__ import annotations

from memoryhub.pagination import parse_limit


def page_params(request) -> tuple[str | None, int]:
    return request.query_params.get("cursor"), parse_limit(request.query_params.get("limit"))
