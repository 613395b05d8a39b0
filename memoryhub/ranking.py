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
- `fuse_with_neighbours` (dialog): an answer often only makes sense with the turn before or after it, so a
  hit's adjacent turns earn a share of its fused score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Container, Hashable, Iterable, Mapping, Sequence
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


# A signal's entry as (key, score): a SignalHit, or a plain pair where a caller makes hundreds of them.
Ranked = tuple[Key, float]


@dataclass(slots=True)
class FusedHit(Generic[Key]):
    key: Key
    score: float = 0.0
    # signal name -> (rank, raw score), for the signals that ranked it; `why` rounds them for the hits shown
    ranked: dict[str, tuple[int, float]] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # every fused signal, in order: `why` lists each, None where it did not rank
    # What fuse_with_neighbours gave it from its neighbours (None: not spread).
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
    scores, ranks = _rrf(rankings, weights, rrf_k)
    names = tuple(rankings)
    # sorted() is stable: equal scores keep the order of first appearance.
    order = sorted(scores, key=scores.__getitem__, reverse=True)[:limit]
    return [FusedHit(key, scores[key], {n: ranks[n][key] for n in names if key in ranks[n]}, names) for key in order]


def _rrf(
    rankings: Mapping[str, Sequence[Ranked[Key]]], weights: Mapping[str, float], rrf_k: int
) -> tuple[dict[Key, float], dict[str, dict[Key, tuple[int, float]]]]:
    """Each key's fused score (in order of first appearance) and, per signal, its (rank, raw score)."""
    scores: dict[Key, float] = {}
    ranks: dict[str, dict[Key, tuple[int, float]]] = {}
    for name, hits in rankings.items():
        weight = weights.get(name, 1.0)
        ranked = ranks[name] = {}
        earned = [weight / (rrf_k + rank) for rank in range(1, len(hits) + 1)]  # what each place earns
        for rank, (key, score) in enumerate(hits, start=1):
            if key in ranked:  # a signal listing a key twice: its best rank counts
                continue
            ranked[key] = (rank, float(score))
            scores[key] = scores.get(key, 0.0) + earned[rank - 1]
    return scores, ranks


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


def ids_by_script(pairs: Iterable[tuple[Key, str]]) -> dict[str, frozenset[Key]]:
    """The keys written in each script, from (key, its `script`) pairs."""
    keys: dict[str, set[Key]] = {}
    for key, written_in in pairs:
        keys.setdefault(written_in, set()).add(key)
    return {written_in: frozenset(found) for written_in, found in keys.items()}


def written_in_another_script(by_script: Mapping[str, frozenset[Key]], query_script: str) -> frozenset[Key]:
    """The keys a query in `query_script` cannot read by keyword (`keep_places`' unreadable keys)."""
    others = [keys for written_in, keys in by_script.items() if written_in != query_script]
    return others[0] if len(others) == 1 else frozenset().union(*others)


def keep_places(
    fused: Sequence[FusedHit[Key]], anchor: Sequence[SignalHit[Key]], unreadable: Collection[Key], *, limit: int
) -> list[FusedHit[Key]]:
    """`fused` with every key of `unreadable` put back at its rank in `anchor` (1-based, as that signal ranked it).

    For the keys the other signals could not read (not "did not match": could not), only `anchor` has an
    opinion; the readable keys keep their fused order in the remaining places. Fused scores are untouched.
    """
    by_key = {hit.key: hit for hit in fused}
    return [by_key[key] for key in _placed(list(by_key), [hit.key for hit in anchor], unreadable, limit)]


def _placed(ordered: list[Key], anchor: list[Key], unreadable: Container[Key], limit: int) -> list[Key]:
    """The first `limit` of `ordered`, each key of `unreadable` in it at its 1-based rank in `anchor`."""
    if not unreadable:  # every record in the query's script (the usual case): nothing to put back
        return ordered[:limit]
    present = set(ordered)
    placed = {rank: key for rank, key in enumerate(anchor, start=1) if key in unreadable and key in present}
    if not placed:
        return ordered[:limit]
    kept = set(placed.values())
    rest = iter([key for key in ordered if key not in kept])
    out: list[Key] = []
    while len(out) < limit:
        key = placed.pop(len(out) + 1, None)
        if key is None:
            key = next(rest, None)
        if key is None:
            if not placed:
                break
            key = placed.pop(min(placed))
        out.append(key)
    return out


def fuse_and_place(
    rankings: Mapping[str, Sequence[Ranked[Key]]],
    weights: Mapping[str, float],
    *,
    rrf_k: int,
    anchor: str,
    unreadable: Container[Key],
    limit: int,
) -> list[FusedHit[Key]]:
    """`fuse` of every hit, then `keep_places` on `rankings[anchor]`: the first `limit`, best first.

    Scores and order are those of the two steps one after the other; only the hits answered are built.
    """
    scores, ranks = _rrf(rankings, weights, rrf_k)
    order = sorted(scores, key=scores.__getitem__, reverse=True)  # stable, so ties keep first appearance
    page = _placed(order, [key for key, _ in rankings[anchor]], unreadable, limit)
    names = tuple(rankings)
    return [FusedHit(key, scores[key], {n: ranks[n][key] for n in names if key in ranks[n]}, names) for key in page]


def fuse_with_neighbours(
    rankings: Mapping[str, Sequence[Ranked[Key]]],
    weights: Mapping[str, float],
    neighbours_of: Callable[[list[Key]], Mapping[Key, Sequence[Key]]],
    *,
    rrf_k: int,
    givers: int,
    may_give: Container[Key],
    share: float,
    anchor: str,
    unreadable: Container[Key],
    limit: int,
) -> list[FusedHit[Key]]:
    """`fuse` of every hit, then neighbours, then `keep_places` on `rankings[anchor]`: the page, best first.

    Neighbours (dialog): an answer often only makes sense with the turn before or after it, so the first
    `givers` fused hits that are in `may_give` give `share` × their fused score to each of their neighbours
    (`neighbours_of(keys)`); a neighbour not among the hits joins them with no signal of its own, pushing none
    out (with a floor on a signal the hits can be few: "The cello?" answering a kept question stays). `why`
    records what each hit got under "neighbours" ({"score": the sum, 0 for none}); "fused" is the final score.

    Scores and orders are those of the three steps one after the other; only the page's hits are built.
    """
    scores, ranks = _rrf(rankings, weights, rrf_k)
    order = sorted(scores, key=scores.__getitem__, reverse=True)  # stable, so ties keep first appearance
    giving = [key for key in order[:givers] if key in may_give]
    neighbours = neighbours_of(giving) if giving else {}
    gained: dict[Key, float] = {}
    for key in giving:
        for near in neighbours.get(key, ()):
            gained[near] = gained.get(near, 0.0) + share * scores[key]
    final = {key: scores[key] + gained.get(key, 0.0) for key in order}
    for near, extra in gained.items():
        final.setdefault(near, extra)  # joins after the hits, in the order it first gained
    spread = sorted(final, key=final.__getitem__, reverse=True)  # a neighbour joins the hits, none is pushed out
    page = _placed(spread, [key for key, _ in rankings[anchor]], unreadable, limit)
    names = tuple(rankings)
    return [
        FusedHit(key, final[key], {n: ranks[n][key] for n in names if key in ranks[n]}, names, gained.get(key, 0.0))
        for key in page
    ]
