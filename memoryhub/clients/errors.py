"""Typed failures of outbound calls; memoryhub.api.handler maps them to 502, 503 or 504."""

from __future__ import annotations


class UpstreamError(Exception):
    """An outbound dependency failed; `code` is the envelope's error code."""

    code = "upstream_failed"

    def __init__(self, message: str, *, service: str, details: dict | None = None):
        super().__init__(message)
        self.message = message
        self.service = service
        self.details = {"service": service, **(details or {})}

    def __reduce__(self):
        # Celery pickles a failed task's exception; keyword-only arguments need an explicit recipe.
        return (_rebuild, (type(self), self.message, self.service, self.details))


class UpstreamTimeout(UpstreamError):
    """The dependency did not answer within its timeout."""

    code = "upstream_timeout"


class UpstreamUnavailable(UpstreamError):
    """The dependency could not be reached (connection refused, DNS, 5xx)."""

    code = "upstream_failed"


class UpstreamProtocolError(UpstreamError):
    """The dependency answered, but not in its protocol (shape, types, dimension)."""

    code = "upstream_failed"


class DependencyUnavailable(UpstreamError):
    """A dependency memoryhub cannot work without right now (e.g. the embedder): 503."""

    code = "dependency_unavailable"


def _rebuild(cls: type[UpstreamError], message: str, service: str, details: dict) -> UpstreamError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.message, error.service, error.details = message, service, details
    return error
