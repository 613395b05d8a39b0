"""Generated messages count correctly: "1 round", "2 rounds"."""

from __future__ import annotations

from diaries.planning import DiaryPolicy, DiaryState, plan_diary
from memoryhub.wording import count


def test_count_says_one_in_the_singular():
    assert [count(n, "round") for n in (0, 1, 2)] == ["0 rounds", "1 round", "2 rounds"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"


def test_the_diary_skip_reason_says_1_round():
    policy = DiaryPolicy(min_rounds=20, free_rounds_per_diary=10)
    assert plan_diary(DiaryState(21, 20, 0), policy).reason == "1 round since last diary < 10"
    assert plan_diary(DiaryState(22, 20, 0), policy).reason == "2 rounds since last diary < 10"
