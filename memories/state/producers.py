"""The `conversationState` producer: the actor projection of the conversation's state as readable text.

The stored state is served through the Redis working set (one entry per conversation); every commit
invalidates it before writing (memoryhub.cas), so a prepare after a commit sees the new revision.
"""

from __future__ import annotations

from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceResult, empty_result

from .rollback import state_as_rolled_back
from .selectors import config_of, project, render_records, state_snapshot
from .services import state_scope


def _address(request: RecallRequest) -> ConversationAddress:
    return request.address


def produce_conversation_state(request: RecallRequest) -> SourceResult:
    config = config_of(request.scenario)
    if config is None:
        return empty_result("the scenario has no state section")
    address = _address(request)
    snapshot, cached = working_set.get_or_build(state_scope(address), lambda: state_snapshot(address))
    details: dict = {}
    if request.replaces_turn_id is not None and snapshot["revision"]:
        # A regeneration sees the state as the rollback of the reply it replaces will leave it (as tables and
        # the story do): nothing that reply's turn committed.
        before = state_as_rolled_back(address, request.replaces_turn_id)
        if before is not None:
            snapshot, cached, details["asBeforeReplacedReply"] = before, False, True
    actor = project(snapshot, "actor", config)
    details |= {"records": len(actor["records"]), "categories": config.actor_categories}
    if not actor["records"]:
        reason = "the state was never written" if snapshot["revision"] == 0 else "no record in an actor category"
        return SourceResult(
            text="", status="empty", revision=snapshot["revision"], details={**details, "reason": reason}, cached=cached
        )
    return SourceResult(
        text=render_records(actor["records"], config),
        status="ok",
        revision=snapshot["revision"],
        details=details,
        cached=cached,
    )


def conversation_state_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [state_scope(_address(request))]
