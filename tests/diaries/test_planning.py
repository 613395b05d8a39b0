from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diaries.planning import (
    QUOTA_EXHAUSTED_REASON,
    SUBSCRIPTION_CATEGORIES,
    DiaryPlan,
    DiaryPolicy,
    DiaryState,
    FreeDiaryQuota,
    PolicyError,
    is_paid,
    parse_diary_policy,
    plan_diary,
    policy_to_dict,
    quota_window_start,
)
from memoryhub.runtimes.base import InvalidSubscriptionCategory

DEFAULTS = DiaryPolicy()


def _last_due(rounds: int) -> int:
    """last_diary_round a conversation following the default cadence has before `rounds`."""
    if rounds <= 20:
        return 0
    return 20 + ((rounds - 21) // 10) * 10


@pytest.mark.parametrize(
    ("rounds", "decision", "reason"),
    [
        (1, "skip", "round 1 < minRounds 20"),
        (19, "skip", "round 19 < minRounds 20"),
        (20, "summary_and_diary", None),
        (21, "skip", "1 round since last diary < 10"),
        (29, "skip", "9 rounds since last diary < 10"),
        (30, "summary_and_diary", None),
        (31, "skip", "1 round since last diary < 10"),
        (40, "summary_and_diary", None),
    ],
)
def test_default_cadence_at_boundaries(rounds: int, decision: str, reason: str | None) -> None:
    last = _last_due(rounds)
    plan = plan_diary(DiaryState(rounds=rounds, last_diary_round=last), DEFAULTS, None)
    assert plan.decision == decision
    if reason is not None:
        assert plan.reason == reason
        assert (plan.round_from, plan.round_to) == (0, 0)
    else:
        assert (plan.round_from, plan.round_to) == (last + 1, rounds)


def test_walking_every_round_writes_exactly_at_20_30_40() -> None:
    last, written = 0, []
    for rounds in range(1, 46):
        plan = plan_diary(DiaryState(rounds=rounds, last_diary_round=last), DEFAULTS)
        if plan.writes_summary:
            written.append((plan.round_from, plan.round_to))
            last = plan.round_to
    assert written == [(1, 20), (21, 30), (31, 40)]


def test_first_entry_covers_one_to_min_rounds() -> None:
    plan = plan_diary(DiaryState(rounds=20), DEFAULTS)
    assert plan == DiaryPlan("summary_and_diary", plan.reason, 1, 20)


def test_missed_task_is_still_due_and_covers_the_gap() -> None:
    assert plan_diary(DiaryState(rounds=23), DEFAULTS).round_from == 1
    plan = plan_diary(DiaryState(rounds=37, last_diary_round=20), DEFAULTS)
    assert (plan.decision, plan.round_from, plan.round_to) == ("summary_and_diary", 21, 37)


def test_round_already_covered_is_skipped() -> None:
    plan = plan_diary(DiaryState(rounds=30, last_diary_round=30), DEFAULTS)
    assert plan.decision == "skip"
    assert "already covered" in plan.reason


def test_memory_v2_reading_is_expressible() -> None:
    # "first diary after 20 rounds, then every 10" with explicit settings
    policy = parse_diary_policy({"minRounds": 20, "freeRoundsPerDiary": 10, "paidRoundsPerDiary": 10})
    assert plan_diary(DiaryState(rounds=20), policy, "max").writes_diary
    assert plan_diary(DiaryState(rounds=29, last_diary_round=20), policy, "max").decision == "skip"
    assert plan_diary(DiaryState(rounds=30, last_diary_round=20), policy, "max").writes_diary


# ---------------------------------------------------------------- quota and categories

LIMITED = DiaryPolicy(free_diary_quota=FreeDiaryQuota(per_days=1, count=2))


def test_free_quota_exhausted_gives_summary_only() -> None:
    plan = plan_diary(DiaryState(rounds=20, quota_used=2), LIMITED, "default")
    assert plan.decision == "summary_only"
    assert plan.reason == QUOTA_EXHAUSTED_REASON
    assert (plan.round_from, plan.round_to) == (1, 20)
    assert plan.writes_summary and not plan.writes_diary


def test_free_quota_available_gives_full_diary() -> None:
    assert plan_diary(DiaryState(rounds=20, quota_used=1), LIMITED, None).decision == "summary_and_diary"


def test_zero_count_quota_never_writes_free_diaries() -> None:
    policy = DiaryPolicy(free_diary_quota=FreeDiaryQuota(count=0))
    assert plan_diary(DiaryState(rounds=20), policy).decision == "summary_only"


def test_null_count_is_unlimited() -> None:
    plan = plan_diary(DiaryState(rounds=20, quota_used=10_000), DEFAULTS, "default")
    assert plan.decision == "summary_and_diary"


def test_not_due_is_skip_even_when_quota_exhausted() -> None:
    assert plan_diary(DiaryState(rounds=25, last_diary_round=20, quota_used=5), LIMITED).decision == "skip"


@pytest.mark.parametrize(
    ("category", "paid"), [(None, False), ("default", False), ("plus", True), ("ultra", True), ("max", True)]
)
def test_each_subscription_category(category: str | None, paid: bool) -> None:
    assert is_paid(category) is paid
    plan = plan_diary(DiaryState(rounds=20, quota_used=2), LIMITED, category)
    # paid categories ignore the free quota entirely
    assert plan.decision == ("summary_and_diary" if paid else "summary_only")


@pytest.mark.parametrize("category", ["free", "Plus", "", "pro", 1, True])
def test_unknown_subscription_category_is_refused(category: object) -> None:
    with pytest.raises(InvalidSubscriptionCategory) as info:
        plan_diary(DiaryState(rounds=20), DEFAULTS, category)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError):
        is_paid(category)


def test_subscription_categories_constant() -> None:
    assert SUBSCRIPTION_CATEGORIES == ("default", "plus", "ultra", "max")


# ---------------------------------------------------------------- custom and disabled policies


def test_custom_policy_with_paid_cadence() -> None:
    policy = parse_diary_policy(
        {"minRounds": 5, "freeRoundsPerDiary": 8, "paidRoundsPerDiary": 3, "freeDiaryQuota": {"perDays": 7, "count": 1}}
    )
    assert plan_diary(DiaryState(rounds=4), policy).reason == "round 4 < minRounds 5"
    assert plan_diary(DiaryState(rounds=5), policy).decision == "summary_and_diary"
    state = DiaryState(rounds=8, last_diary_round=5, quota_used=0)
    assert plan_diary(state, policy, "plus").decision == "summary_and_diary"
    assert plan_diary(state, policy, "default").reason == "3 rounds since last diary < 8"
    assert plan_diary(DiaryState(rounds=13, last_diary_round=5, quota_used=1), policy).decision == "summary_only"


def test_disabled_policy_skips() -> None:
    policy = parse_diary_policy({"enabled": False})
    plan = plan_diary(DiaryState(rounds=40, last_diary_round=0), policy, "max")
    assert plan.decision == "skip"
    assert "disabled" in plan.reason


def test_negative_state_is_refused() -> None:
    with pytest.raises(ValueError):
        DiaryState(rounds=-1)


# ---------------------------------------------------------------- parsing


def test_parse_defaults() -> None:
    assert parse_diary_policy(None) == DiaryPolicy()
    assert parse_diary_policy({}) == DiaryPolicy()
    policy = parse_diary_policy({})
    assert (policy.min_rounds, policy.free_rounds_per_diary, policy.rounds_per_diary(True)) == (20, 10, 10)
    assert policy.free_diary_quota == FreeDiaryQuota(per_days=1, count=None)


def test_parse_full_and_round_trip() -> None:
    data = {
        "enabled": True,
        "minRounds": 12,
        "freeRoundsPerDiary": 6,
        "paidRoundsPerDiary": 4,
        "freeDiaryQuota": {"perDays": 3, "count": 2},
    }
    policy = parse_diary_policy(data)
    assert policy == DiaryPolicy(True, 12, 6, 4, FreeDiaryQuota(3, 2))
    assert policy_to_dict(policy) == data
    assert parse_diary_policy(policy_to_dict(DiaryPolicy())) == DiaryPolicy()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"minRounds": "20"}, "diary.minRounds"),
        ({"minRounds": 0}, "diary.minRounds"),
        ({"minRounds": 2.5}, "diary.minRounds"),
        ({"minRounds": None}, "diary.minRounds"),
        ({"freeRoundsPerDiary": True}, "diary.freeRoundsPerDiary"),
        ({"freeRoundsPerDiary": -1}, "diary.freeRoundsPerDiary"),
        ({"paidRoundsPerDiary": 0}, "diary.paidRoundsPerDiary"),
        ({"enabled": "yes"}, "diary.enabled"),
        ({"freeDiaryQuota": 3}, "diary.freeDiaryQuota"),
        ({"freeDiaryQuota": {"perDays": 0}}, "diary.freeDiaryQuota.perDays"),
        ({"freeDiaryQuota": {"count": -1}}, "diary.freeDiaryQuota.count"),
        ({"freeDiaryQuota": {"count": "1"}}, "diary.freeDiaryQuota.count"),
        ({"freeDiaryQuota": {"perDay": 1}}, "diary.freeDiaryQuota.perDay"),
        ({"min_rounds": 20}, "diary.min_rounds"),
    ],
)
def test_parse_errors_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_diary_policy(data)
    assert field in info.value.errors
    assert isinstance(info.value, ValueError)


def test_parse_collects_every_error() -> None:
    with pytest.raises(PolicyError) as info:
        parse_diary_policy({"minRounds": 0, "freeRoundsPerDiary": "x", "extra": 1})
    assert set(info.value.errors) == {"diary.minRounds", "diary.freeRoundsPerDiary", "diary.extra"}


@pytest.mark.parametrize("data", [[], "diary", 20, True])
def test_parse_non_object(data: object) -> None:
    with pytest.raises(PolicyError) as info:
        parse_diary_policy(data)
    assert info.value.errors == {"diary": "must be an object"}


def test_quota_window_is_rolling_per_days() -> None:
    now = datetime(2025, 1, 10, 12, tzinfo=UTC)
    policy = DiaryPolicy(free_diary_quota=FreeDiaryQuota(per_days=7, count=1))
    assert quota_window_start(now, policy) == now - timedelta(days=7)
