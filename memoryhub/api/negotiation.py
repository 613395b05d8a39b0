"""Content negotiation with a shortcut for what nearly every client sends: no Accept header, `*/*` or JSON."""

from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation

JSON = "application/json"
ANSWERED_WITH_JSON = frozenset(("*/*", JSON))  # exactly; an empty Accept is a 406 for DRF


class JSONFirstContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, except that a request any JSON renderer would satisfy skips parsing the Accept list.

    DRF parses and ranks the Accept header on every request; for these values it always picks the first
    renderer when that one renders JSON, and so does this (tests/test_negotiation.py compares the two).
    """

    def select_renderer(self, request, renderers, format_suffix=None):
        accept = request.META.get("HTTP_ACCEPT", "*/*")  # DRF reads a missing header as */*
        if (
            renderers
            and renderers[0].media_type == JSON
            and accept in ANSWERED_WITH_JSON
            and format_suffix is None
            and self.settings.URL_FORMAT_OVERRIDE not in request.query_params
        ):
            return renderers[0], JSON
        return super().select_renderer(request, renderers, format_suffix)
