"""A real Hinos stand-in on 127.0.0.1 that the client runtime is pointed at."""

from __future__ import annotations

import pytest

from tests.hinos.support import COMMIT, PREPARE, PREPARED
from tests.support.http_server import Reply, StubHttpServer


@pytest.fixture
def hinos(stub_server: StubHttpServer, settings) -> StubHttpServer:
    settings.HINOS_MEMORY_URL = stub_server.url
    settings.HINOS_MEMORY_TOKEN = "hinos-secret"
    settings.HINOS_MEMORY_TIMEOUT_MS = 2000
    stub_server.route("POST", PREPARE, Reply(200, PREPARED))
    stub_server.route("POST", COMMIT, Reply(200, {"committed": True}))
    return stub_server
