"""The `history` producer: the compact summary (if any), then the raw messages it does not cover, oldest first."""

from __future__ import annotations

from memories.selectors.witness import live_messages, witnessed_by
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceResult

from .planning import HistoryMessage, history_chars, history_text
from .policy import scenario_policy
from .selectors import history_scope
from .services import history_for_prepare


def _address(request: RecallRequest) -> ConversationAddress:
    return request.address


def produce_history(request: RecallRequest) -> SourceResult:
    policy = scenario_policy(request.scenario)
    if request.character:
        return _witnessed_history(request, policy)
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


def _witnessed_history(request: RecallRequest, policy) -> SourceResult:
    """A group scene's character: only the messages it witnessed, newest that fit the budget, oldest first.

    The conversation's compaction summarises every message, seen or not, so a character's history never uses it.
    """
    room = policy.budget_chars - len(request.user_message)
    kept: list[HistoryMessage] = []
    rows = witnessed_by(live_messages(_address(request), before_round=request.round), request.character)
    for row in rows.order_by("-round", "-id").values_list("id", "round", "role", "content").iterator():
        message = HistoryMessage(*row)
        if history_chars("", [message, *kept]) > room:
            break
        kept.insert(0, message)
    text = history_text("", kept)
    details = {
        "witness": request.character,
        "compaction": None,
        "rawMessages": len(kept),
        "historyChars": len(text),
        "inputChars": len(text) + len(request.user_message),
        "budgetChars": policy.budget_chars,
    }
    if not text:
        return SourceResult(text="", status="empty", details={**details, "reason": "no witnessed messages yet"})
    return SourceResult(text=text, status="ok", details=details)


def history_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [history_scope(_address(request))]
