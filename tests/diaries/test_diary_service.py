from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from diaries.apps import validate_diary_section
from diaries.models import DiaryEntry, DiaryPlanRecord, DiaryState
from diaries.planning import QUOTA_EXHAUSTED_REASON
from diaries.services import diary_plan_and_write, diary_replan_conversation
from diaries.summarizers import SummarizerConfigError
from diaries.tasks import diary_plan_task
from memoryhub import turn_jobs
from memoryhub.outbox.services import outbox_dispatch
from memoryhub.runtimes.registry import SectionInvalid, run_commit_hooks, validate_section
from tests.factories import DiaryScenarioFactory, TurnFactory

from .support import SMALL_POLICY, events

pytestmark = pytest.mark.django_db


def _walk(scenario, rounds: int, **turn_kwargs) -> list[str]:
    """Commit and plan `rounds` turns; the outcome of each."""
    return [
        diary_plan_and_write(turn_pk=TurnFactory(scenario=scenario, **turn_kwargs).pk).outcome for _ in range(rounds)
    ]


def _entries(product, conversation_id: str = "c1") -> list[DiaryEntry]:
    return list(DiaryEntry.objects.filter(product=product, conversation_id=conversation_id).order_by("id"))


def test_defaults_skip_rounds_1_to_19_and_write_at_20_then_30(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product)  # no diary section: the default policy applies
    outcomes = _walk(scenario, 30)
    written = [number for number, outcome in enumerate(outcomes, start=1) if outcome == "written"]
    assert written == [20, 30]
    assert outcomes[:19] == ["skipped"] * 19
    entries = _entries(alice.product)
    assert [(e.round_from, e.round_to, e.kind) for e in entries] == [
        (1, 20, "summary_and_diary"),
        (21, 30, "summary_and_diary"),
    ]
    assert entries[0].summarizer == "extractive" and "lighthouse" in entries[0].summary and entries[0].body
    skipped = events(alice.product, "diary.skipped")
    assert len(skipped) == 28
    assert skipped[0].details["reason"] == "round 1 < minRounds 20"
    assert skipped[19].details["reason"] == "1 round since last diary < 10"  # round 21
    assert [e.details["kind"] for e in events(alice.product, "diary.written")] == ["summary_and_diary"] * 2
    state = DiaryState.objects.get(product=alice.product, conversation_id="c1")
    assert (state.rounds, state.last_diary_round) == (30, 30)


def test_small_policy_first_at_min_rounds_then_every_n(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    outcomes = _walk(scenario, 8)
    assert outcomes == ["skipped", "skipped", "written", "skipped", "written", "skipped", "written", "skipped"]
    assert [(e.round_from, e.round_to) for e in _entries(alice.product)] == [(1, 3), (4, 5), (6, 7)]


def test_skip_writes_no_entry_but_a_plan_record_with_the_reason(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turn = TurnFactory(scenario=scenario)
    outcome = diary_plan_and_write(turn_pk=turn.pk)
    assert (outcome.outcome, outcome.reason) == ("skipped", "round 1 < minRounds 3")
    assert _entries(alice.product) == []
    record = DiaryPlanRecord.objects.get(turn=turn)
    assert (record.decision, record.outcome, record.reason) == ("skip", "skipped", "round 1 < minRounds 3")
    assert events(alice.product, "diary.skipped")[0].turn_id == turn.pk


def test_redelivered_task_writes_nothing_twice(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(3)]
    assert diary_plan_and_write(turn_pk=turns[2].pk).outcome == "written"
    again = diary_plan_and_write(turn_pk=turns[2].pk)
    assert again.outcome == "already_planned"
    assert len(_entries(alice.product)) == 1
    assert len(events(alice.product, "diary.written")) == 1
    assert DiaryPlanRecord.objects.filter(turn=turns[2]).count() == 1


def test_a_late_task_for_an_earlier_round_finds_it_planned_in_order(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(4)]
    # Round 4's task runs first: it plans rounds 1-3 first (their tasks have not run), as in order.
    assert diary_plan_and_write(turn_pk=turns[3].pk).outcome == "skipped"
    assert diary_plan_and_write(turn_pk=turns[2].pk).outcome == "already_planned"
    assert [(e.round_from, e.round_to) for e in _entries(alice.product)] == [(1, 3)]
    assert DiaryPlanRecord.objects.count() == 4  # one per turn (tests/diaries/test_diary_order.py: any order)


def test_free_quota_exhausted_stores_summary_only_across_conversations(alice) -> None:
    scenario = DiaryScenarioFactory(
        product=alice.product, diary={**SMALL_POLICY, "freeDiaryQuota": {"perDays": 1, "count": 1}}
    )
    _walk(scenario, 3, conversation_id="c1")
    _walk(scenario, 3, conversation_id="c2")
    first, second = _entries(alice.product, "c1")[0], _entries(alice.product, "c2")[0]
    assert (first.kind, bool(first.body)) == ("summary_and_diary", True)
    assert (second.kind, second.body) == ("summary_only", None)
    assert second.summary
    written = events(alice.product, "diary.written", "c2")[0]
    assert (written.details["kind"], written.details["reason"]) == ("summary_only", QUOTA_EXHAUSTED_REASON)


def test_summary_only_advances_the_last_diary_round(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary={**SMALL_POLICY, "freeDiaryQuota": {"count": 0}})
    assert _walk(scenario, 5) == ["skipped", "skipped", "written", "skipped", "written"]
    assert [(e.round_from, e.round_to, e.kind) for e in _entries(alice.product)] == [
        (1, 3, "summary_only"),
        (4, 5, "summary_only"),
    ]


def test_quota_window_forgets_old_diaries_and_paid_diaries_never_count(alice) -> None:
    scenario = DiaryScenarioFactory(
        product=alice.product, diary={**SMALL_POLICY, "freeDiaryQuota": {"perDays": 1, "count": 1}}
    )
    _walk(scenario, 3, conversation_id="old")
    DiaryEntry.objects.filter(conversation_id="old").update(created_at=timezone.now() - timedelta(days=2))
    _walk(scenario, 3, conversation_id="paid", subscription_category="plus")
    _walk(scenario, 3, conversation_id="c1")
    assert _entries(alice.product, "paid")[0].kind == "summary_and_diary"
    assert _entries(alice.product, "c1")[0].kind == "summary_and_diary"  # the old one fell out of the window


@pytest.mark.parametrize("category", ["plus", "ultra", "max"])
def test_paid_categories_get_full_diaries_without_quota(alice, category: str) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary={**SMALL_POLICY, "freeDiaryQuota": {"count": 0}})
    _walk(scenario, 3, subscription_category=category)
    entry = _entries(alice.product)[0]
    assert (entry.kind, entry.subscription_category) == ("summary_and_diary", category)


def test_paid_cadence_can_differ(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary={**SMALL_POLICY, "paidRoundsPerDiary": 1})
    assert _walk(scenario, 5, subscription_category="max") == ["skipped", "skipped", "written", "written", "written"]


def test_disabled_policy_skips_with_its_reason(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary={**SMALL_POLICY, "enabled": False})
    _walk(scenario, 4)
    assert _entries(alice.product) == []
    assert events(alice.product, "diary.skipped")[-1].details["reason"] == "diary disabled by scenario policy"


def test_scenario_without_diaries_is_not_planned(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, memory_runtime="personalization", sources=[])
    assert set(_walk(scenario, 3)) == {"not_configured"}
    assert events(alice.product, "diary.skipped") == [] and not DiaryPlanRecord.objects.exists()


def test_diary_section_alone_enables_planning(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY, sources=[])
    _walk(scenario, 3)
    assert _entries(alice.product)[0].agent_ref == ""


def test_missing_turn_is_skipped_cleanly(alice) -> None:
    assert diary_plan_and_write(turn_pk=987654).outcome == "turn_missing"


def test_uncommitted_turn_is_not_planned(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turn = TurnFactory(scenario=scenario)
    turn.status = "prepared"
    turn.save()
    assert diary_plan_and_write(turn_pk=turn.pk).outcome == "not_committed"


def test_misconfigured_summarizer_fails_visibly_and_writes_nothing(alice, settings) -> None:
    settings.SUMMARIZER_BASE_URL = "http://127.0.0.1:9"
    settings.SUMMARIZER_MODEL = ""
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(3)]
    with pytest.raises(SummarizerConfigError):
        diary_plan_and_write(turn_pk=turns[2].pk)
    assert _entries(alice.product) == []
    failed = events(alice.product, "diary.failed")[0]
    assert failed.details["code"] == "summarizer_misconfigured" and failed.details["willRetry"] is False
    assert DiaryState.objects.get(conversation_id="c1").last_diary_round == 0
    assert DiaryPlanRecord.objects.get(turn=turns[2]).outcome == "failed"


def test_replan_after_a_failure_appends_the_due_entry(alice, settings) -> None:
    settings.SUMMARIZER_BASE_URL = "http://127.0.0.1:9"
    settings.SUMMARIZER_MODEL = ""
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(3)]
    with pytest.raises(SummarizerConfigError):
        diary_plan_and_write(turn_pk=turns[2].pk)
    settings.SUMMARIZER_BASE_URL = None
    state = DiaryState.objects.get(conversation_id="c1")
    outcome = diary_replan_conversation(state=state)
    assert outcome.outcome == "written"
    assert [(e.round_from, e.round_to) for e in _entries(alice.product)] == [(1, 3)]
    assert list(DiaryPlanRecord.objects.filter(turn=turns[2]).order_by("id").values_list("outcome", "trigger"))[1] == (
        "written",
        "admin",
    )


def test_replan_of_an_up_to_date_conversation_skips(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    _walk(scenario, 3)
    outcome = diary_replan_conversation(state=DiaryState.objects.get(conversation_id="c1"))
    assert outcome.outcome == "skipped" and "already covered" in outcome.reason
    assert len(_entries(alice.product)) == 1


def test_commit_hook_enqueues_on_commit_only(alice, django_capture_on_commit_callbacks) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turn = TurnFactory(scenario=scenario)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert "diaries" in run_commit_hooks(turn.pk)
    assert len([c for c in callbacks if _from_diaries(c)]) == 1
    assert not DiaryPlanRecord.objects.exists()  # nothing ran before the commit


def test_commit_hook_enqueues_nothing_for_scenarios_without_diaries(alice, django_capture_on_commit_callbacks) -> None:
    turn = TurnFactory(
        scenario=DiaryScenarioFactory(product=alice.product, memory_runtime="personalization", sources=[])
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run_commit_hooks(turn.pk)
    assert not [c for c in callbacks if _from_diaries(c)]


def _from_diaries(callback) -> bool:
    """An outbox send (after the commit) of the diary job."""
    return (
        getattr(callback, "func", None) is outbox_dispatch
        and callback.args[1] == turn_jobs.TASK
        and callback.args[2]["job"] == "diaries"
    )


def test_task_runs_the_service(alice) -> None:
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(3)]
    assert diary_plan_task.apply(args=[turns[2].pk]).get() == "written"
    assert diary_plan_task.apply(args=[turns[2].pk]).get() == "already_planned"


def test_diary_section_validator_normalizes_and_names_fields() -> None:
    assert validate_section("diary", {"minRounds": 3})["freeRoundsPerDiary"] == 10
    assert validate_diary_section(None)["minRounds"] == 20
    with pytest.raises(SectionInvalid) as raised:
        validate_section("diary", {"minRounds": 0, "freeDiaryQuota": {"count": "x"}, "bogus": 1})
    assert set(raised.value.errors) == {"diary.minRounds", "diary.freeDiaryQuota.count", "diary.bogus"}
