"""Under gunicorn, a body over DATA_UPLOAD_MAX_MEMORY_SIZE gets its 413 envelope on every endpoint.

The view refuses such a body without reading it; gunicorn's sync worker closes the connection right after the
answer, and closing a socket with megabytes unread makes the kernel reset the connection, so the client saw no
answer at all (memoryhub/wsgi.py drains the rest of the body first). gunicorn runs on the test database: these
tests need PostgreSQL.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator

import pytest
from django.conf import settings

from tests.support.processes import start_web_server

CONVERSATION = "/v1/users/u1/conversations/c1"


@pytest.fixture(scope="module")
def server():
    running = start_web_server(workers=1)
    yield running
    running.stop()


def _oversized() -> bytes:
    padding = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 512 * 1024)  # ~3 MB
    return json.dumps({"padding": padding}).encode()


def _paced(body: bytes, chunk: int = 128 * 1024) -> Iterator[bytes]:
    """The body as a client on a real network sends it: still arriving after the server has answered (on
    loopback the kernel's buffers would swallow megabytes at once and hide a reset)."""
    for start in range(0, len(body), chunk):
        yield body[start : start + chunk]
        time.sleep(0.02)


def _send(server, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict]:
    """Send the whole body, then read the answer, as http.client (and requests) do."""
    body = _oversized()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {**headers, "Content-Type": "application/json", "Content-Length": str(len(body))}
        connection.request(method, path, body=_paced(body), headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", f"{CONVERSATION}/memory"),
        ("POST", "/v1/users/u1/memories"),
        ("POST", "/v1/users/u1/memories/search"),
        ("POST", "/v1/scenarios"),
        ("PATCH", "/v1/scenarios/s1"),
        ("POST", f"{CONVERSATION}/turns"),
        ("POST", "/hinos/v1/memory/prepare"),
    ],
)
def test_every_oversized_body_is_answered_413_with_the_envelope(server, alice, method, path):
    headers = {"Authorization": f"Bearer {alice.key}", "x-flow-conversation-id": "c1"}
    status, body = _send(server, method, path, headers)
    assert (status, body["error"]["code"]) == (413, "request_too_large"), body


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_an_unread_body_of_a_refused_request_does_not_cut_off_the_answer(server):
    # No key: the request is refused (401) before anything reads its body.
    status, body = _send(server, "POST", "/v1/scenarios", {})
    assert (status, body["error"]["code"]) == (401, "unauthenticated"), body
