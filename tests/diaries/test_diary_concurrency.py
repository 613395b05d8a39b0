"""Concurrent diary planning on real PostgreSQL: the per-conversation (and per-user quota) lock holds."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from django.db import connection

from diaries.models import DiaryEntry, DiaryPlanRecord
from diaries.services import diary_plan_and_write
from tests.factories import DiaryScenarioFactory, TurnFactory
from tests.support.http_server import Reply, StubHttpServer

from .support import SMALL_POLICY

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def slow_summarizer(settings) -> Iterator[StubHttpServer]:
    """A chat-completions server that answers after 0.4 s, so concurrent plans overlap for sure."""
    stub = StubHttpServer().start()
    content = '{"summary": "They relit the lamp.", "diary": "The lamp burns again."}'
    stub.route(
        "POST",
        "/chat/completions",
        lambda request: Reply(
            200,
            {"choices": [{"message": {"role": "assistant", "content": _reply_for(request, content)}}]},
            delay_seconds=0.4,
        ),
    )
    settings.SUMMARIZER_BASE_URL, settings.SUMMARIZER_MODEL = stub.url, "slow-model"
    settings.SUMMARIZER_TIMEOUT_SECONDS = 10
    yield stub
    stub.stop()


def _reply_for(request, content: str) -> str:
    # A summary-only plan asks for {"summary"} alone; answer what was asked.
    asked_for_diary = '"diary"' in request.json()["messages"][-1]["content"]
    return content if asked_for_diary else '{"summary": "They relit the lamp."}'


def _at_once(*calls: Callable[[], object]) -> list[object]:
    """Run the calls in threads released together; each thread closes its own connection."""
    barrier, results = threading.Barrier(len(calls)), [None] * len(calls)

    def run(index: int, call: Callable[[], object]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except Exception as exc:  # reported by the assertion below, not lost in the thread
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def _plan(turn_pk: int) -> Callable[[], str]:
    return lambda: diary_plan_and_write(turn_pk=turn_pk).outcome


def test_the_same_turn_planned_twice_at_once_writes_one_diary(alice, slow_summarizer) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(3)]
    outcomes = _at_once(_plan(turns[2].pk), _plan(turns[2].pk))
    assert sorted(outcomes) == ["already_planned", "written"]
    assert DiaryEntry.objects.count() == 1
    assert len(slow_summarizer.requests) == 1  # the lock spans generation: the loser never called the model


def test_two_completions_at_once_write_one_diary(alice, slow_summarizer) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(4)]
    outcomes = _at_once(_plan(turns[2].pk), _plan(turns[3].pk))
    # Whichever takes the lock first, round 3 is planned before round 4 (a task plans unplanned earlier rounds
    # first): round 4 first plans rounds 1-3 itself and round 3's own task then finds it planned.
    assert sorted(outcomes) in (["skipped", "written"], ["already_planned", "skipped"])
    [entry] = DiaryEntry.objects.all()
    assert (entry.round_from, entry.round_to) == (1, 3)
    planned = sorted(DiaryPlanRecord.objects.values_list("round", "outcome"))
    assert planned == [(1, "skipped"), (2, "skipped"), (3, "written"), (4, "skipped")]


def test_the_last_free_diary_of_a_user_goes_to_one_conversation_only(alice, slow_summarizer) -> None:
    scenario = DiaryScenarioFactory(
        product=alice.product, diary={**SMALL_POLICY, "freeDiaryQuota": {"perDays": 1, "count": 1}}
    )
    due = []
    for conversation in ("c1", "c2"):
        due.append([TurnFactory(scenario=scenario, conversation_id=conversation) for _ in range(3)][-1])
    assert _at_once(_plan(due[0].pk), _plan(due[1].pk)) == ["written", "written"]
    assert sorted(DiaryEntry.objects.values_list("kind", flat=True)) == ["summary_and_diary", "summary_only"]
