"""The compassMemory producer (docs/diaries.md): the newest diary summaries of the conversation.

Recall is by user, conversation and source (the source's agentRef), never by the user's message.
How many summaries reach the prompt depends on the turn's subscriptionCategory; that is an amount
of recalled material, not a write cadence.
"""

from __future__ import annotations

from memories.selectors.witness import unwitnessed_rounds
from memoryhub import working_set
from memoryhub.runtimes.base import (
    SUBSCRIPTION_CATEGORIES,
    InvalidSubscriptionCategory,
    RecallRequest,
    SourceResult,
    normalize_subscription_category,
)

from . import selectors

RECALL_COUNTS = dict(zip(SUBSCRIPTION_CATEGORIES, (1, 2, 3, 5), strict=True))  # summaries recalled per plan
# The working set keeps the largest count once, so every category is served from one entry.
CACHED_COUNT = max(RECALL_COUNTS.values())


def recall_count(subscription_category: object) -> int:
    return RECALL_COUNTS[normalize_subscription_category(subscription_category or None)]


def render_summaries(entries: list[dict]) -> str:
    """Oldest of the recalled entries first, so the prompt reads in story order."""
    return "\n".join(f"Rounds {e['round_from']}-{e['round_to']}: {e['summary']}" for e in reversed(entries))


def produce_compass_memory(request: RecallRequest) -> SourceResult:
    try:
        count = recall_count(request.subscription_category)
    except InvalidSubscriptionCategory as exc:
        return SourceResult(text="", status="error", details={"reason": str(exc)})
    agent_ref = request.source.agent_ref
    scope = selectors.compass_scope(
        product_id=request.product.pk,
        user_id=request.user_id,
        conversation_id=request.conversation_id,
        agent_ref=agent_ref,
    )
    newest, cached = working_set.get_or_build(
        scope,
        lambda: selectors.diary_recent_summaries(
            product=request.product,
            user_id=request.user_id,
            conversation_id=request.conversation_id,
            limit=CACHED_COUNT,
            agent_ref=agent_ref,
        ),
    )
    hidden = 0
    if request.character:  # a group scene: no diary of a span holding a round this character did not witness
        unseen = _unwitnessed(request)
        witnessed = [e for e in newest if not any(e["round_from"] <= r <= e["round_to"] for r in unseen)]
        hidden, newest = len(newest) - len(witnessed), witnessed
    rewound = False
    if request.replaces_turn_id is not None:  # a regeneration: the diary as the rollback will leave it
        kept = [e for e in newest if e["round_to"] < request.round]  # diaries/rollback.py takes the rest back
        rewound, newest = len(kept) < len(newest), kept
    chosen = newest[:count]
    rewind = {"asBeforeReplacedReply": True} if rewound else {}
    if not chosen:
        reason = "no diary before the round being regenerated" if rewound else "no diary written yet"
        details = {"reason": reason, "limit": count, **rewind}
        return SourceResult(text="", status="empty", details=details, cached=cached)
    details = {"limit": count, "entryIds": [e["id"] for e in chosen], "throughRound": chosen[0]["round_to"]}
    if request.character:
        details |= {"witness": request.character, "hiddenEntries": hidden}
    details |= rewind
    return SourceResult(text=render_summaries(chosen), status="ok", details=details, cached=cached)


def _unwitnessed(request: RecallRequest) -> set[int]:
    address = request.address
    return unwitnessed_rounds(address, character=request.character or "")


def compass_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [
        selectors.compass_scope(
            product_id=request.product.pk,
            user_id=request.user_id,
            conversation_id=request.conversation_id,
            agent_ref=request.source.agent_ref,
        )
    ]
