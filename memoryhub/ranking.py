"""Fusing ranked lists from several signals (keyword, semantic, …) into one, with the reason for each hit.

Weighted reciprocal rank fusion: a hit ranked r (1-based) by a signal of weight w earns w / (k + r); its
fused score is the sum over the signals that returned it. Ranks, not raw scores, are fused because a BM25
score and a cosine live on different scales. Every fused hit keeps `why`: the rank and the raw score it had
in each signal, the fused score, so a caller can show an operator why it matched.

Shared by long-term memory search and user-history search, so both rank and explain the same way.

Two corrections on top of the fusion (docs/recall.md, measured in docs/performance.md):
- `keep_places`: the keyword signal only reads records written in the query's script. A record in another
  script (a Chinese record for an English query) can never be a keyword hit, so fusing would push it below
  every same-script record sharing a word with the query. Such a record keeps the place the semantic signal
  gave it; the keyword signal reorders the others around it.
- `spread_to_neighbours` (dialog): an answer often only makes sense with the turn before or after it, so a
  hit's adjacent turns earn a share of its fused score.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

Key = TypeVar("Key", bound=Hashable)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_OTHER_WORD = re.compile(r"[^\W\d_]+")

# The usual RRF constant (Cormack et al. 2009): it damps the head of each list so one signal's first place
# does not outweigh agreement between signals.
DEFAULT_RRF_K = 60


class SignalHit(NamedTuple, Generic[Key]):
    """One entry of one signal's ranking: the item's key and the signal's own score for it.

    A named tuple: a search makes a few hundred of them, and a frozen dataclass costs three times as much to make."""

    key: Key
    score: float


@dataclass(slots=True)
class FusedHit(Generic[Key]):
    key: Key
    score: float = 0.0
    # signal name -> (rank, raw score), for the signals that ranked it; `why` rounds them for the hits shown
    ranked: dict[str, tuple[int, float]] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # every fused signal, in order: `why` lists each, None where it did not rank
    # What spread_to_neighbours gave it (None: not spread).
    from_neighbours: float | None = None

    def why(self) -> dict[str, object]:
        """The JSON-ready reason: each signal's rank and score (None when the signal did not return it)."""
        why: dict[str, object] = {"fused": round(self.score, 6)}
        for name in self.names:
            got = self.ranked.get(name)
            why[name] = {"rank": got[0], "score": round(got[1], 6)} if got else {"rank": None, "score": None}
        if self.from_neighbours is not None:
            why["neighbours"] = {"score": round(self.from_neighbours, 6)}
        return why


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
    fused: dict[Key, FusedHit[Key]] = {}  # in order of first appearance
    names = tuple(rankings)
    for name, hits in rankings.items():
        weight = weights.get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            entry = fused.get(hit.key)
            if entry is None:
                fused[hit.key] = FusedHit(hit.key, weight / (rrf_k + rank), {name: (rank, float(hit.score))}, names)
            elif name not in entry.ranked:  # a signal listing a key twice: its best rank counts
                entry.ranked[name] = (rank, float(hit.score))
                entry.score += weight / (rrf_k + rank)
    # sorted() is stable: equal scores keep the order of first appearance.
    return sorted(fused.values(), key=_by_score)[:limit]


def _by_score(hit: FusedHit) -> float:
    return -hit.score


def script(text: str) -> str:
    """ "cjk" when a text is mostly Chinese (its CJK characters outnumber its other words), else "other".

    What a keyword match cannot cross: a CJK character counts against a whole word of other letters, so
    "我在学Python" is Chinese and "I love 北京" is not.
    """
    if not _CJK.search(text):  # most texts: no need to count their words (0 CJK characters never outnumber them)
        return "other"
    cjk = len(_CJK.findall(text))
    words = len(_OTHER_WORD.findall(_CJK.sub(" ", text)))
    return "cjk" if cjk > words else "other"


def keep_places(
    fused: Sequence[FusedHit[Key]], anchor: Sequence[SignalHit[Key]], unreadable: Collection[Key], *, limit: int
) -> list[FusedHit[Key]]:
    """`fused` with every key of `unreadable` put back at its rank in `anchor` (1-based, as that signal ranked it).

    For the keys the other signals could not read (not "did not match": could not), only `anchor` has an
    opinion; the readable keys keep their fused order in the remaining places. Fused scores are untouched.
    """
    if not unreadable:
        return list(fused[:limit])
    by_key = {hit.key: hit for hit in fused}
    placed = {
        rank: by_key[hit.key] for rank, hit in enumerate(anchor, start=1) if hit.key in unreadable and hit.key in by_key
    }
    kept = {hit.key for hit in placed.values()}
    rest = iter([hit for hit in fused if hit.key not in kept])
    out: list[FusedHit[Key]] = []
    while len(out) < limit:
        hit = placed.pop(len(out) + 1, None) or next(rest, None)
        if hit is None:
            if not placed:
                break
            hit = placed.pop(min(placed))
        out.append(hit)
    return out


def spread_to_neighbours(
    fused: Sequence[FusedHit[Key]], neighbours: Mapping[Key, Sequence[Key]], share: float, *, limit: int
) -> list[FusedHit[Key]]:
    """Each hit's neighbours (its adjacent turns) earn `share` × its fused score; re-sorted, at most `limit`.

    A neighbour not among the hits joins them with no signal of its own. `why` records what each hit got
    from its neighbours under "neighbours" ({"score": the sum, 0 for none}); "fused" is the final score.
    """
    hits = {hit.key: hit for hit in fused}  # in fused order; a neighbour that joins comes after them
    names = fused[0].names if fused else ()
    gained: dict[Key, float] = {}
    for hit in fused:
        for key in neighbours.get(hit.key, ()):
            gained[key] = gained.get(key, 0.0) + share * hit.score
    for key, entry in hits.items():
        extra = gained.get(key, 0.0)
        entry.score += extra
        entry.from_neighbours = extra
    for key, extra in gained.items():
        if key not in hits:
            hits[key] = FusedHit(key, extra, {}, names, extra)
    return sorted(hits.values(), key=_by_score)[:limit]  # stable: ties keep that order
