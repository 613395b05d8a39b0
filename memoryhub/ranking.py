"""Fusing ranked lists from several signals (keyword, semantic, …) into one, with the reason for each hit.

Weighted reciprocal rank fusion: a hit ranked r (1-based) by a signal of weight w earns w / (k + r); its
fused score is the sum over the signals that returned it. Ranks, not raw scores, are fused because a BM25
score and a cosine live on different scales. Every fused hit keeps `why`: the rank and the raw score it had
in each signal, the fused score, so a caller can show an operator why it matched.

Shared by long-term memory search and user-history search, so both rank and explain the same way.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)

# The usual RRF constant (Cormack et al. 2009): it damps the head of each list so one signal's first place
# does not outweigh agreement between signals.
DEFAULT_RRF_K = 60


@dataclass(frozen=True)
class SignalHit(Generic[Key]):
    """One entry of one signal's ranking: the item's key and the signal's own score for it."""

    key: Key
    score: float


@dataclass
class FusedHit(Generic[Key]):
    key: Key
    score: float = 0.0
    # signal name -> {"rank": r, "score": raw}
    signals: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def why(self) -> dict[str, object]:
        """The JSON-ready reason: each signal's rank and score (None when the signal did not return it)."""
        return {"fused": round(self.score, 6), **self.signals}


def fuse(
    rankings: Mapping[str, Sequence[SignalHit[Key]]],
    weights: Mapping[str, float],
    *,
    limit: int,
    rrf_k: int = DEFAULT_RRF_K,
) -> list[FusedHit[Key]]:
    """Fuse `rankings` (signal name -> hits, best first) into at most `limit` hits, best first.

    A signal missing from `weights` counts with weight 1. Ties on the fused score keep the order of the
    first signal that ranked the items, then the key's first appearance, so the result is deterministic.
    """
    fused: dict[Key, FusedHit[Key]] = {}
    first_seen: dict[Key, int] = {}
    for name, hits in rankings.items():
        weight = weights.get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            entry = fused.get(hit.key)
            if entry is None:
                entry = fused[hit.key] = FusedHit(key=hit.key)
                first_seen[hit.key] = len(first_seen)
            if name in entry.signals:  # a signal listing a key twice: its best rank counts
                continue
            entry.signals[name] = {"rank": rank, "score": round(float(hit.score), 6)}
            entry.score += weight / (rrf_k + rank)
    for entry in fused.values():
        for name in rankings:
            entry.signals.setdefault(name, {"rank": None, "score": None})
    ordered = sorted(fused.values(), key=lambda e: (-e.score, first_seen[e.key]))
    return ordered[:limit]
