"""Weighted reciprocal rank fusion (memoryhub/ranking.py): order, weights, reasons."""

from memoryhub.ranking import SignalHit, fuse


def hits(*keys: str) -> list[SignalHit[str]]:
    return [SignalHit(key=k, score=1.0 / (i + 1)) for i, k in enumerate(keys)]


def test_agreement_between_signals_beats_one_signals_first_place():
    result = fuse({"keyword": hits("a", "b"), "semantic": hits("c", "b")}, {}, limit=3)
    assert [h.key for h in result] == ["b", "a", "c"]


def test_weights_decide_between_two_first_places():
    rankings = {"keyword": hits("a"), "semantic": hits("c")}
    assert fuse(rankings, {"keyword": 1.0, "semantic": 2.0}, limit=2)[0].key == "c"
    assert fuse(rankings, {"keyword": 2.0, "semantic": 1.0}, limit=2)[0].key == "a"


def test_why_carries_each_signals_rank_and_score_and_the_fused_score():
    (top, other) = fuse({"keyword": hits("a", "b"), "semantic": hits("b")}, {}, limit=2, rrf_k=60)
    assert top.key == "b"
    assert top.why() == {
        "fused": round(1 / 62 + 1 / 61, 6),
        "keyword": {"rank": 2, "score": 0.5},
        "semantic": {"rank": 1, "score": 1.0},
    }
    assert other.why()["semantic"] == {"rank": None, "score": None}


def test_limit_and_a_key_listed_twice_counts_once():
    result = fuse({"keyword": hits("a", "a", "b", "c")}, {}, limit=2)
    assert [h.key for h in result] == ["a", "b"]
    assert result[0].signals["keyword"]["rank"] == 1
