"""A real HTTP server on 127.0.0.1 for testing outbound clients against the wire protocol.

Test doubles are allowed only for services that cannot run here (hosted LLMs, embedding APIs,
a remote Hinos); this server lets the real client code do real HTTP.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: object = None
    raw: bytes | None = None
    delay_seconds: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[RecordedRequest], Reply]


class StubHttpServer:
    """Serve `routes[(method, path)]` handlers; record every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.requests: list[RecordedRequest] = []
        self._stop = threading.Event()
        server = self

        class _RequestHandler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
                )
                server.requests.append(request)
                handler = server.routes.get((self.command, self.path.split("?")[0]))
                reply = handler(request) if handler else Reply(404, {"error": "no route"})
                if reply.delay_seconds:
                    server._stop.wait(reply.delay_seconds)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _RequestHandler)
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for it (0.5 s by default).
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def route(self, method: str, path: str, handler: Handler | Reply) -> None:
        self.routes[(method, path)] = handler if callable(handler) else (lambda _request, _reply=handler: _reply)

    def reset(self) -> StubHttpServer:
        """Forget routes and recorded requests, so one server can serve a whole test session."""
        self.routes.clear()
        self.requests.clear()
        return self

    def start(self) -> StubHttpServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
