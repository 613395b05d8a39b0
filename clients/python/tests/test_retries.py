"""Retries, against a real HTTP server on 127.0.0.1 that answers a scripted sequence (a memoryhub that fails
on purpose cannot be had on demand) and against a closed port."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from memoryhub_client import AsyncMemoryHub, MemoryHub, RetryPolicy, errors

LOST = 0  # a scripted status: the connection is closed without an answer (a lost answer)


class Scripted(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.script: list[tuple[int, dict[str, str], object]] = []
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []


class Handler(BaseHTTPRequestHandler):
    server: Scripted

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.seen.append((self.command, self.path, dict(self.headers), self.rfile.read(length)))
        status, headers, body = self.server.script.pop(0)
        if status == LOST:
            self.close_connection = True
            return
        data = b"" if status == 204 else json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


FAST = RetryPolicy(max_retries=3, backoff=0.01, max_backoff=0.02)


def _envelope(code: str, **details: object) -> dict[str, object]:
    return {"error": {"code": code, "message": code, "details": details}}


def _url(server: Scripted) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_a_write_is_retried_with_the_same_idempotency_key(scripted: Scripted) -> None:
    scripted.script = [
        (503, {}, _envelope("storage_unavailable", dependency="database")),
        (502, {}, _envelope("upstream_failed")),
        (200, {}, {"revision": 1}),
    ]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        assert hub.memory("u", "c").put(expected_revision=0, memory={"a": 1}) == 1
    keys = [headers["Idempotency-Key"] for _, _, headers, _ in scripted.seen]
    assert len(keys) == 3 and len(set(keys)) == 1 and keys[0].startswith("mhc-")


def test_operation_ids_are_generated_once_per_call(scripted: Scripted) -> None:
    scripted.script = [(504, {}, _envelope("upstream_timeout")), (201, {}, {"id": "mem_1", "version": 1})]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        hub.memories("u").create(kind="preference", content={}, evidence="e", source="e", consent=True)
    ids = [json.loads(body)["operationId"] for _, _, _, body in scripted.seen]
    assert len(ids) == 2 and ids[0] == ids[1]


def test_a_write_without_a_key_is_not_retried(scripted: Scripted) -> None:
    scripted.script = [(503, {}, _envelope("storage_unavailable", dependency="redis"))]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub, pytest.raises(errors.StorageUnavailable) as down:
        hub.conversation("u", "c").prepare_turn(scenario_id="s", user_message="hi")
    assert down.value.details == {"dependency": "redis"} and len(scripted.seen) == 1


# A second DELETE of these ids cannot delete anything else: the server never gives the id again.
RETRIED_DELETES: dict[str, Callable[[MemoryHub], None]] = {
    "memory": lambda hub: hub.memories("u").delete("mem_1"),
    "memory at a version": lambda hub: hub.memories("u").delete("mem_1", expected_version=2),
    "webhook": lambda hub: hub.webhooks.delete(7),
}
# The caller's own id, free again once deleted: a retry could delete one created again under it meanwhile.
UNRETRIED_DELETES: dict[str, Callable[[MemoryHub], None]] = {
    "scenario": lambda hub: hub.scenarios.delete("assistant"),
    "kind": lambda hub: hub.kinds.delete("diet", cascade=True),
}


@pytest.mark.parametrize("first", [503, LOST], ids=["503", "lost answer"])
@pytest.mark.parametrize("delete", RETRIED_DELETES.values(), ids=RETRIED_DELETES.keys())
def test_a_delete_of_an_id_never_given_again_is_retried(
    scripted: Scripted, delete: Callable[[MemoryHub], None], first: int
) -> None:
    scripted.script = [(first, {}, _envelope("storage_unavailable")), (204, {}, None)]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        delete(hub)
    requests = [(method, path) for method, path, _, _ in scripted.seen]
    assert len(requests) == 2 and requests[0] == requests[1] and requests[0][0] == "DELETE"


def test_a_retried_delete_whose_lost_attempt_went_through_answers_not_found(scripted: Scripted) -> None:
    scripted.script = [(LOST, {}, None), (404, {}, _envelope("not_found"))]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub, pytest.raises(errors.NotFound):
        hub.memories("u").delete("mem_1", expected_version=2)
    assert len(scripted.seen) == 2


@pytest.mark.parametrize("delete", UNRETRIED_DELETES.values(), ids=UNRETRIED_DELETES.keys())
def test_a_delete_of_the_callers_own_id_is_not_retried(scripted: Scripted, delete: Callable[[MemoryHub], None]) -> None:
    scripted.script = [(503, {}, _envelope("storage_unavailable")), (LOST, {}, None)]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        with pytest.raises(errors.StorageUnavailable):
            delete(hub)
        with pytest.raises(errors.MemoryHubConnectionError):
            delete(hub)
    assert len(scripted.seen) == 2


def test_429_honours_retry_after(scripted: Scripted) -> None:
    scripted.script = [
        (429, {"Retry-After": "1"}, _envelope("rate_limited")),
        (200, {}, {"revision": 0, "memory": None}),
    ]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        started = time.monotonic()
        assert hub.memory("u", "c").get().revision == 0
        assert time.monotonic() - started >= 0.9


def test_rate_limited_after_the_retries(scripted: Scripted) -> None:
    scripted.script = [(429, {"Retry-After": "0"}, _envelope("rate_limited"))] * 4
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub, pytest.raises(errors.RateLimited) as limited:
        hub.memory("u", "c").get()
    assert limited.value.retry_after == 0 and len(scripted.seen) == 4


def test_unknown_codes_fall_back_to_their_status(scripted: Scripted) -> None:
    scripted.script = [(409, {}, _envelope("some_new_state")), (500, {}, "<html>")]
    with MemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        with pytest.raises(errors.Conflict) as conflict:
            hub.memory("u", "c").get()
        assert conflict.value.code == "some_new_state"
        with pytest.raises(errors.InternalError) as broken:
            hub.memory("u", "c").get()
        assert broken.value.code == "http_500"


def test_every_documented_code_has_its_class() -> None:
    expected = {
        "revision_conflict": errors.RevisionConflict,
        "not_found": errors.NotFound,
        "invalid_request": errors.ValidationError,
        "rate_limited": errors.RateLimited,
        "storage_unavailable": errors.ServiceUnavailable,
        "embedding_index_mismatch": errors.ServiceUnavailable,
        "request_timeout": errors.ServiceUnavailable,
        "upstream_failed": errors.UpstreamError,
        "upstream_timeout": errors.UpstreamTimeout,
        "operation_id_reused": errors.RejectedByPolicy,
        "turn_already_completed": errors.Conflict,
        "prompt_too_large": errors.PayloadTooLarge,
    }
    for code, cls in expected.items():
        assert issubclass(errors.error_class(0, code), cls), code


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_refused_is_retried_then_raised() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with MemoryHub(url, "mhk_x_y", retry=FAST) as hub, pytest.raises(errors.MemoryHubConnectionError):
        hub.memory("u", "c").get()


async def test_async_retries(scripted: Scripted) -> None:
    scripted.script = [(503, {}, _envelope("storage_unavailable")), (200, {}, {"revision": 2})]
    async with AsyncMemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        assert await hub.memory("u", "c").put(expected_revision=1, memory={}) == 2
    assert len(scripted.seen) == 2


async def test_async_deletes_are_retried_like_the_sync_ones(scripted: Scripted) -> None:
    scripted.script = [(LOST, {}, None), (204, {}, None), (503, {}, _envelope("storage_unavailable"))]
    async with AsyncMemoryHub(_url(scripted), "mhk_x_y", retry=FAST) as hub:
        await hub.webhooks.delete(7)
        with pytest.raises(errors.StorageUnavailable):
            await hub.scenarios.delete("assistant")
    assert len(scripted.seen) == 3


def test_every_code_the_server_raises_has_a_class() -> None:
    """Every envelope code in the server's source (`code = "…"`, `code="…"`, `"code": "…"`) is mapped."""
    import re

    from conftest import REPO

    pattern = re.compile(r"""(?:\bcode\s*=\s*|"code":\s*)"([a-z_]+)\"""")
    found: set[str] = set()
    packages = [init.parent for init in REPO.glob("*/__init__.py") if init.parent.name != "tests"]
    assert {"memoryhub", "memories", "lorebooks"} <= {p.name for p in packages}
    for package in packages:
        for path in package.rglob("*.py"):
            if "migrations" not in path.parts:
                found |= set(pattern.findall(path.read_text(encoding="utf-8")))
    assert len(found) > 30, found
    assert found <= errors.KNOWN_CODES, sorted(found - errors.KNOWN_CODES)
