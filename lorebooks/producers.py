"""The lorebook source: `{"agentRef": "lorebook", "variable": <any>, "lorebooks": [ids], …}`.

It scans the conversation's newest messages (the current user message first; in a group scene only those
the replying character witnessed, memories/selectors/witness.py) and fires entries with SillyTavern's
semantics (lorebooks/activation.py). The turn's source status records every fired entry with the key
that fired it, and the entries held back by probability, the budget, a group or a timed effect.

Timed effects (sticky, cooldown) are per conversation: the state after a turn's scan is kept on the turn
(`details.timedEffects` of its source status) and the next round starts from that of the newest visible turn
of an earlier round. A superseded turn is not visible, so a regenerated or swiped-away reply leaves no effect
behind, and a select (swipe back) brings its turn's effects back with it.
"""

from __future__ import annotations

from typing import Any

from lorebooks import formats
from lorebooks.activation import (
    LOGIC,
    MAX_SCAN_DEPTH,
    POSITIONS,
    Activation,
    Candidate,
    ScanSettings,
    activate,
)
from lorebooks.selectors import entries_for_recall, timed_state_before
from memories.selectors.witness import live_messages, recent_witnessed, witnessed_count
from memoryhub.clients.embeddings import embed_queries, get_embedder
from memoryhub.identifiers import ID_PATTERN
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import RecallRequest, SourceResult

AGENT_REF = "lorebook"
MAX_LOREBOOKS = 20
# option: (default, low, high) for integers, (default,) for booleans
_INTEGERS = {"scanDepth": (2, 0, MAX_SCAN_DEPTH), "budget": (4000, 1, 1_000_000), "maxRecursionSteps": (0, 0, 100)}
_BOOLEANS = {
    "recursive": False,
    "caseSensitive": False,
    "matchWholeWords": False,
    "includeNames": True,
    "useGroupScoring": False,
}
_VECTOR = {"vectorThreshold": 0.5, "vectorTopK": 3}


def validate_source_options(options: dict) -> dict:
    """`lorebooks` (1-20 ids) is required; scanDepth, budget (characters), recursive, maxRecursionSteps,
    caseSensitive, matchWholeWords, includeNames ("Name: text" scanned, as SillyTavern does) and
    useGroupScoring are optional."""
    errors = {key: "unknown field" for key in options if key not in {"lorebooks", *_INTEGERS, *_BOOLEANS, *_VECTOR}}
    threshold = options.get("vectorThreshold", 0.5)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        errors["vectorThreshold"] = "must be a number from 0 to 1"
    top = options.get("vectorTopK", 3)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 50:
        errors["vectorTopK"] = "must be an integer from 1 to 50"
    books = options.get("lorebooks")
    if (
        not isinstance(books, list)
        or not 1 <= len(books) <= MAX_LOREBOOKS
        or not all(isinstance(b, str) and ID_PATTERN.fullmatch(b) for b in books)
        or len(set(books)) != len(books)
    ):
        errors["lorebooks"] = f"required: a list of 1-{MAX_LOREBOOKS} distinct lorebook ids"
    for name, (_, low, high) in _INTEGERS.items():
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            errors[name] = f"must be an integer from {low} to {high}"
    for name in _BOOLEANS:
        if name in options and not isinstance(options[name], bool):
            errors[name] = "must be a boolean"
    if errors:
        raise registry.SectionInvalid(errors)
    return dict(options)


def _settings(options: dict, chat_length: int, timed_length: int, external: frozenset[tuple[str, str]]) -> ScanSettings:
    ints = {name: options.get(name, default) for name, (default, _, _) in _INTEGERS.items()}
    return ScanSettings(
        scan_depth=ints["scanDepth"],
        budget=ints["budget"],
        recursive=options.get("recursive", False),
        max_recursion_steps=ints["maxRecursionSteps"],
        case_sensitive=options.get("caseSensitive", False),
        match_whole_words=options.get("matchWholeWords", False),
        use_group_scoring=options.get("useGroupScoring", False),
        chat_length=chat_length,
        timed_length=timed_length,
        external=external,
    )


def _line(message: dict, include_names: bool) -> str:
    return f"{message['name']}: {message['content']}" if include_names and message.get("name") else message["content"]


def produce_lorebook(request: RecallRequest) -> SourceResult:
    options = request.source.options
    rows, missing = entries_for_recall(request.product, options.get("lorebooks", []))
    candidates = [Candidate(book.slug, entry.uid, formats.view_of(book.format, entry.data)) for book, entry in rows]
    address = request.address
    depth = max([options.get("scanDepth", 2)] + [c.view["scanDepth"] or 0 for c in candidates])
    # The turn's user message is the newest scanned one; an axon runtime never sees it, so its scan starts
    # with the earlier messages and every slot of scanDepth reaches one of them.
    newest = [request.user_message] if request.user_message else []
    limit = max(0, min(depth, MAX_SCAN_DEPTH) - len(newest))
    before = recent_witnessed(address, character=request.character, before_round=request.round, limit=limit)
    include_names = options.get("includeNames", True)
    # scanDepth 0 reads nothing, not even the user message: what it reports scanned is what was read
    messages = (newest + [_line(m, include_names) for m in before])[:depth]
    chat_length = witnessed_count(address, character=request.character, before_round=request.round) + 1
    seed = f"{request.product.pk}:{request.user_id}:{request.conversation_id}:{request.round}"
    scores = _vector_scores(candidates, messages[: options.get("scanDepth", 2)], options)
    external = frozenset(key for key, score in scores.items() if score is not None)
    # sticky/cooldown count the whole conversation's messages: their state is the conversation's, not a character's
    timed_length = live_messages(address, before_round=request.round).count() + 1
    timed = timed_state_before(address, round=request.round, source_id=request.source.id)
    settings = _settings(options, chat_length, timed_length, external)
    result = activate(candidates, messages, settings, seed=seed, timed=timed)
    details = _details(result, missing, scanned=len(messages), character=request.character)
    details |= {"chatLength": timed_length, "timedEffects": result.timed}
    if result.at_depth():
        details["atDepth"] = result.at_depth()
    parts = result.by_position()
    if scores:
        details["vectorScores"] = [
            {"lorebook": book, "uid": uid, "score": round(score, 4)} for (book, uid), score in scores.items() if score
        ]
    if not result.fired:
        return SourceResult(text="", status="empty", details=details | {"reason": "no entry fired"}, parts=parts)
    return SourceResult(text=result.text, status="ok", details=details, parts=parts)


def _vector_scores(candidates: list[Candidate], messages: list[str], options: dict) -> dict:
    """{(book, uid): cosine} of the `vectorized` entries nearest the scanned text, above the threshold, top K.

    The project's embedder measures it (memoryhub/clients/embeddings.py); a failing embedder fails the turn
    with its own 502/503/504, never a quiet keyword-only answer.
    """
    vectorized = [c for c in candidates if c.view["vectorized"] and not c.view["disable"] and c.view["content"]]
    text = "\n".join(m for m in messages if m.strip())
    if not vectorized or not text:
        return {}
    embedder = get_embedder()
    # The scanned text is the search and the entries the records, as in every other search: an asymmetric
    # embedder (e5, the blend) gives cosines on one scale only that way (docs/recall.md).
    (query,) = embed_queries(embedder, [text])
    vectors = embedder.embed([c.view["content"] for c in vectorized])
    scored = sorted(
        ((sum(a * b for a, b in zip(query, v, strict=True)), c) for v, c in zip(vectors, vectorized, strict=True)),
        key=lambda pair: -pair[0],
    )
    threshold, top = options.get("vectorThreshold", 0.5), options.get("vectorTopK", 3)
    return {(c.book, c.uid): score for score, c in scored[:top] if score >= threshold}


def _details(result: Activation, missing: list[str], *, scanned: int, character: str | None) -> dict[str, Any]:
    def ref(c: Candidate) -> dict[str, Any]:
        return {"lorebook": c.book, "uid": c.uid, "comment": c.view["comment"]}

    fired = []
    for f in result.fired:
        item = ref(f.candidate) | {"reason": f.reason, "key": f.key, "order": f.candidate.view["order"]}
        if f.secondary:
            item |= {"secondaryKeys": f.secondary, "logic": LOGIC[f.candidate.view["selectiveLogic"]]}
        item |= {"position": f.candidate.view["position"], "pass": f.step, "chars": len(f.candidate.view["content"])}
        if f.candidate.view["position"] == 4:
            item |= {"depth": f.candidate.view["depth"], "role": f.candidate.view["role"] or 0}
        fired.append(item)
    details: dict[str, Any] = {
        "fired": fired,
        "scannedMessages": scanned,
        "passes": result.passes,
        "chars": len(result.text),
    }
    if result.failed_probability:
        details["failedProbability"] = [ref(c) for c in result.failed_probability]
    if result.over_budget:
        details["overBudget"] = [ref(c) for c in result.over_budget]
    if result.group_losers:
        details["groupLosers"] = [ref(c) | {"group": group} for c, group in result.group_losers]
    if result.suppressed:
        details["suppressed"] = [ref(c) | {"by": why} for c, why in result.suppressed]
    if missing:
        details["missingLorebooks"] = missing
    if character:
        details["witness"] = character
    return details


def register() -> None:
    registry.register_agent_source(
        AGENT_REF,
        description="lorebook entries fired by the recent messages (SillyTavern World Info semantics)",
        producer=produce_lorebook,
        runtimes=("personalization", "axon_go", "axon_shadow"),
        options=validate_source_options,
        parts=tuple(POSITIONS.values()),
    )
