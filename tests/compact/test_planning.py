"""The pure planning rules: rendering, measuring, and what a compaction covers."""

from __future__ import annotations

import pytest

from memories.compact.planning import (
    MIN_SUMMARY_CHARS,
    BudgetExceeded,
    HistoryMessage,
    history_chars,
    history_text,
    plan_compaction,
)
from memories.compact.policy import CompactPolicy


def _messages(count: int, length: int = 94) -> list[HistoryMessage]:
    return [
        HistoryMessage(id=n, round=(n + 1) // 2, role="user" if n % 2 else "assistant", content="x" * length)
        for n in range(1, count + 1)
    ]


@pytest.mark.parametrize("summary", ["", "the gist"])
@pytest.mark.parametrize("count", [0, 1, 5])
def test_history_chars_is_the_rendered_length(summary: str, count: int) -> None:
    messages = _messages(count)
    assert history_chars(summary, messages) == len(history_text(summary, messages))


def test_everything_but_the_recent_window_is_summarised() -> None:
    plan = plan_compaction(messages=_messages(20), summarizable=20, has_summary=False, policy=CompactPolicy(4000, 4))
    assert plan is not None
    assert [m.id for m in plan.keep] == [17, 18, 19, 20] and len(plan.summarize) == 16
    assert plan.summary_limit == 1000


def test_the_window_shrinks_until_summary_and_kept_messages_are_below_the_trigger() -> None:
    # 12 kept lines of ~100 characters plus a 500-character summary pass 1,600 (80 % of 2,000).
    plan = plan_compaction(messages=_messages(20), summarizable=20, has_summary=False, policy=CompactPolicy(2000, 12))
    assert plan is not None and len(plan.keep) < 12
    assert len("Summary of the earlier conversation:\n") + 500 + sum(len(m.line) + 1 for m in plan.keep) <= 1600


def test_only_the_contiguous_prefix_can_be_covered() -> None:
    plan = plan_compaction(messages=_messages(20), summarizable=6, has_summary=False, policy=CompactPolicy(4000, 0))
    assert plan is not None and [m.id for m in plan.summarize] == [1, 2, 3, 4, 5, 6]


def test_nothing_to_compact_unless_a_prepare_must_fit_with_a_summary_alone() -> None:
    policy = CompactPolicy(2000, 4)
    assert plan_compaction(messages=_messages(3), summarizable=3, has_summary=True, policy=policy) is None
    assert plan_compaction(messages=[], summarizable=0, has_summary=True, policy=policy, user_chars=1800) is None
    forced = plan_compaction(messages=[], summarizable=0, has_summary=True, policy=policy, user_chars=1800, force=True)
    assert forced is not None and forced.summarize == () and forced.keep == ()
    assert forced.summary_limit == 2000 - 1800 - len("Summary of the earlier conversation:\n")


def test_no_room_for_the_shortest_summary_is_budget_exceeded() -> None:
    policy = CompactPolicy(1000, 0)
    room = 1000 - len("Summary of the earlier conversation:\n")
    assert plan_compaction(
        messages=_messages(4), summarizable=4, has_summary=False, policy=policy, user_chars=room - MIN_SUMMARY_CHARS
    )
    with pytest.raises(BudgetExceeded):
        plan_compaction(
            messages=_messages(4),
            summarizable=4,
            has_summary=False,
            policy=policy,
            user_chars=room - MIN_SUMMARY_CHARS + 1,
        )
