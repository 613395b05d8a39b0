"""The `preferences` variable (SPEC S3, C1–C3): the user's preference memories relevant to this turn.

The working set (Redis) holds the user's preference snapshot — ids, versions, content and vectors
of the active index — rebuilt from the database on a miss or expiry and invalidated by every write.
With few preferences all of them are used; with more, the turn's user message is embedded and the
top k are chosen by cosine similarity over the snapshot (exact, the same vectors the index holds).
Each used memory's id and version is recorded in the source status.
"""

from __future__ import annotations

import numpy as np

from memories.longterm.models import EmbeddingIndex, LongTermMemory
from memories.longterm.services.embedding_index import ACTIVE_INDEX_SCOPE, active_index_pk, index_in_use
from memories.longterm.services.memories import preferences_scope
from memories.longterm.services.vectors import backend_named
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.runtimes.base import RecallRequest, SourceResult
from memoryhub.runtimes.registry import SectionInvalid

DEFAULT_TOP_K = 5
DEFAULT_ALL_WHEN_AT_MOST = 5
MAX_SNAPSHOT = 200  # newest preferences a turn may consider


def _settings(scenario) -> tuple[int, int]:
    section = (getattr(scenario, "sections", None) or {}).get("preferences") or {}
    return section.get("topK", DEFAULT_TOP_K), section.get("allWhenAtMost", DEFAULT_ALL_WHEN_AT_MOST)


def validate_section(value: object) -> dict:
    """Scenario section `preferences`: {"topK": 1-20, "allWhenAtMost": 0-50}."""
    if not isinstance(value, dict):
        raise SectionInvalid({"preferences": "must be an object with topK and/or allWhenAtMost"})
    limits = {"topK": (1, 20), "allWhenAtMost": (0, 50)}
    errors = {f"preferences.{k}": "unknown field" for k in value if k not in limits}
    for name, (low, high) in limits.items():
        item = value.get(name)
        if item is not None and (isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high):
            errors[f"preferences.{name}"] = f"must be an integer from {low} to {high}"
    if errors:
        raise SectionInvalid(errors)
    return {k: v for k, v in value.items() if v is not None}


# ---------------------------------------------------------------------------------------------
# The snapshot kept in the working set
# ---------------------------------------------------------------------------------------------


def _active_index_pk() -> int | None:
    return active_index_pk()


def build_snapshot(scope: UserAddress) -> dict:
    """From the database: the newest preferences with their vectors in the active index (float32 bytes)."""
    index = EmbeddingIndex.objects.filter(status="active").first()
    rows = list(
        LongTermMemory.objects.filter(product=scope.product, user_id=scope.user_id, kind="preference")
        .order_by("-pk")
        .values("pk", "memory_id", "version", "content", "embedding_index_id")[:MAX_SNAPSHOT]
    )
    in_index = [row["pk"] for row in rows if index is not None and row["embedding_index_id"] == index.pk]
    vectors = backend_named(index.backend).vectors(index, in_index) if in_index else {}
    items = [
        {
            "id": row["memory_id"],
            "version": row["version"],
            "content": row["content"],
            "vector": np.asarray(vectors[row["pk"]], dtype=np.float32).tobytes() if row["pk"] in vectors else None,
        }
        for row in rows
    ]
    return {"index": index.pk if index else None, "items": items}


def _snapshot(scope: UserAddress) -> tuple[dict, bool]:
    # A Redis outage propagates: the turn pipeline answers 503 (C3), never a turn without the cache.
    snapshot, cached = working_set.get_or_build(preferences_scope(scope), lambda: build_snapshot(scope))
    if snapshot["index"] != _active_index_pk():  # a reindex activated another index since
        working_set.invalidate(preferences_scope(scope))
        snapshot, cached = build_snapshot(scope), False
    return snapshot, cached


# ---------------------------------------------------------------------------------------------
# Choosing and rendering
# ---------------------------------------------------------------------------------------------


def _rank(scope: UserAddress, snapshot: dict, message: str, top_k: int) -> list[tuple[dict, float | None]]:
    items = snapshot["items"]
    if not message.strip():
        return [(item, None) for item in items[:top_k]]
    in_use = index_in_use()  # read from the database: 503 if the embedder does not match the active index
    if snapshot["index"] != in_use.index.pk:
        # Cached before a reindex this process has not heard of (e.g. the local-memory cache of another
        # process): never compare the new identity's query with the old identity's vectors.
        items = build_snapshot(scope)["items"]
    with_vectors = [item for item in items if item["vector"] is not None]
    if not with_vectors:
        return [(item, None) for item in items[:top_k]]
    query = np.asarray(in_use.embed_one(message), dtype=np.float32)  # 503/502 if the embedder fails
    matrix = np.stack([np.frombuffer(item["vector"], dtype=np.float32) for item in with_vectors])
    scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    order = np.argsort(-scores, kind="stable")[:top_k]
    return [(with_vectors[i], float(scores[i])) for i in order]


def render(chosen: list[tuple[dict, float | None]]) -> str:
    lines = []
    for item, _ in chosen:
        content = item["content"]
        facets = [f"{name}: {content[name]}" for name in ("language", "detail") if content.get(name)]
        text = content.get("text")
        lines.append("- " + "; ".join(facets) + (f" — {text}" if text else ""))
    return "\n".join(lines)


def produce_preferences(request: RecallRequest) -> SourceResult:
    scope = UserAddress(request.product, request.user_id)
    snapshot, cached = _snapshot(scope)
    items = snapshot["items"]
    if not items:
        return SourceResult(text="", status="empty", details={"reason": "no preferences saved"}, cached=cached)
    top_k, all_when_at_most = _settings(request.scenario)
    few = len(items) <= all_when_at_most
    chosen = [(item, None) for item in items] if few else _rank(scope, snapshot, request.user_message, top_k)
    used = [
        {"id": item["id"], "version": item["version"], **({"score": round(score, 6)} if score is not None else {})}
        for item, score in chosen
    ]
    details = {"mode": "all" if few else "semantic", "memories": used, "available": len(items)}
    version = chosen[0][0]["version"] if len(chosen) == 1 else None
    return SourceResult(text=render(chosen), status="ok", version=version, details=details, cached=cached)


def preference_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [preferences_scope(UserAddress(request.product, request.user_id)), ACTIVE_INDEX_SCOPE]
