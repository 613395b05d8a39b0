"""Request bodies Django cannot read: refused with the envelope before anything else runs."""

from __future__ import annotations

from django.http import JsonResponse

from memoryhub.api.handler import envelope


class LengthRequiredMiddleware:
    """`Transfer-Encoding` (a chunked body, no Content-Length) is `411 length_required`.

    Django reads exactly CONTENT_LENGTH bytes of a body, so a chunked one read as empty: a PUT was judged on a
    body it never saw. Refusing is explicit; every client library can send a Content-Length.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get("HTTP_TRANSFER_ENCODING", "").strip():
            message = "send the body with a Content-Length: Transfer-Encoding (chunked bodies) is not supported"
            return JsonResponse(envelope("length_required", message), status=411)
        return self.get_response(request)
