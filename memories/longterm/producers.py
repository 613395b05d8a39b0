"""The `preferences` variable (docs/long-term-memories.md): the user's long-term memories relevant to this turn.

A `preferences` source names the kinds it recalls (`"kinds": [...]` on the source, else in the scenario's
`preferences` section; default ["preference"]): `preference` is one kind among the product's. The working
set (Redis) holds one snapshot per user and kind — ids, versions, content, expiry times and vectors of the
active index — rebuilt from the database on a miss and invalidated by every write (supersession included).
Every read drops the items whose expiry has passed, so an expired memory is never served from the cache.
With few memories all of them are used; with more, the top k are chosen for the turn's user message: by
default `hybrid` (docs/recall.md) — the weighted RRF of a BM25 ranking over the snapshot's words and the
cosine ranking over its vectors (exact, the same vectors the index holds), a cosine below the floor
(`minScore`, default SEARCH_MIN_SCORE) not counting — or `semantic` (cosine only, as before). Each used
memory's id, version, score and `why` is recorded in the source status.
"""

from __future__ import annotations

import json
import time

import numpy as np
from django.utils import timezone

from memories.longterm.keyword import bm25_rank, keyword_strings
from memories.longterm.kinds import KIND_NAME, KindSpec
from memories.longterm.models import EmbeddingIndex, LongTermMemory, current
from memories.longterm.rollback import longterm_as_rolled_back
from memories.longterm.selectors import (
    HYBRID,
    KEYWORD,
    MIN_SCORE_ERROR,
    SEMANTIC,
    hybrid_floor,
    hybrid_rrf_k,
    hybrid_weights,
    kind_spec,
    kinds_scope,
    valid_min_score,
)
from memories.longterm.services.embedding_index import ACTIVE_INDEX_SCOPE, active_index_pk, index_in_use
from memories.longterm.services.memories import kind_scope
from memories.longterm.services.vectors import backend_named
from memories.models import Turn
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.ranking import SignalHit, fuse, keep_places, script
from memoryhub.runtimes.base import RecallRequest, SourceResult
from memoryhub.runtimes.registry import SectionInvalid

DEFAULT_TOP_K = 5
DEFAULT_ALL_WHEN_AT_MOST = 5
MAX_SNAPSHOT = 200  # newest memories of one kind a turn may consider
PREFERENCE = "preference"


MAX_KINDS = 20


def _settings(request: RecallRequest) -> tuple[int, int, list[str]]:
    """topK and allWhenAtMost from the scenario section; the kinds from the source, else the section."""
    section = _section(request)
    options = getattr(request.source, "options", None) or {}
    kinds = options.get("kinds") or section.get("kinds") or [PREFERENCE]
    return section.get("topK", DEFAULT_TOP_K), section.get("allWhenAtMost", DEFAULT_ALL_WHEN_AT_MOST), kinds


def _section(request: RecallRequest) -> dict:
    return (getattr(request.scenario, "sections", None) or {}).get("preferences") or {}


def _ranking(request: RecallRequest) -> tuple[str, float]:
    """The ranking mode and the semantic floor: the source's options, else the section, else the defaults."""
    section, options = _section(request), getattr(request.source, "options", None) or {}
    mode = options.get("mode") or section.get("mode") or HYBRID
    floor = options.get("minScore", section.get("minScore"))
    return mode, hybrid_floor(floor) if mode == HYBRID else (floor if floor is not None else -1.0)


def _check_kinds(value: object) -> bool:
    return (
        isinstance(value, list)
        and 1 <= len(value) <= MAX_KINDS
        and all(isinstance(k, str) and KIND_NAME.fullmatch(k) for k in value)
        and len(set(value)) == len(value)
    )


def _ranking_errors(value: dict, prefix: str) -> dict[str, str]:
    errors = {}
    if "mode" in value and value["mode"] not in (HYBRID, SEMANTIC):
        errors[f"{prefix}mode"] = "must be hybrid or semantic"
    if "minScore" in value and not valid_min_score(value["minScore"]):
        errors[f"{prefix}minScore"] = MIN_SCORE_ERROR
    return errors


def validate_source_options(options: dict) -> dict:
    """A `preferences` source may name `"kinds": [...]` (default ["preference"]), `mode` and `minScore`."""
    errors = {key: "unknown field" for key in options if key not in ("kinds", "mode", "minScore")}
    if "kinds" in options and not _check_kinds(options["kinds"]):
        errors["kinds"] = f"must be a list of 1-{MAX_KINDS} distinct kind names"
    errors.update(_ranking_errors(options, ""))
    if errors:
        raise SectionInvalid(errors)
    return dict(options)


def validate_section(value: object) -> dict:
    """Scenario section `preferences`: {"topK": 1-20, "allWhenAtMost": 0-50, "kinds": [kind names],
    "mode": "hybrid" (default) | "semantic", "minScore": -1..1 (the cosine floor; docs/recall.md)}.

    `kinds` names the memory kinds the source recalls (default ["preference"]): the built-in one and
    the product's own (`/v1/memory-kinds`); a kind the product has not defined recalls nothing.
    """
    if not isinstance(value, dict):
        raise SectionInvalid({"preferences": "must be an object with topK, allWhenAtMost and/or kinds"})
    limits = {"topK": (1, 20), "allWhenAtMost": (0, 50)}
    errors = {f"preferences.{k}": "unknown field" for k in value if k not in {*limits, "kinds", "mode", "minScore"}}
    errors.update(_ranking_errors(value, "preferences."))
    for name, (low, high) in limits.items():
        item = value.get(name)
        if item is not None and (isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high):
            errors[f"preferences.{name}"] = f"must be an integer from {low} to {high}"
    kinds = value.get("kinds")
    if kinds is not None and not _check_kinds(kinds):
        errors["preferences.kinds"] = f"must be a list of 1-{MAX_KINDS} distinct kind names"
    if errors:
        raise SectionInvalid(errors)
    return {k: v for k, v in value.items() if v is not None}


# ---------------------------------------------------------------------------------------------
# The snapshot kept in the working set: one per user and kind
# ---------------------------------------------------------------------------------------------


def _active_index_pk() -> int | None:
    return active_index_pk()


def build_snapshot(scope: UserAddress, kind: str = PREFERENCE, definition_id: int | None = None) -> dict:
    """From the database: the newest current memories of a kind with their vectors in the active index.

    Each item carries its expiry (seconds since the epoch): the snapshot may outlive it, so every read
    filters on it. Superseded memories are left out (superseding invalidates the snapshot in its write).
    """
    index = EmbeddingIndex.objects.filter(status="active").first()
    rows = LongTermMemory.objects.filter(
        current(timezone.now()), product=scope.product, user_id=scope.user_id, kind=kind
    ).order_by("-pk")
    items = _items(rows[:MAX_SNAPSHOT], index)
    return {"index": index.pk if index else None, "kindId": definition_id, "items": items}


def _items(rows, index: EmbeddingIndex | None) -> list[dict]:
    """Snapshot items of these memories, with their vectors in `index` (None: no vectors)."""
    found = list(rows.values("pk", "memory_id", "version", "kind", "content", "embedding_index_id", "expires_at"))
    in_index = [row["pk"] for row in found if index is not None and row["embedding_index_id"] == index.pk]
    vectors = backend_named(index.backend).vectors(index, in_index) if index is not None and in_index else {}
    return [
        {
            "id": row["memory_id"],
            "seq": row["pk"],
            "kind": row["kind"],
            "version": row["version"],
            "content": row["content"],
            "expiresAt": row["expires_at"].timestamp() if row["expires_at"] else None,
            "vector": np.asarray(vectors[row["pk"]], dtype=np.float32).tobytes() if row["pk"] in vectors else None,
        }
        for row in found
    ]


def _as_before_replaced_reply(request: RecallRequest, items: list[dict], kinds: list[str]) -> tuple[list[dict], bool]:
    """A regeneration sees the memories as the rollback of the reply it replaces will leave them: that reply's
    memories gone, the ones they superseded back (memories/longterm/rollback.py)."""
    turn = Turn.objects.filter(pk=request.replaces_turn_id, product=request.product).first()
    if turn is None:
        return items, False
    hidden, restored = longterm_as_rolled_back(turn, kinds)
    if not hidden and not restored:
        return items, False
    index = EmbeddingIndex.objects.filter(status="active").first()
    back = _items(LongTermMemory.objects.filter(pk__in=[m.pk for m in restored]), index) if restored else []
    kept = [item for item in items if item["id"] not in hidden]
    return sorted([*kept, *back], key=lambda item: -item.get("seq", 0)), True


def _snapshot(scope: UserAddress, spec: KindSpec) -> tuple[dict, bool]:
    # A Redis outage propagates: the turn pipeline answers 503 (C3), never a turn without the cache.
    entry = kind_scope(scope, spec.name)
    build = lambda: build_snapshot(scope, spec.name, spec.definition_id)  # noqa: E731
    snapshot, cached = working_set.get_or_build(entry, build)
    # Another index activated since, or a kind deleted and defined again under the same name: rebuild.
    if snapshot["index"] != _active_index_pk() or snapshot.get("kindId") != spec.definition_id:
        working_set.invalidate(entry)
        snapshot, cached = build(), False
    return snapshot, cached


def _current_items(snapshot: dict, now: float) -> list[dict]:
    return [item for item in snapshot["items"] if item.get("expiresAt") is None or item["expiresAt"] > now]


# ---------------------------------------------------------------------------------------------
# Choosing and rendering
# ---------------------------------------------------------------------------------------------


def _rank(
    scope: UserAddress,
    specs: list[KindSpec],
    items: list[dict],
    index_pk: int | None,
    request: RecallRequest,
    top_k: int,
) -> tuple[list[tuple[dict, float | None]], list[dict] | None]:
    message = request.user_message
    if not message.strip():
        return [(item, None) for item in items[:top_k]], None
    in_use = index_in_use()  # read from the database: 503 if the embedder does not match the active index
    if index_pk != in_use.index.pk:
        # Cached before a reindex this process has not heard of (e.g. the local-memory cache of another
        # process): never compare the new identity's query with the old identity's vectors.
        now = time.time()
        fresh = [build_snapshot(scope, spec.name, spec.definition_id) for spec in specs]
        items = _merged([_current_items(snapshot, now) for snapshot in fresh])
    with_vectors = [item for item in items if item["vector"] is not None]
    if not with_vectors:
        return [(item, None) for item in items[:top_k]], None
    query = np.asarray(in_use.embed_query(scope.product.pk, message), dtype=np.float32)  # cached; 503/502
    matrix = np.stack([np.frombuffer(item["vector"], dtype=np.float32) for item in with_vectors])
    scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    order = np.argsort(-scores, kind="stable")
    mode, floor = _ranking(request)
    semantic = [SignalHit(int(i), float(scores[i])) for i in order if scores[i] >= floor]
    if mode == SEMANTIC:
        chosen = semantic[:top_k]
        why = [{SEMANTIC: {"rank": rank, "score": round(hit.score, 6)}} for rank, hit in enumerate(chosen, 1)]
        return [(with_vectors[hit.key], hit.score) for hit in chosen], why
    words = [" ".join(keyword_strings(item["content"])) for item in with_vectors]
    rankings = {KEYWORD: [SignalHit(i, score) for i, score in bm25_rank(words, message)], SEMANTIC: semantic}
    fused = fuse(rankings, hybrid_weights(), limit=len(with_vectors), rrf_k=hybrid_rrf_k())
    other_script = {i for i, text in enumerate(words) if script(text) != script(message)}
    fused = keep_places(fused, semantic, other_script, limit=top_k)
    return [(with_vectors[hit.key], hit.score) for hit in fused], [hit.why() for hit in fused]


def _merged(groups: list[list[dict]]) -> list[dict]:
    if len(groups) == 1:
        return groups[0]
    return sorted((item for group in groups for item in group), key=lambda item: -item.get("seq", 0))


def _line(item: dict, text_fields: dict[str, str]) -> str:
    content = item["content"] if isinstance(item["content"], dict) else {}
    kind = item.get("kind", PREFERENCE)
    if kind == PREFERENCE:
        facets = [f"{name}: {content[name]}" for name in ("language", "detail") if content.get(name)]
        text = content.get("text")
        return "- " + "; ".join(facets) + (f" — {text}" if text else "")
    field = text_fields.get(kind)
    value = content.get(field) if field else None
    if not isinstance(value, str) or not value.strip():
        value = json.dumps(content, ensure_ascii=False, sort_keys=True)
    return f"- {kind}: {value}"


def render(chosen: list[tuple[dict, float | None]], text_fields: dict[str, str] | None = None) -> str:
    return "\n".join(_line(item, text_fields or {}) for item, _ in chosen)


def produce_preferences(request: RecallRequest) -> SourceResult:
    """The user's current memories of the kinds the scenario names (default: preferences), as text."""
    scope = UserAddress(request.product, request.user_id)
    top_k, all_when_at_most, kind_names = _settings(request)
    specs = [spec for name in kind_names if (spec := kind_spec(request.product, name)) is not None]
    now, snapshots, cached = time.time(), [], True
    for spec in specs:
        snapshot, was_cached = _snapshot(scope, spec)
        snapshots.append(snapshot)
        cached = cached and was_cached
    items = _merged([_current_items(snapshot, now) for snapshot in snapshots])
    as_before = False
    if request.replaces_turn_id is not None:
        items, as_before = _as_before_replaced_reply(request, items, [spec.name for spec in specs])
        cached = cached and not as_before
    if not items:
        nothing = "no preferences saved" if kind_names == [PREFERENCE] else "no memories of these kinds saved"
        if as_before:  # there are some: those written for the reply being regenerated, which go with it
            nothing = "none before the reply being regenerated"
        details = {"reason": nothing, **({"asBeforeReplacedReply": True} if as_before else {})}
        return SourceResult(text="", status="empty", details=details, cached=cached)
    few = len(items) <= all_when_at_most
    index_pk = snapshots[0]["index"]
    chosen, whys = (
        ([(item, None) for item in items], None) if few else _rank(scope, specs, items, index_pk, request, top_k)
    )
    used = [
        {
            "id": item["id"],
            "version": item["version"],
            **({"kind": item["kind"]} if item.get("kind", PREFERENCE) != PREFERENCE else {}),
            **({"score": round(score, 6)} if score is not None else {}),
            **({"why": whys[position]} if whys else {}),
        }
        for position, (item, score) in enumerate(chosen)
    ]
    mode = "all" if few else _ranking(request)[0]
    details = {"mode": mode, "memories": used, "available": len(items)}
    if as_before:
        details["asBeforeReplacedReply"] = True
    version = chosen[0][0]["version"] if len(chosen) == 1 else None
    text_fields = {spec.name: spec.text_field for spec in specs}
    return SourceResult(text=render(chosen, text_fields), status="ok", version=version, details=details, cached=cached)


def preference_scopes(request: RecallRequest) -> list[working_set.Scope]:
    """The working-set entries a recall reads: each named kind's snapshot, the product's kinds, the active index."""
    user = UserAddress(request.product, request.user_id)
    _, _, kind_names = _settings(request)
    scopes = [kind_scope(user, name) for name in kind_names]
    if any(name != PREFERENCE for name in kind_names):
        scopes.append(kinds_scope(request.product))
    return [*scopes, ACTIVE_INDEX_SCOPE]
