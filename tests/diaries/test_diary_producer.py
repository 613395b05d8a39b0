from __future__ import annotations

import pytest
from django.core.cache import cache

from diaries.planning import DiaryPlan
from diaries.producers import produce_compass_memory
from diaries.selectors import compass_scope
from diaries.services import diary_append
from diaries.summarizers import SummaryResult
from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceConfig
from memoryhub.runtimes.registry import get_producer
from tests.factories import DIARY_AGENT_REF, DiaryScenarioFactory, TurnFactory

pytestmark = pytest.mark.django_db

SOURCE = SourceConfig("diary", DIARY_AGENT_REF, "compassMemory")


def _store(product, scenario, count: int, *, conversation_id: str = "c1", every: int = 2) -> None:
    """`count` entries covering rounds 1-2, 3-4, … with summaries 'summary #n'."""
    for n in range(1, count + 1):
        turn = None
        for _ in range(every):
            turn = TurnFactory(scenario=scenario, conversation_id=conversation_id)
        plan = DiaryPlan("summary_and_diary", "test", turn.round - every + 1, turn.round)
        diary_append(turn=turn, plan=plan, category="default", result=SummaryResult(f"summary #{n}", "diary", "test"))


def _recall(product, *, category=None, conversation_id="c1", user_id="u1", source=SOURCE, message=""):
    return produce_compass_memory(
        RecallRequest(
            address=ConversationAddress(product, user_id, conversation_id),
            source=source,
            user_message=message,
            subscription_category=category,
        )
    )


def test_producer_is_registered_for_compass_memory() -> None:
    assert get_producer("compassMemory") is produce_compass_memory


@pytest.mark.parametrize(
    ("category", "expected"),
    [(None, [6]), ("", [6]), ("default", [6]), ("plus", [5, 6]), ("ultra", [4, 5, 6]), ("max", [2, 3, 4, 5, 6])],
)
def test_recall_counts_per_category_with_six_diaries(alice, category, expected) -> None:
    _store(alice.product, DiaryScenarioFactory(product=alice.product), 6)
    result = _recall(alice.product, category=category)
    assert result.status == "ok"
    assert [int(line.rsplit("#", 1)[1]) for line in result.text.splitlines()] == expected  # oldest of them first
    assert result.details["limit"] == len(expected)
    assert result.details["throughRound"] == 12


def test_fewer_diaries_than_the_count_returns_what_exists(alice) -> None:
    _store(alice.product, DiaryScenarioFactory(product=alice.product), 2)
    assert _recall(alice.product, category="max").text == "Rounds 1-2: summary #1\nRounds 3-4: summary #2"


def test_no_diary_is_empty(alice) -> None:
    result = _recall(alice.product)
    assert (result.text, result.status) == ("", "empty")


def test_recall_is_by_user_conversation_and_source_never_by_query(alice, bob) -> None:
    scenario = DiaryScenarioFactory(product=alice.product)
    _store(alice.product, scenario, 1)
    assert _recall(alice.product, message="a").text == _recall(alice.product, message="storm lamp").text
    assert _recall(alice.product, conversation_id="c2").status == "empty"
    assert _recall(alice.product, user_id="u2").status == "empty"
    assert _recall(alice.product, source=SourceConfig("diary", "another-agent", "compassMemory")).status == "empty"
    assert _recall(bob.product).status == "empty"


def test_unknown_category_is_an_error_not_a_guess(alice) -> None:
    _store(alice.product, DiaryScenarioFactory(product=alice.product), 1)
    result = _recall(alice.product, category="platinum")
    assert (result.status, result.text) == ("error", "")


def test_served_from_the_working_set_and_invalidated_by_an_append(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product)
    first, second = _recall(alice.product), _recall(alice.product)
    assert (first.status, first.cached, second.cached) == ("empty", False, True)
    _store(alice.product, scenario, 1)
    fresh = _recall(alice.product)
    assert (fresh.cached, fresh.text) == (False, "Rounds 1-2: summary #1")


@pytest.mark.requires_redis
def test_working_set_entry_lives_in_redis(alice) -> None:
    from django_redis import get_redis_connection

    _store(alice.product, DiaryScenarioFactory(product=alice.product), 1)
    scope = compass_scope(product_id=alice.product.pk, user_id="u1", conversation_id="c1", agent_ref=DIARY_AGENT_REF)
    cache.delete(scope.key)  # let the append's short invalidation marker go, as time would
    _recall(alice.product)
    assert _recall(alice.product).cached is True
    assert cache.get(scope.key)[0]["summary"] == "summary #1"
    assert get_redis_connection("default").exists(cache.make_key(scope.key)) == 1
