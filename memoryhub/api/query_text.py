"""Query strings get the body's rule (memoryhub/json_text.py): a NUL in a parameter is 400, not a database error."""

from __future__ import annotations

from django.http import JsonResponse

from memoryhub import json_text

from .handler import envelope


class StorableQueryMiddleware:
    """Refuse a query string whose names or values hold NUL (`%00`) with `400 invalid_request`, `details.field`.

    For every path: Django's own 400 is the envelope too (handler.json_400). Lone surrogates cannot arrive this
    way (Django decodes invalid UTF-8 in a query string to U+FFFD), but the one check covers them anyway."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get("QUERY_STRING"):
            for name, values in request.GET.lists():
                for text in (name, *values):
                    problem = json_text.text_problem(text)
                    if problem is not None:
                        field = json_text.printable(name)
                        message = f"the query parameter {field!r} {problem}"
                        return JsonResponse(envelope("invalid_request", message, {"field": field}), status=400)
        return self.get_response(request)
