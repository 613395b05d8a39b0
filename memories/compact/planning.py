"""Pure rules of compact history: how the history variable is rendered and measured, and what a compaction covers.

The "rendered input" a budget limits is the `history` variable plus the current user message: the summary (with
its heading) and the raw messages it does not cover, one `role: content` line each, oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryhub.errors import RejectedByPolicy

from .policy import CompactPolicy

HEADING = "Summary of the earlier conversation:"
# A summary shorter than this says nothing: a message that leaves less room than this for the summary of a
# history that has to be summarised does not fit.
MIN_SUMMARY_CHARS = 64


class BudgetExceeded(RejectedByPolicy):
    """422 budget_exceeded: even the current message (with the shortest summary of the history) cannot fit."""

    code = "budget_exceeded"


@dataclass(frozen=True)
class HistoryMessage:
    id: int
    round: int
    role: str
    content: str

    @property
    def line(self) -> str:
        return f"{self.role}: {self.content}"


@dataclass(frozen=True)
class CompactionPlan:
    """Which uncovered messages the new summary covers, which stay raw, and how long the summary may be."""

    summarize: tuple[HistoryMessage, ...]
    keep: tuple[HistoryMessage, ...]
    summary_limit: int


def history_text(summary: str, messages: Sequence[HistoryMessage]) -> str:
    parts = [f"{HEADING}\n{summary}"] if summary else []
    parts.extend(message.line for message in messages)
    return "\n".join(parts)


def history_chars(summary: str, messages: Sequence[HistoryMessage]) -> int:
    """len(history_text(summary, messages)), without building the text."""
    parts = len(messages) + (1 if summary else 0)
    summary_part = len(HEADING) + 1 + len(summary) if summary else 0
    return summary_part + sum(len(m.line) for m in messages) + max(0, parts - 1)


def check_message_fits(policy: CompactPolicy, user_chars: int) -> None:
    if user_chars > policy.budget_chars:
        raise BudgetExceeded(
            f"the user message ({user_chars} characters) is longer than the budget ({policy.budget_chars})",
            details={"budgetChars": policy.budget_chars, "userMessageChars": user_chars},
        )


def plan_compaction(
    *,
    messages: Sequence[HistoryMessage],
    summarizable: int,
    has_summary: bool,
    policy: CompactPolicy,
    user_chars: int = 0,
    force: bool = False,
) -> CompactionPlan | None:
    """Plan a compaction of `messages` (the uncovered messages an input would carry, oldest first); None: nothing to do.

    Only the first `summarizable` messages may be covered (they continue the current compaction's range without a
    gap). The newest `keepRecentMessages` stay raw unless summary + kept messages would pass the target (the
    trigger, or less when the current message needs the room); then fewer are kept, down to none. `force` (a
    prepare that must fit) may also rewrite the summary alone. BudgetExceeded when not even the shortest
    summary fits beside the current message.
    """
    n = len(messages)
    lines = [len(m.line) for m in messages]
    summary_part = len(HEADING) + 1  # the heading and its line break; the summary follows
    target = min(policy.trigger_chars, policy.budget_chars - user_chars)
    floor = n - min(summarizable, n)  # messages that must stay raw
    keep = max(min(policy.keep_recent_messages, n), floor)
    kept_chars = sum(lines[n - keep :]) + keep  # each kept line and the line break before it
    while keep > floor and summary_part + policy.summary_max_chars + kept_chars > target:
        kept_chars -= lines[n - keep] + 1
        keep -= 1
    summarize = tuple(messages[: n - keep])
    if not summarize and not (force and has_summary):
        return None
    room = policy.budget_chars - user_chars - summary_part - kept_chars
    limit = min(policy.summary_max_chars, room)
    if limit < MIN_SUMMARY_CHARS:
        raise BudgetExceeded(
            f"the history cannot be summarised into the budget beside this message: {max(room, 0)} characters "
            f"are left for the summary, at least {MIN_SUMMARY_CHARS} are needed",
            details={
                "budgetChars": policy.budget_chars,
                "userMessageChars": user_chars,
                "keptMessageChars": kept_chars,
                "minimumSummaryChars": MIN_SUMMARY_CHARS,
            },
        )
    return CompactionPlan(summarize, tuple(messages[n - keep :]), limit)
