"""WSGI middleware: read what a request left unread of its body before the server closes the connection.

A view refuses some requests without reading their body: one over DATA_UPLOAD_MAX_MEMORY_SIZE (413), one
without a key (401), an unknown path (404). gunicorn's sync worker then closes the connection, draining only
64 KiB; closing a socket with more unread makes the kernel answer with a reset, and a client still sending
its body never reads the answer (docs/production.md). So the rest of the body is read and discarded after
the answer is written, for at most DRAIN_SECONDS; a client that stops sending or goes away ends it sooner.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

logger = logging.getLogger(__name__)

DRAIN_SECONDS = 10.0
_CHUNK = 64 * 1024


class _CountedBody:
    """`wsgi.input` limited to CONTENT_LENGTH (as Django reads it), counting what is still unread."""

    def __init__(self, stream, length: int) -> None:
        self._stream = stream
        self.unread = length

    def read(self, size: int | None = -1) -> bytes:
        size = self.unread if size is None or size < 0 else min(size, self.unread)
        data = self._stream.read(size) if size else b""
        self.unread -= len(data)
        return data

    def readline(self, size: int | None = -1) -> bytes:
        size = self.unread if size is None or size < 0 else min(size, self.unread)
        line = self._stream.readline(size) if size else b""
        self.unread -= len(line)
        return line


class DrainUnreadBody:
    def __init__(self, app: Callable, *, seconds: float = DRAIN_SECONDS) -> None:
        self.app = app
        self.seconds = seconds

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        length = _content_length(environ)
        if not length:
            return self.app(environ, start_response)
        body = environ["wsgi.input"] = _CountedBody(environ["wsgi.input"], length)
        result = self.app(environ, start_response)
        if not body.unread:
            return result  # the usual case: unwrapped, so the server's file_wrapper path still applies
        return _ThenDrain(result, lambda: _drain(body, environ.get("gunicorn.socket"), self.seconds))


class _ThenDrain:
    """The application's answer, then (when the server closes it, after writing it) the drain."""

    def __init__(self, result: Iterable[bytes], drain: Callable[[], None]) -> None:
        self._result = result
        self._drain = drain

    def __iter__(self):
        return iter(self._result)

    def close(self) -> None:
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
        finally:
            self._drain()


def _drain(body: _CountedBody, sock, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    try:
        while body.unread and (left := deadline - time.monotonic()) > 0:
            if sock is not None:
                sock.settimeout(left)  # a client that stops sending must not hold the worker past the deadline
            if not body.read(_CHUNK):
                return  # the client went away
    except Exception as exc:  # a reset, a timeout, gunicorn's NoMoreData: the client is gone or too slow
        logger.debug("stopped reading an unread request body: %r", exc)


def _content_length(environ: dict) -> int:
    try:
        return max(int(environ.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0
