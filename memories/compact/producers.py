"""The `history` producer: the compact summary (if any), then the raw messages it does not cover, oldest first."""

from __future__ import annotations

from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceResult

from .policy import scenario_policy
from .selectors import history_scope
from .services import history_for_prepare


def _address(request: RecallRequest) -> ConversationAddress:
    return request.address


def produce_history(request: RecallRequest) -> SourceResult:
    policy = scenario_policy(request.scenario)
    prepared = history_for_prepare(
        address=_address(request), policy=policy, user_message=request.user_message, round_number=request.round
    )
    view = prepared.view
    text = view.text
    # The turn records which compaction its input used (Turn.sources[…].details.compaction).
    details: dict[str, object] = {
        "compaction": view.compaction.as_details() if view.compaction else None,
        "rawMessages": len(view.messages),
        "historyChars": len(text),
        "inputChars": len(text) + len(request.user_message),
        "budgetChars": policy.budget_chars,
    }
    if prepared.compacted:
        details["compacted"] = prepared.compacted
    if prepared.failure:
        details["rebuildFailed"] = prepared.failure
    if not text:
        return SourceResult(text="", status="empty", details={**details, "reason": "no messages yet"}, cached=False)
    return SourceResult(text=text, status="ok", details=details, cached=prepared.cached)


def history_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [history_scope(_address(request))]
