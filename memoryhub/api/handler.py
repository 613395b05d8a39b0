"""The one exception handler: every error becomes the envelope, and the transaction is rolled back."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from functools import wraps

import redis.exceptions
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from memoryhub import errors
from memoryhub.clients.errors import DependencyUnavailable, UpstreamError, UpstreamTimeout

logger = logging.getLogger(__name__)

try:  # django-redis wraps connection errors in its own exception type
    from django_redis.exceptions import ConnectionInterrupted
except ImportError:  # pragma: no cover
    ConnectionInterrupted = redis.exceptions.ConnectionError

_REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, ConnectionInterrupted)

_DRF_CODES = {
    drf.ParseError: "invalid_request",
    drf.ValidationError: "invalid_request",
    drf.NotAuthenticated: "unauthenticated",
    drf.AuthenticationFailed: "unauthenticated",
    drf.PermissionDenied: "forbidden",
    drf.NotFound: "not_found",
    drf.MethodNotAllowed: "method_not_allowed",
    drf.NotAcceptable: "not_acceptable",
    drf.UnsupportedMediaType: "unsupported_media_type",
    drf.Throttled: "rate_limited",
}


# The one place domain errors become HTTP: the most specific class in an error's MRO wins.
STATUS_BY_ERROR: dict[type[Exception], int] = {
    errors.DomainError: 400,
    errors.MemoryTooLarge: 413,
    errors.PayloadTooLarge: 413,
    errors.PromptTooLarge: 413,
    errors.RejectedByPolicy: 422,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.InternalInconsistency: 500,
    errors.RequestTimedOut: 503,
    UpstreamError: 502,
    UpstreamTimeout: 504,
    DependencyUnavailable: 503,
}


def status_for(exc: Exception) -> int:
    return next(STATUS_BY_ERROR[cls] for cls in type(exc).__mro__ if cls in STATUS_BY_ERROR)


def envelope(code: str, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def envelope_exception_handler(exc: Exception, context: dict) -> Response | None:
    # A refusal to a key taken from its snapshot was confirmed by the view first (memoryhub/api/views.py).
    set_rollback()  # DRF's own handler does this; forgetting it would commit half a request
    status, body, headers = _describe(exc)
    return Response(body, status=status, headers=headers)


def _describe(exc: Exception) -> tuple[int, dict, dict]:
    if isinstance(exc, (errors.DomainError, UpstreamError)):
        return status_for(exc), envelope(exc.code, exc.message, exc.details), {}
    if isinstance(exc, drf.APIException):
        return _describe_drf(exc)
    if isinstance(exc, Http404):
        return 404, envelope("not_found", "not found"), {}
    if isinstance(exc, PermissionDenied):
        return 403, envelope("forbidden", "forbidden"), {}
    if isinstance(exc, RequestDataTooBig):
        return 413, envelope("request_too_large", "the request body is too large"), {}
    if isinstance(exc, _REDIS_DOWN):
        logger.warning("redis unavailable: %s", exc)
        return 503, envelope("storage_unavailable", "the cache (Redis) is unavailable", {"dependency": "redis"}), {}
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable: %s", exc)
        return 503, envelope("storage_unavailable", "the database is unavailable", {"dependency": "database"}), {}
    if isinstance(exc, DatabaseError):
        logger.exception("database error")
        return (
            503,
            envelope("storage_unavailable", "the database refused the operation", {"dependency": "database"}),
            {},
        )
    logger.exception("unhandled error")
    return 500, envelope("internal_error", "internal error"), {}


def dependency_outage(exc: Exception) -> dict | None:
    """The 503 envelope when `exc` is Redis or the database being down, else None: for edges outside DRF (/mcp)."""
    if isinstance(exc, (*_REDIS_DOWN, OperationalError, InterfaceError)):
        return _describe(exc)[1]
    return None


NO_CREDENTIALS = "no credentials: send the key as 'Authorization: Bearer <key>'"


def _describe_drf(exc: drf.APIException) -> tuple[int, dict, dict]:
    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "invalid_request")
    headers = {}
    if isinstance(exc, drf.Throttled) and exc.wait:
        headers["Retry-After"] = str(int(exc.wait) + 1)
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, drf.NotAuthenticated):  # DRF's words do not say how to send them
        return exc.status_code, envelope(code, NO_CREDENTIALS), headers
    if isinstance(exc.detail, (dict, list)):
        return exc.status_code, envelope(code, "the request is invalid", {"fields": _flatten(exc.detail)}), headers
    return exc.status_code, envelope(code, str(exc.detail), getattr(exc, "details", None)), headers


def _flatten(detail: object, prefix: str = "") -> dict[str, str]:
    """Turn DRF's nested error detail into {"field.path": "message"}."""
    if isinstance(detail, dict):
        out: dict[str, str] = {}
        for key, value in detail.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return {prefix or "non_field_errors": " ".join(str(item) for item in detail)}
        out = {}
        for index, value in enumerate(detail):
            out.update(_flatten(value, f"{prefix}[{index}]"))
        return out
    return {prefix or "non_field_errors": str(detail)}


# Django-level handlers for what never reaches DRF (unknown URLs, crashes outside views).
def json_404(request, exception=None) -> JsonResponse:
    return JsonResponse(envelope("not_found", f"no such endpoint: {request.path}"), status=404)


def json_500(request) -> JsonResponse:
    # Django calls this inside its `except`: a domain error raised outside DRF (a request past gunicorn's
    # timeout, memoryhub/gunicorn.conf.py) still answers its own status and code.
    exc = sys.exc_info()[1]
    if isinstance(exc, errors.DomainError):
        return JsonResponse(envelope(exc.code, exc.message, exc.details), status=status_for(exc))
    return JsonResponse(envelope("internal_error", "internal error"), status=500)


def json_400(request, exception=None) -> JsonResponse:
    return JsonResponse(envelope("invalid_request", "bad request"), status=400)


def json_403(request, exception=None) -> JsonResponse:
    return JsonResponse(envelope("forbidden", "forbidden"), status=403)


def read_only_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A plain Django view that only reads (the landing page, health, metrics): GET and HEAD. Any other method is
    the API's JSON 405 — before the CSRF check, which would answer a browser's HTML page to a POST."""

    @csrf_exempt
    @wraps(view)
    def only_reads(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            message = f'method "{request.method}" not allowed; use GET'
            refused = JsonResponse(envelope("method_not_allowed", message), status=405)
            refused["Allow"] = "GET, HEAD"
            return refused
        return view(request, *args, **kwargs)

    return only_reads
