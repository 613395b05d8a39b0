"""Diary tasks run in any order give the entries of planning every round in order (diaries/services.py).

After an outage the outbox relay releases the held-back tasks of consecutive rounds together, and the worker
runs them in any order. A task whose earlier rounds are not planned yet plans them first, in round order, so
the entries never depend on that order — what bench/load.py checks through a PostgreSQL restart.
"""

from __future__ import annotations

import random

import pytest

from diaries.models import DiaryEntry, DiaryPlanRecord, DiaryState
from diaries.services import diary_plan_and_write
from diaries.summarizers import SummarizerConfigError
from tests.factories import DiaryScenarioFactory, TurnFactory

from .support import SMALL_POLICY, events

pytestmark = pytest.mark.django_db

IN_ORDER = [(1, 3), (4, 5), (6, 7), (8, 9)]  # SMALL_POLICY over 10 rounds: first at 3, then every 2


def _spans(product) -> list[tuple[int, int]]:
    return list(DiaryEntry.objects.filter(product=product).order_by("round_from").values_list("round_from", "round_to"))


@pytest.mark.parametrize("seed", range(6))
def test_tasks_in_any_order_write_the_entries_of_planning_in_order(alice, seed: int) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(10)]
    order = list(turns)
    random.Random(seed).shuffle(order)
    outcomes = {turn.round: diary_plan_and_write(turn_pk=turn.pk).outcome for turn in order}
    assert _spans(alice.product) == IN_ORDER
    # Each turn planned exactly once (by its own task or by a later round's), each entry written once.
    assert sorted(DiaryPlanRecord.objects.values_list("round", flat=True)) == list(range(1, 11))
    assert len(events(alice.product, "diary.written")) == len(IN_ORDER)
    assert set(outcomes.values()) <= {"written", "skipped", "already_planned"}
    state = DiaryState.objects.get(product=alice.product, conversation_id="c1")
    assert (state.rounds, state.last_diary_round) == (10, 9)


def test_only_a_gap_looks_earlier_rounds_up(alice, django_assert_max_num_queries) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(4)]
    lookup = '"diaries_diaryplanrecord" U0'  # the NOT EXISTS of the catch-up query

    def queries(turn) -> list[str]:
        with django_assert_max_num_queries(40) as captured:
            diary_plan_and_write(turn_pk=turn.pk)
        return [q["sql"] for q in captured.captured_queries]

    assert not any(lookup in sql for sql in queries(turns[0]) + queries(turns[1]))  # in order: none
    assert any(lookup in sql for sql in queries(turns[3]))  # round 4 before round 3: one


def test_a_failed_plan_is_left_to_its_retries_and_the_at_least_rule(alice, settings) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(5)]
    for turn in turns[:2]:
        diary_plan_and_write(turn_pk=turn.pk)
    settings.SUMMARIZER_BASE_URL, settings.SUMMARIZER_MODEL = "http://127.0.0.1:9", ""
    with pytest.raises(SummarizerConfigError):  # round 3's entry fails (its task would retry, then give up)
        diary_plan_and_write(turn_pk=turns[2].pk)
    settings.SUMMARIZER_BASE_URL = None
    # Round 5's task runs before round 4's: round 4 is planned first and, with no entry yet, writes the first
    # one over rounds 1-4 (round 3's rounds with them: the "at least" rule); round 5 then finds 1 round since.
    diary_plan_and_write(turn_pk=turns[4].pk)
    assert _spans(alice.product) == [(1, 4)]
    assert diary_plan_and_write(turn_pk=turns[3].pk).outcome == "already_planned"
    # Round 3 is not planned again by the catch-up: its failed record stays the only one.
    assert list(DiaryPlanRecord.objects.filter(turn=turns[2]).values_list("outcome", flat=True)) == ["failed"]
