"""A reverse proxy on 127.0.0.1 that adds `Authorization: Bearer <tool token>` to every request it forwards.

The MCP conformance harness connects as an anonymous client (it has no option for a credential), while /mcp
answers 401 without a tool token. The proxy plays the part of an MCP client's configured credential and nothing
else: method, path, body and every other header (Host, Origin, MCP-Protocol-Version, …) pass through unchanged,
and the server's status, headers and body come back unchanged.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class AuthProxy:
    def __init__(self, upstream: str, token: str) -> None:
        target = urlsplit(upstream)
        assert target.hostname and target.port
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                proxy.requests += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                headers.setdefault("Authorization", f"Bearer {token}")
                upstream_conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                try:
                    upstream_conn.request(self.command, self.path, body=body, headers=headers)
                    response = upstream_conn.getresponse()
                    payload = response.read()
                finally:
                    upstream_conn.close()
                self.send_response_only(response.status, response.reason)  # the server's own Date and Server
                for key, value in response.getheaders():
                    if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = _forward

            def log_message(self, format: str, *args: object) -> None:  # quiet: the harness reports
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> AuthProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
