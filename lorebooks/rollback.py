"""A user message edited after its round's scan: the edit's turn does not keep the effects that scan started.

An edit is a new turn of the same round that copies the old turn's record (its prompt and source statuses:
memories/services/messages.py). A lorebook source's status carries the sticky/cooldown state after its scan
(`details.timedEffects`), which the next round starts from (docs/roleplay.md, "Timed effects"). The edited text
is not scanned again, so the edit's turn takes the state that earlier rounds left instead: an entry made sticky
by the old words ("light the torch") stops counting, as it does when the round is deleted.
"""

from __future__ import annotations

from memories.models import Turn
from memoryhub.addresses import ConversationAddress

from .producers import AGENT_REF
from .selectors import timed_state_before


def lorebook_edit_timed_effects(turn_pk: int, by_turn_pk: int | None) -> None:
    """The supersede hook. Only for an edit of the user message: a regeneration scanned its own message."""
    if by_turn_pk is None:
        return None
    old, new = (
        Turn.objects.select_related("product").filter(pk=turn_pk).first(),
        Turn.objects.filter(pk=by_turn_pk).first(),
    )
    if old is None or new is None or new.sources != old.sources or new.user_message == old.user_message:
        return None  # not a copy of the old turn's record (a regeneration), or the user message is the same
    address = ConversationAddress(old.product, old.user_id, old.conversation_id)
    sources = []
    for status in new.sources or []:
        if status.get("agentRef") == AGENT_REF and "timedEffects" in (status.get("details") or {}):
            before = timed_state_before(address, round=new.round, source_id=status["id"])
            status = {
                **status,
                "details": {**status["details"], "timedEffects": before or {"sticky": {}, "cooldown": {}}},
            }
        sources.append(status)
    Turn.objects.filter(pk=new.pk).update(sources=sources)
    return None  # nothing of the lorebook itself is undone: no rollback report
