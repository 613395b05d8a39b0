"""Compaction through the OpenAI-compatible summariser, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import pytest

from memories.compact.services import compaction_for_turn
from memories.models import Turn
from memoryhub.clients.errors import UpstreamUnavailable
from tests.support.api import assert_envelope
from tests.support.http_server import Reply, StubHttpServer
from tests.support.turns import post_turn

from .support import compactions, create_scenario, events, history_source, messages, play, text

pytestmark = pytest.mark.django_db
PATH = "/v1/chat/completions"
L = 90


def completion(content: str) -> Reply:
    return Reply(200, {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})


@pytest.fixture
def server(stub_server: StubHttpServer, settings) -> StubHttpServer:
    settings.SUMMARIZER_BASE_URL = f"{stub_server.url}/v1"
    settings.SUMMARIZER_MODEL = "test-model"
    settings.SUMMARIZER_API_KEY = "sk-test"
    settings.SUMMARIZER_TIMEOUT_SECONDS = 0.5
    return stub_server


def _full_conversation(api) -> list[dict]:
    create_scenario(api, budget=2000, keep=2)
    for n in range(1, 11):
        play(api, text(L, f"u{n}"), text(L, f"a{n}"))
    return messages(api)  # 1,989 characters of history: a 40-character message must compact


def test_an_inline_compaction_uses_the_configured_summariser(alice, server) -> None:
    _full_conversation(alice)
    server.route("POST", PATH, completion('{"summary": "The guard keeps the brass key and the lantern."}'))
    turn = post_turn(alice, "chat", text(40, "now")).json()
    [compaction] = compactions(alice)
    assert compaction["summary"] == "The guard keeps the brass key and the lantern."
    assert compaction["summarizer"] == "openai-compatible:test-model"
    assert history_source(turn)["details"]["compacted"] == "inline"
    prompt = server.requests[-1].json()["messages"][-1]["content"]
    assert "Transcript of rounds 1 to 9" in prompt and "user: u1 The guard" in prompt


@pytest.mark.parametrize(
    ("reply", "status", "code"),
    [
        (Reply(500, {"error": {"message": "overloaded"}}), 502, "upstream_failed"),
        (Reply(200, {"choices": []}, delay_seconds=2), 504, "upstream_timeout"),
        (completion("Sure! They talked."), 502, "upstream_failed"),
    ],
    ids=["fails", "times-out", "unparseable"],
)
def test_a_summariser_failure_fails_the_prepare_that_had_to_compact(alice, server, reply, status, code) -> None:
    stored = _full_conversation(alice)
    server.route("POST", PATH, reply)
    error = assert_envelope(post_turn(alice, "chat", text(40, "now")), status, code)
    assert error["details"]["service"] == "summarizer"
    # Nothing kept, nothing dropped, and the failure is on record.
    assert compactions(alice) == [] and messages(alice) == stored
    [failed] = events(alice, "compact.failed")
    assert failed["details"]["trigger"] == "inline" and failed["details"]["code"] == code
    assert failed["details"]["willRetry"] is False
    assert Turn.objects.filter(product=alice.product).count() == 10  # no turn was prepared
    # A prepare that fits does not need the summariser.
    assert post_turn(alice, "chat", "ok").status_code == 201


def test_a_summary_longer_than_the_room_is_not_kept(alice, server) -> None:
    _full_conversation(alice)
    server.route("POST", PATH, completion('{"summary": "%s"}' % ("x" * 600)))  # the room is 500
    error = assert_envelope(post_turn(alice, "chat", text(40, "now")), 502, "upstream_failed")
    assert error["details"]["summaryLimit"] == 500 and compactions(alice) == []


def test_a_failing_background_compaction_keeps_nothing_and_emits_compact_failed(alice, server) -> None:
    _full_conversation(alice)
    server.route("POST", PATH, Reply(503, {"error": {"message": "down"}}))
    last = alice.get("/v1/users/u1/conversations/c1/events", data={"type": "turn.completed", "limit": 200})
    turn_pk = last.json()["results"][-1]["turnId"]
    with pytest.raises(UpstreamUnavailable):
        compaction_for_turn(turn_pk=turn_pk, trigger="threshold", retries_left=2)
    [failed] = events(alice, "compact.failed")
    assert failed["turnId"] == turn_pk and failed["details"]["willRetry"] is True
    assert failed["details"]["trigger"] == "threshold" and compactions(alice) == []
