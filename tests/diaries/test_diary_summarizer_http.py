"""Diary generation through the OpenAI-compatible summariser, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from diaries.models import DiaryEntry, DiaryPlanRecord, DiaryState
from diaries.services import diary_plan_and_write
from diaries.summarizers import SummaryParseError
from diaries.tasks import MAX_RETRIES, diary_plan_task
from memoryhub.clients.errors import UpstreamTimeout, UpstreamUnavailable
from tests.factories import DiaryScenarioFactory, TurnFactory
from tests.support.http_server import Reply, StubHttpServer

from .support import SMALL_POLICY, events

pytestmark = pytest.mark.django_db

PATH = "/v1/chat/completions"


def completion(content: str) -> Reply:
    return Reply(
        200,
        {
            "id": "c1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        },
    )


@pytest.fixture
def server(stub_server: StubHttpServer, settings) -> StubHttpServer:
    settings.SUMMARIZER_BASE_URL = f"{stub_server.url}/v1"
    settings.SUMMARIZER_MODEL = "test-model"
    settings.SUMMARIZER_API_KEY = "sk-test"
    settings.SUMMARIZER_TIMEOUT_SECONDS = 0.5
    return stub_server


def _due_turn(product, diary: dict | None = None, category: str = ""):
    """Three committed turns under the small policy; the third is due for a diary."""
    scenario = DiaryScenarioFactory(product=product, diary=diary or SMALL_POLICY)
    turns = [
        TurnFactory(scenario=scenario, subscription_category=category, user_message=f"user line {n}")
        for n in range(1, 4)
    ]
    for turn in turns[:2]:
        diary_plan_and_write(turn_pk=turn.pk)
    return turns[2]


def test_writes_the_parsed_summary_and_diary(alice, server) -> None:
    server.route("POST", PATH, completion('{"summary": "They fixed the lamp.", "diary": "Dear diary, the lamp."}'))
    outcome = diary_plan_and_write(turn_pk=_due_turn(alice.product).pk)
    assert outcome.outcome == "written"
    entry = DiaryEntry.objects.get(product=alice.product)
    assert (entry.summary, entry.body, entry.summarizer) == (
        "They fixed the lamp.",
        "Dear diary, the lamp.",
        "openai-compatible:test-model",
    )
    request = server.requests[-1]
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.json()
    assert body["model"] == "test-model"
    prompt = body["messages"][-1]["content"]
    assert "rounds 1 to 3" in prompt and all(f"user: user line {n}" in prompt for n in (1, 2, 3))
    assert '"diary"' in prompt


def test_summary_only_asks_for_and_stores_a_summary(alice, server) -> None:
    server.route("POST", PATH, completion('{"summary": "Only the gist."}'))
    turn = _due_turn(alice.product, {**SMALL_POLICY, "freeDiaryQuota": {"count": 0}})
    diary_plan_and_write(turn_pk=turn.pk)
    entry = DiaryEntry.objects.get(product=alice.product)
    assert (entry.kind, entry.summary, entry.body) == ("summary_only", "Only the gist.", None)
    assert '"diary"' not in server.requests[-1].json()["messages"][-1]["content"]


def _assert_failed_cleanly(product, turn, code: str) -> dict:
    assert not DiaryEntry.objects.filter(product=product).exists()
    assert DiaryState.objects.get(product=product, conversation_id="c1").last_diary_round == 0
    assert DiaryPlanRecord.objects.get(turn=turn).outcome == "failed"
    assert events(product, "diary.written") == []
    failed = events(product, "diary.failed")
    assert len(failed) == 1 and failed[0].details["code"] == code
    return failed[0].details


def test_http_500_writes_no_diary_and_emits_diary_failed(alice, server) -> None:
    server.route("POST", PATH, Reply(500, {"error": {"message": "overloaded"}}))
    turn = _due_turn(alice.product)
    with pytest.raises(UpstreamUnavailable):
        diary_plan_and_write(turn_pk=turn.pk, retries_left=2)
    details = _assert_failed_cleanly(alice.product, turn, "upstream_failed")
    assert "HTTP 500" in details["reason"] and details["willRetry"] is True
    assert (details["roundFrom"], details["roundTo"], details["decision"]) == (1, 3, "summary_and_diary")


def test_timeout_writes_no_diary_and_emits_diary_failed(alice, server) -> None:
    server.route("POST", PATH, Reply(200, {"choices": []}, delay_seconds=2))
    turn = _due_turn(alice.product)
    with pytest.raises(UpstreamTimeout):
        diary_plan_and_write(turn_pk=turn.pk)
    details = _assert_failed_cleanly(alice.product, turn, "upstream_timeout")
    assert details["willRetry"] is False  # no retries left when called directly


def test_unparseable_reply_writes_no_diary(alice, server) -> None:
    server.route("POST", PATH, completion("Sure! Here is a summary: they talked."))
    turn = _due_turn(alice.product)
    with pytest.raises(SummaryParseError):
        diary_plan_and_write(turn_pk=turn.pk)
    details = _assert_failed_cleanly(alice.product, turn, "upstream_failed")
    assert "could not be parsed" in details["reason"]


def test_a_retry_after_a_failure_writes_once(alice, server) -> None:
    replies = iter([Reply(503, {}), completion(json.dumps({"summary": "s", "diary": "d"}))])
    server.route("POST", PATH, lambda _request: next(replies))
    turn = _due_turn(alice.product)
    with pytest.raises(UpstreamUnavailable):
        diary_plan_and_write(turn_pk=turn.pk, retries_left=1)
    assert diary_plan_and_write(turn_pk=turn.pk, attempt=1).outcome == "written"
    assert DiaryEntry.objects.filter(product=alice.product).count() == 1
    assert diary_plan_and_write(turn_pk=turn.pk, attempt=2).outcome == "already_planned"
    assert [r.outcome for r in DiaryPlanRecord.objects.filter(turn=turn).order_by("id")] == ["failed", "written"]


def test_task_retries_a_bounded_number_of_times_then_gives_up(alice, server) -> None:
    server.route("POST", PATH, Reply(500, {}))
    turn = _due_turn(alice.product)
    result = diary_plan_task.apply(args=[turn.pk])  # eager: retries run at once, without the backoff wait
    assert result.failed() and "UpstreamUnavailable" in repr(result.result)
    failed = events(alice.product, "diary.failed")
    assert [e.details["attempt"] for e in failed] == list(range(1, MAX_RETRIES + 2))
    assert [e.details["willRetry"] for e in failed] == [True] * MAX_RETRIES + [False]
    assert len(server.requests) == MAX_RETRIES + 1
    assert not DiaryEntry.objects.filter(product=alice.product).exists()
