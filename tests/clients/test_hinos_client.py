"""Hinos protocol client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from memoryhub.api.handler import status_for
from memoryhub.clients.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from memoryhub.clients.hinos import (
    HinosClient,
    HinosCommitted,
    HinosNotConfigured,
    HinosPrepared,
    get_hinos_client,
    reset_hinos_client_cache,
)
from tests.support.http_server import Reply, StubHttpServer

PREPARED = {"claim_id": "claim-1", "memory": "用户答应明天归还铜钥匙", "turn": 3, "state_through_round": 2}
MESSAGES = [
    {"role": "user", "content": "我答应明天归还铜钥匙"},
    {"role": "assistant", "content": "守卫点头，记下了约定"},
    {"role": "user", "content": "那我们出发吧"},
]


@pytest.fixture
def server(stub_server: StubHttpServer) -> StubHttpServer:
    return stub_server


def prepare(client: HinosClient, **overrides) -> HinosPrepared:
    arguments = dict(
        conversation_id="conv-7",
        request_id="req-1",
        user_id="u1",
        scenario_id="scn-1",
        model_config_id="mc-1",
        prompt_id="p-1",
        system="你是守卫。",
        messages=MESSAGES,
    )
    arguments.update(overrides)
    return client.prepare(**arguments)


def test_prepare_sends_the_protocol_body_and_headers(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/prepare", Reply(200, PREPARED))
    result = prepare(HinosClient(server.url + "/", token="tok"))
    assert result == HinosPrepared("claim-1", "用户答应明天归还铜钥匙", 3, 2)
    request = server.requests[-1]
    assert request.path == "/v1/memory/prepare"
    assert request.json() == {
        "user_id": "u1",
        "request_id": "req-1",
        "scenario_id": "scn-1",
        "model_config_id": "mc-1",
        "prompt_id": "p-1",
        "system": "你是守卫。",
        "messages": MESSAGES,
    }
    assert request.headers["x-flow-conversation-id"] == "conv-7"
    assert request.headers["x-request-id"] == "req-1"
    assert request.headers["authorization"] == "Bearer tok"


def test_prepare_without_token_sends_no_authorization(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/prepare", Reply(200, PREPARED))
    prepare(HinosClient(server.url), request_id=None)
    headers = server.requests[-1].headers
    assert "authorization" not in headers
    assert headers["x-request-id"] == server.requests[-1].json()["request_id"]  # generated once, used twice


def test_empty_memory_is_valid(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/prepare", Reply(200, {**PREPARED, "memory": ""}))
    assert prepare(HinosClient(server.url)).memory == ""


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}],
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        [{"role": "user", "content": 5}],
    ],
)
def test_prepare_validates_messages_before_sending(server: StubHttpServer, messages: list) -> None:
    with pytest.raises(ValueError):
        prepare(HinosClient(server.url), messages=messages)
    assert server.requests == []


def test_timeout_is_upstream_timeout(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/prepare", Reply(200, PREPARED, delay_seconds=2))
    with pytest.raises(UpstreamTimeout) as caught:
        prepare(HinosClient(server.url, timeout_ms=200))
    assert status_for(caught.value) == 504 and caught.value.service == "hinos"


def test_server_error_is_upstream_unavailable(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/prepare", Reply(500, {"error": "boom"}))
    with pytest.raises(UpstreamUnavailable) as caught:
        prepare(HinosClient(server.url))
    assert status_for(caught.value) == 502 and caught.value.service == "hinos"
    assert caught.value.details["status"] == 500


def test_connection_refused_is_upstream_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(UpstreamUnavailable) as caught:
        prepare(HinosClient(f"http://127.0.0.1:{port}", timeout_ms=2000))
    assert caught.value.service == "hinos"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, {key: value for key, value in PREPARED.items() if key != "claim_id"}),
        Reply(200, {**PREPARED, "claim_id": ""}),
        Reply(200, {**PREPARED, "turn": "3"}),
        Reply(200, {**PREPARED, "turn": True}),
        Reply(200, {**PREPARED, "state_through_round": False}),
        Reply(200, {**PREPARED, "state_through_round": 1.5}),
        Reply(200, {**PREPARED, "memory": None}),
        Reply(200, [PREPARED]),
        Reply(200, raw=b"not json"),
    ],
    ids=[
        "missing-claim",
        "empty-claim",
        "turn-str",
        "turn-bool",
        "round-bool",
        "round-float",
        "memory-null",
        "array",
        "not-json",
    ],
)
def test_malformed_prepare_response_is_a_protocol_error(server: StubHttpServer, reply: Reply) -> None:
    server.route("POST", "/v1/memory/prepare", reply)
    with pytest.raises(UpstreamProtocolError) as caught:
        prepare(HinosClient(server.url))
    assert status_for(caught.value) == 502 and caught.value.service == "hinos"


def test_commit_ok(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/commit", Reply(200, {"committed": True, "turn": 3}))
    result = HinosClient(server.url, token="tok").commit(
        conversation_id="conv-7",
        request_id="req-2",
        claim_id="claim-1",
        user="那我们出发吧",
        assistant="守卫让开了路",
    )
    assert result == HinosCommitted(committed=True, raw={"committed": True, "turn": 3})
    request = server.requests[-1]
    assert request.json() == {"claim_id": "claim-1", "user": "那我们出发吧", "assistant": "守卫让开了路"}
    assert request.headers["x-flow-conversation-id"] == "conv-7"
    assert request.headers["x-request-id"] == "req-2"
    assert request.headers["authorization"] == "Bearer tok"


@pytest.mark.parametrize("body", [{}, {"committed": False}, {"committed": "true"}, {"committed": 1}, [True]])
def test_commit_without_committed_true_is_an_error(server: StubHttpServer, body: object) -> None:
    server.route("POST", "/v1/memory/commit", Reply(200, body))
    with pytest.raises(UpstreamProtocolError, match="commit not acknowledged"):
        HinosClient(server.url).commit(conversation_id="c", request_id="r", claim_id="claim-1", user="u", assistant="a")


def test_commit_server_error_is_upstream_unavailable(server: StubHttpServer) -> None:
    server.route("POST", "/v1/memory/commit", Reply(503, {"error": "busy"}))
    with pytest.raises(UpstreamUnavailable):
        HinosClient(server.url).commit(conversation_id="c", request_id="r", claim_id="claim-1", user="u", assistant="a")


def test_get_hinos_client_reads_settings(settings, server: StubHttpServer) -> None:
    reset_hinos_client_cache()
    try:
        settings.HINOS_MEMORY_URL = None
        with pytest.raises(HinosNotConfigured, match="HINOS_MEMORY_URL"):
            get_hinos_client()
        settings.HINOS_MEMORY_URL = server.url
        settings.HINOS_MEMORY_TIMEOUT_MS = 1234
        settings.HINOS_MEMORY_TOKEN = "tok"
        client = get_hinos_client()
        assert client.timeout_ms == 1234 and client.base_url == server.url
        assert get_hinos_client() is client
    finally:
        reset_hinos_client_cache()
