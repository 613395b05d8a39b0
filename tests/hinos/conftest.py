"""A real Hinos stand-in on 127.0.0.1 that the client runtime is pointed at."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hinos.support import COMMIT, PREPARE, PREPARED
from tests.support.http_server import Reply, StubHttpServer


@pytest.fixture(scope="session")
def _server() -> Iterator[StubHttpServer]:
    stub = StubHttpServer().start()
    yield stub
    stub.stop()


@pytest.fixture
def hinos(_server: StubHttpServer, settings) -> StubHttpServer:
    _server.routes.clear()
    _server.requests.clear()
    settings.HINOS_MEMORY_URL = _server.url
    settings.HINOS_MEMORY_TOKEN = "hinos-secret"
    settings.HINOS_MEMORY_TIMEOUT_MS = 2000
    _server.route("POST", PREPARE, Reply(200, PREPARED))
    _server.route("POST", COMMIT, Reply(200, {"committed": True}))
    return _server
