"""The `recalledHistory` variable (docs/recall.md): the user's past messages relevant to this turn's message.

A source `{"agentRef": "history-search", "variable": "recalledHistory"}` searches the user's whole history
(hybrid by default, with long-term search's semantic floor, option `minScore`) with the current user message as
the query. It leaves out the rounds of this conversation that the prompt already holds — the current one and
the `recentRounds` before it (default 10) — so it brings back what the prompt no longer shows: other
conversations and earlier rounds of this one.
The hits are rendered oldest first, each with its time and speaker, inside `maxChars`; the source status
lists each recalled message's id, conversation, round, score and `why` (best first). When the turn names the
replying character (witness scopes, docs/roleplay.md), only messages that character witnessed are searched.
"""

from __future__ import annotations

from memories.history.selectors import MODES, HistoryFilters, HistoryHit, history_search
from memories.history.text import speaker
from memories.longterm.selectors import MIN_SCORE_ERROR, valid_min_score
from memories.longterm.services.embedding_index import ACTIVE_INDEX_SCOPE, query_embedding_scope
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.clients.embeddings import get_embedder
from memoryhub.runtimes.base import RecallRequest, SourceResult
from memoryhub.runtimes.registry import SectionInvalid

VARIABLE = "recalledHistory"
AGENT_REF = "history-search"
LIMITS = {"topK": (1, 20), "maxChars": (100, 20000), "recentRounds": (0, 10000)}
DEFAULTS = {"topK": 5, "maxChars": 2000, "recentRounds": 10, "mode": "hybrid"}
ELLIPSIS = "…"
MIN_LINE = 40  # below this much room left, a further line would say nothing useful


def validate_options(options: dict) -> dict:
    """A source may set topK (1-20), maxChars (100-20000), recentRounds (0-10000), mode and minScore (-1..1)."""
    errors = {key: "unknown field" for key in options if key not in DEFAULTS and key != "minScore"}
    for name, (low, high) in LIMITS.items():
        value = options.get(name)
        if name in options and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            errors[name] = f"must be an integer from {low} to {high}"
    if "mode" in options and options["mode"] not in MODES:
        errors["mode"] = f"must be one of: {', '.join(MODES)}"
    if "minScore" in options and not valid_min_score(options["minScore"]):
        errors["minScore"] = MIN_SCORE_ERROR
    if errors:
        raise SectionInvalid(errors)
    return dict(options)


def _options(request: RecallRequest) -> dict:
    return {**DEFAULTS, **(getattr(request.source, "options", None) or {})}


def _folded(text: str) -> str:
    """Every run of whitespace (newlines, tabs, …) as one space: a recalled message stays on its one line."""
    return " ".join(text.split())


def _line(hit: HistoryHit, room: int) -> str:
    entry = hit.entry
    # The name is folded too (a name is free text: a newline in it would start a line of its own, e.g. a
    # fake "SYSTEM:" one); a name of only whitespace is no name, so the role speaks.
    head = f"- [{entry.created_at:%Y-%m-%d %H:%M} UTC] {speaker(entry.role, _folded(entry.name))}: "
    text = _folded(entry.content)
    line = head + text
    return line if len(line) <= room else line[: max(room - len(ELLIPSIS), 0)] + ELLIPSIS


def render(hits: list[HistoryHit], max_chars: int) -> tuple[str, list[HistoryHit]]:
    """The hits that fit, oldest first, within max_chars (a line that does not fit whole is shortened)."""
    lines: list[tuple[HistoryHit, str]] = []
    used: list[HistoryHit] = []
    total = 0
    for hit in hits:  # best first: the budget goes to the best hits
        room = max_chars - total - (1 if lines else 0)
        if room < MIN_LINE:
            break
        line = _line(hit, room)
        lines.append((hit, line))
        used.append(hit)
        total += len(line) + (1 if len(lines) > 1 else 0)
    ordered = sorted(lines, key=lambda item: (item[0].entry.created_at, item[0].entry.pk))
    return "\n".join(line for _, line in ordered), used


def produce_recalled_history(request: RecallRequest) -> SourceResult:
    options = _options(request)
    if not request.user_message.strip():
        return SourceResult(text="", status="empty", details={"reason": "no user message to search with"})
    filters = HistoryFilters(
        exclude_conversation=request.conversation_id,
        exclude_from_round=max(1, request.round - options["recentRounds"]),
        witness=request.character,
    )
    hits = history_search(
        UserAddress(request.product, request.user_id),
        query=request.user_message,
        mode=options["mode"],
        limit=options["topK"],
        filters=filters,
        min_score=options.get("minScore"),  # none: the search's default floor (hybrid), or none (semantic)
    )
    details: dict = {
        "mode": options["mode"],
        "excludedFromRound": filters.exclude_from_round,
        "maxChars": options["maxChars"],
    }
    if request.character:
        details["witness"] = request.character
    if not hits:
        return SourceResult(text="", status="empty", details={**details, "reason": "no past message matched"})
    text, used = render(hits, options["maxChars"])
    details["messages"] = [
        {
            "messageId": hit.entry.pk,
            "conversationId": hit.entry.conversation_id,
            "round": hit.entry.round,
            "role": hit.entry.role,
            "score": round(hit.score, 6),
            "why": hit.why,
        }
        for hit in used
    ]
    return SourceResult(text=text, status="ok", details=details)


def recalled_history_scopes(request: RecallRequest) -> list[working_set.Scope]:
    """The working-set entries a recall reads: the query's vector and the active index."""
    scopes = [ACTIVE_INDEX_SCOPE]
    if _options(request)["mode"] != "keyword" and request.user_message.strip():
        scopes.append(query_embedding_scope(request.product.pk, get_embedder().identity, request.user_message))
    return scopes
