"""Diary policy and planning (docs/diaries.md).

Pure code, no Django: the Celery task gathers a `DiaryState` from the database and asks
`plan_diary` what to write. Keeping the decision pure makes the round arithmetic testable
at every boundary and keeps "not every ten rounds for everything" in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Literal

from memoryhub.runtimes.base import SUBSCRIPTION_CATEGORIES, normalize_subscription_category
from memoryhub.wording import count

# The default policy (docs/diaries.md): the first diary after 20 rounds, then one every 10.
DEFAULT_MIN_ROUNDS = 20
DEFAULT_FREE_ROUNDS_PER_DIARY = 10
DEFAULT_QUOTA_PER_DAYS = 1

# Upper bounds only guard against nonsense (a typo of 10**9); they are not product limits.
MAX_ROUNDS_SETTING = 100_000
MAX_QUOTA_PER_DAYS = 366
MAX_QUOTA_COUNT = 100_000

FREE_CATEGORY, *_paid = SUBSCRIPTION_CATEGORIES
PAID_CATEGORIES = tuple(_paid)

Decision = Literal["skip", "summary_only", "summary_and_diary"]
SKIP: Decision = "skip"
SUMMARY_ONLY: Decision = "summary_only"
SUMMARY_AND_DIARY: Decision = "summary_and_diary"
QUOTA_EXHAUSTED_REASON = "free diary quota exhausted"


class PolicyError(ValueError):
    """A scenario's `diary` settings are invalid; `errors` maps field path -> problem."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{key}: {problem}" for key, problem in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class FreeDiaryQuota:
    """Full diaries a free-category user may get per `per_days` days; `count=None` is unlimited."""

    per_days: int = DEFAULT_QUOTA_PER_DAYS
    count: int | None = None


@dataclass(frozen=True)
class DiaryPolicy:
    enabled: bool = True
    min_rounds: int = DEFAULT_MIN_ROUNDS
    free_rounds_per_diary: int = DEFAULT_FREE_ROUNDS_PER_DIARY
    # None means "same cadence as free"; kept distinct from an explicit value so that
    # policy_to_dict round-trips what the operator actually wrote.
    paid_rounds_per_diary: int | None = None
    free_diary_quota: FreeDiaryQuota = field(default_factory=FreeDiaryQuota)

    def rounds_per_diary(self, paid: bool) -> int:
        if paid and self.paid_rounds_per_diary is not None:
            return self.paid_rounds_per_diary
        return self.free_rounds_per_diary


@dataclass(frozen=True)
class DiaryState:
    """What the planner needs to know about one conversation and user.

    rounds: completed rounds of the conversation, including the one just completed.
    last_diary_round: the round through which the newest entry (summary-only or full) covers; 0 if none.
    quota_used: full diaries written for this user in the free category in the current quota window.
    """

    rounds: int
    last_diary_round: int = 0
    quota_used: int = 0

    def __post_init__(self) -> None:
        for name in ("rounds", "last_diary_round", "quota_used"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"DiaryState.{name} must be a non-negative integer, got {value!r}")


@dataclass(frozen=True)
class DiaryPlan:
    """The decision for one completed turn; rounds are 0..0 when nothing is to be written."""

    decision: Decision
    reason: str
    round_from: int = 0
    round_to: int = 0

    @property
    def writes_summary(self) -> bool:
        return self.decision != SKIP

    @property
    def writes_diary(self) -> bool:
        return self.decision == SUMMARY_AND_DIARY


# ---------------------------------------------------------------- subscription categories


def is_paid(category: object) -> bool:
    return normalize_subscription_category(category) in PAID_CATEGORIES


# ---------------------------------------------------------------- parsing


_POLICY_KEYS = ("enabled", "minRounds", "freeRoundsPerDiary", "paidRoundsPerDiary", "freeDiaryQuota")
_QUOTA_KEYS = ("perDays", "count")


def _read_int(
    data: Mapping,
    key: str,
    path: str,
    *,
    errors: dict[str, str],
    default: int | None,
    minimum: int,
    maximum: int,
    nullable: bool = False,
) -> int | None:
    if key not in data:
        return default
    value = data[key]
    if value is None and nullable:
        return None
    # bool is an int subclass in Python; `true` is never a round count.
    if isinstance(value, bool) or not isinstance(value, int):
        errors[path] = "must be an integer" + (" or null" if nullable else "")
        return default
    if not minimum <= value <= maximum:
        errors[path] = f"must be between {minimum} and {maximum}"
        return default
    return value


def _unknown_keys(data: Mapping, allowed: tuple[str, ...], prefix: str, errors: dict[str, str]) -> None:
    for key in data:
        if key not in allowed:
            errors[f"{prefix}.{key}"] = f"unknown field (allowed: {', '.join(allowed)})"


def _parse_quota(data: object, errors: dict[str, str]) -> FreeDiaryQuota:
    path = "diary.freeDiaryQuota"
    if data is None:
        return FreeDiaryQuota()
    if not isinstance(data, Mapping):
        errors[path] = "must be an object"
        return FreeDiaryQuota()
    _unknown_keys(data, _QUOTA_KEYS, path, errors)
    per_days = _read_int(
        data,
        "perDays",
        f"{path}.perDays",
        errors=errors,
        default=DEFAULT_QUOTA_PER_DAYS,
        minimum=1,
        maximum=MAX_QUOTA_PER_DAYS,
    )
    count = _read_int(
        data, "count", f"{path}.count", errors=errors, default=None, minimum=0, maximum=MAX_QUOTA_COUNT, nullable=True
    )
    return FreeDiaryQuota(per_days=per_days or DEFAULT_QUOTA_PER_DAYS, count=count)


def parse_diary_policy(data: object) -> DiaryPolicy:
    """Parse a scenario's `diary` object; None (not configured) gives the defaults."""
    if data is None:
        return DiaryPolicy()
    if not isinstance(data, Mapping):
        raise PolicyError({"diary": "must be an object"})
    errors: dict[str, str] = {}
    _unknown_keys(data, _POLICY_KEYS, "diary", errors)
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        errors["diary.enabled"] = "must be a boolean"
    rounds = partial(_read_int, data, errors=errors, minimum=1, maximum=MAX_ROUNDS_SETTING)
    min_rounds = rounds("minRounds", "diary.minRounds", default=DEFAULT_MIN_ROUNDS)
    free_every = rounds("freeRoundsPerDiary", "diary.freeRoundsPerDiary", default=DEFAULT_FREE_ROUNDS_PER_DIARY)
    paid_every = rounds("paidRoundsPerDiary", "diary.paidRoundsPerDiary", default=None, nullable=True)
    quota = _parse_quota(data.get("freeDiaryQuota"), errors)
    if errors:
        raise PolicyError(errors)
    assert min_rounds is not None and free_every is not None  # not nullable, with defaults: errors if absent
    return DiaryPolicy(
        enabled=enabled,
        min_rounds=min_rounds,
        free_rounds_per_diary=free_every,
        paid_rounds_per_diary=paid_every,
        free_diary_quota=quota,
    )


def policy_to_dict(policy: DiaryPolicy) -> dict:
    """The camelCase JSON shape; `parse_diary_policy(policy_to_dict(p)) == p`."""
    return {
        "enabled": policy.enabled,
        "minRounds": policy.min_rounds,
        "freeRoundsPerDiary": policy.free_rounds_per_diary,
        "paidRoundsPerDiary": policy.paid_rounds_per_diary,
        "freeDiaryQuota": {"perDays": policy.free_diary_quota.per_days, "count": policy.free_diary_quota.count},
    }


# ---------------------------------------------------------------- planning


def _due_skip_reason(state: DiaryState, policy: DiaryPolicy, every: int) -> str | None:
    """Why no entry is due at this round, or None when one is due."""
    if state.rounds < policy.min_rounds:
        return f"round {state.rounds} < minRounds {policy.min_rounds}"
    if state.last_diary_round == 0:
        return None  # first entry: due as soon as minRounds is reached (or passed, after a missed task)
    if state.rounds <= state.last_diary_round:
        return f"round {state.rounds} already covered by the last diary (through round {state.last_diary_round})"
    since = state.rounds - state.last_diary_round
    if since < every:
        return f"{count(since, 'round')} since last diary < {every}"
    return None


def plan_diary(state: DiaryState, policy: DiaryPolicy, subscription_category: object = None) -> DiaryPlan:
    """Decide skip / summary_only / summary_and_diary for the turn that just completed.

    `>=` comparisons mean a missed or late task still writes, covering everything since the
    last entry. Raises InvalidSubscriptionCategory for an unknown category.
    """
    paid = is_paid(subscription_category)
    if not policy.enabled:
        return DiaryPlan(SKIP, "diary disabled by scenario policy")
    every = policy.rounds_per_diary(paid)
    reason = _due_skip_reason(state, policy, every)
    if reason is not None:
        return DiaryPlan(SKIP, reason)
    round_from, round_to = state.last_diary_round + 1, state.rounds
    if paid:
        category = normalize_subscription_category(subscription_category)
        return DiaryPlan(SUMMARY_AND_DIARY, f"due; paid category {category}", round_from, round_to)
    quota = policy.free_diary_quota
    if quota.count is not None and state.quota_used >= quota.count:
        return DiaryPlan(SUMMARY_ONLY, QUOTA_EXHAUSTED_REASON, round_from, round_to)
    return DiaryPlan(SUMMARY_AND_DIARY, "due; free diary quota available", round_from, round_to)


def quota_window_start(now: datetime, policy: DiaryPolicy) -> datetime:
    """Start of the rolling free-quota window: count free full diaries created after this instant.

    A rolling window (not calendar days) avoids choosing a time zone for "today".
    """
    return now - timedelta(days=policy.free_diary_quota.per_days)
