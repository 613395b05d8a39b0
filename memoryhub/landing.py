"""The landing page at `/`: what memoryhub is, where to go next, and the version (HTML, or JSON on request)."""

from __future__ import annotations

import re
from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_safe
from markdown_it import MarkdownIt

from memoryhub import __version__

DESCRIPTION = (
    "memoryhub gives AI chat, role-play and agent products their memory and state: revisioned JSON memories, "
    "long-term preferences, diaries, memory tables and the Hinos protocol, behind one REST API.",
    "Each scenario picks a memory runtime and its sources, and every prepared turn records exactly what the "
    "model was given.",
)
FIRST_SESSION_HEADING = "## A first session with curl"
README_ADDRESS = "http://127.0.0.1:8000"  # the README's commands name the default serve address


@cache
def first_session_html() -> SafeString:
    """The first session rendered from Markdown; raw HTML in the README is escaped, never passed through."""
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    return mark_safe(markdown.render(first_session()))  # html disabled: every tag in it is the renderer's


@cache
def first_session() -> str:
    """The README's first-session section (its prose and commands), shown on the page under #first-session."""
    try:
        text = (settings.BASE_DIR / "README.md").read_text(encoding="utf-8")
    except OSError:
        return ""
    start = text.find(FIRST_SESSION_HEADING)
    if start < 0:
        return ""
    body = text[start + len(FIRST_SESSION_HEADING) :]
    following = re.search(r"^## ", body, flags=re.MULTILINE)
    return (body[: following.start()] if following else body).strip()


def _with_this_address(html: SafeString, request: HttpRequest) -> SafeString:
    """The session's commands aimed at the server that serves the page (another port, a real host)."""
    here = request.build_absolute_uri("/").rstrip("/")
    return mark_safe(html.replace(README_ADDRESS, escape(here)))  # the address escaped, the rest as rendered


def links(request: HttpRequest) -> dict[str, str]:
    return {
        "apiDocs": request.build_absolute_uri("/api/docs/"),
        "openapi": request.build_absolute_uri("/api/schema/"),
        "admin": request.build_absolute_uri("/admin/"),
        "readyz": request.build_absolute_uri("/readyz"),
        "firstSession": request.build_absolute_uri("/#first-session"),
    }


@require_safe
def landing(request: HttpRequest) -> HttpResponse:
    """JSON when the client prefers it (`Accept: application/json`), HTML otherwise (a browser, plain curl)."""
    if request.get_preferred_type(["text/html", "application/json"]) == "application/json":
        return JsonResponse(
            {"name": "memoryhub", "version": __version__, "description": " ".join(DESCRIPTION), "links": links(request)}
        )
    context = {
        "description": DESCRIPTION,
        "version": __version__,
        "links": links(request),
        "session": _with_this_address(first_session_html(), request),
    }
    return render(request, "landing.html", context)
