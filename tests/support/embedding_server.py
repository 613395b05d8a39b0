"""A tiny OpenAI-compatible `POST /embeddings` server backed by the bundled local model.

Used by tests and bench/search.py to exercise the HTTP embedder path with real vectors (from the repository root):

    python -m tests.support.embedding_server --port 8765 [--model NAME] [--api-key KEY] [--local e5-small]

`--local` picks the bundled model (`use`, the default here, `e5-small`, `e5-minilm` or `e5-use-minilm`,
memoryhub's default). e5 encodes a
search text unlike a record; OpenAI's API has no field for that, so with `--query-model NAME` a request for
model NAME gets the query-side vectors and a request for `--model` the record-side ones.

Standard library only (no Django). `--truncate N` cuts every returned vector to N floats, to inject
an embedding-dimension error *after* the real model answered.
"""

from __future__ import annotations

import argparse
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from memoryhub.clients.embeddings import (
    LOCAL_CHOICES,
    LOCAL_MODEL,
    LOCAL_USE,
    Embedder,
    LocalUSEEmbedder,
    embed_queries,
    local_embedder,
)

MAX_INPUTS = 2048
MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass
class ServerOptions:
    model: str = LOCAL_MODEL
    api_key: str | None = None
    truncate: int | None = None
    query_model: str | None = None  # the name under which search texts are embedded (asymmetric models)


class _BadRequest(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _parse_inputs(body: object, options: ServerOptions, dimension: int) -> tuple[list[str], bool]:
    """The texts to embed, and whether they are search texts (a request for `query_model`)."""
    if not isinstance(body, dict):
        raise _BadRequest(400, "invalid_request_error", "body must be a JSON object")
    query = options.query_model is not None and body.get("model") == options.query_model
    if body.get("model") != options.model and not query:
        # Serving another model's name would silently break the caller's embedding identity.
        raise _BadRequest(404, "model_not_found", f"this server only serves model {options.model!r}")
    dimensions = body.get("dimensions")
    if dimensions is not None and dimensions != dimension:
        raise _BadRequest(400, "invalid_request_error", f"only dimensions={dimension} is supported")
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs or not all(isinstance(item, str) for item in inputs):
        raise _BadRequest(400, "invalid_request_error", "input must be a string or a non-empty list of strings")
    if len(inputs) > MAX_INPUTS:
        raise _BadRequest(400, "invalid_request_error", f"at most {MAX_INPUTS} inputs per request")
    return inputs, query


def _response(vectors: list[list[float]], inputs: list[str], options: ServerOptions) -> dict:
    if options.truncate is not None:
        vectors = [vector[: options.truncate] for vector in vectors]
    tokens = sum(len(text.split()) or 1 for text in inputs)  # rough count; only informative
    return {
        "object": "list",
        "model": options.model,
        "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def make_server(
    host: str = "127.0.0.1", port: int = 0, *, options: ServerOptions | None = None, embedder: Embedder | None = None
) -> ThreadingHTTPServer:
    """Build (not start) the server; port 0 picks a free port (see `server.server_address`)."""
    opts = options or ServerOptions()
    backend = embedder or LocalUSEEmbedder()
    identity = getattr(backend, "identity", None)
    dimension = identity.dimension if identity is not None else LocalUSEEmbedder.identity.dimension
    # Load the weights before the first request: the bundled default is e5 now, so nothing else in the
    # process has loaded USE, and its seconds of loading must not count against a client's timeout.
    backend.embed(["warm-up"])

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as httpx pools connections

        def log_message(self, *args) -> None:  # benchmarks measure; they don't need access logs
            pass

        def do_POST(self) -> None:
            try:
                self._check_route_and_auth()
                inputs, query = _parse_inputs(self._read_json(), opts, dimension)
                vectors = embed_queries(backend, inputs) if query else backend.embed(inputs)
                self._send(200, _response(vectors, inputs, opts))
            except _BadRequest as exc:
                self._send(exc.status, {"error": {"type": exc.code, "message": exc.message}})
            except Exception as exc:  # the model failed: report as a server error, like a real API
                self._send(500, {"error": {"type": "server_error", "message": str(exc)}})

        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/models":
                self._send(200, {"object": "list", "data": [{"id": opts.model, "object": "model"}]})
            else:
                self._send(404, {"error": {"type": "not_found", "message": "no such route"}})

        def _check_route_and_auth(self) -> None:
            if self.path.split("?")[0].rstrip("/") not in ("/embeddings", "/v1/embeddings"):
                self._drain()
                raise _BadRequest(404, "not_found", "no such route")
            if opts.api_key and self.headers.get("authorization") != f"Bearer {opts.api_key}":
                self._drain()
                raise _BadRequest(401, "invalid_api_key", "missing or wrong API key")

        def _drain(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if 0 < length <= MAX_BODY_BYTES:
                self.rfile.read(length)

        def _read_json(self) -> object:
            length = int(self.headers.get("content-length") or 0)
            if length <= 0 or length > MAX_BODY_BYTES:
                raise _BadRequest(400, "invalid_request_error", "a JSON body of bounded size is required")
            try:
                return json.loads(self.rfile.read(length))
            except ValueError as exc:
                raise _BadRequest(400, "invalid_request_error", "body is not JSON") from exc

        def _send(self, status: int, body: dict) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            if status >= 400:  # the request body may be unread: don't reuse this connection
                self.send_header("connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    return server


def serve_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible embeddings from the bundled local model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--model", default=LOCAL_MODEL, help="model name clients must request")
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--truncate", type=int, default=None, help="cut vectors to N floats (fault injection)")
    parser.add_argument("--local", choices=LOCAL_CHOICES, default=LOCAL_USE, help="the bundled model that embeds")
    parser.add_argument("--query-model", default=None, help="model name whose requests are embedded as search texts")
    args = parser.parse_args(argv)
    embedder = local_embedder(args.local)
    embedder.embed(["warm-up"])  # load the weights before accepting traffic
    server = make_server(
        args.host,
        args.port,
        embedder=embedder,
        options=ServerOptions(
            model=args.model, api_key=args.api_key, truncate=args.truncate, query_model=args.query_model
        ),
    )
    host, port = server.server_address[:2]
    print(f"embedding server on http://{host}:{port} model={args.model}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
