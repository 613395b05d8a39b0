"""Weighted reciprocal rank fusion (memoryhub/ranking.py): order, weights, reasons."""

from memoryhub.ranking import SignalHit, fuse, keep_places, script, spread_to_neighbours


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
    assert result[0].why()["keyword"]["rank"] == 1


def test_an_unreadable_key_keeps_its_anchor_place_and_the_others_fill_around_it():
    rankings = {"keyword": hits("x", "y"), "semantic": hits("z", "x", "y")}
    fused = fuse(rankings, {}, limit=3, rrf_k=5)
    assert [h.key for h in fused] == ["x", "y", "z"]  # z, semantic's first, has no keyword match
    kept = keep_places(fused, rankings["semantic"], {"z"}, limit=3)
    assert [h.key for h in kept] == ["z", "x", "y"]
    assert keep_places(fused, rankings["semantic"], set(), limit=3) == fused


def test_neighbours_earn_a_share_of_a_hits_score_and_join_the_hits():
    fused = fuse({"keyword": hits("a", "b")}, {}, limit=2, rrf_k=5)
    spread = spread_to_neighbours(fused, {"a": ["n"]}, 0.5, limit=3)
    assert [h.key for h in spread] == ["a", "b", "n"] or [h.key for h in spread] == ["a", "n", "b"]
    by_key = {h.key: h for h in spread}
    assert by_key["n"].score == 0.5 * by_key["a"].score
    assert by_key["n"].why()["keyword"] == {"rank": None, "score": None}
    assert by_key["n"].why()["neighbours"] == {"score": round(0.5 / 6, 6)}
    assert by_key["b"].why()["neighbours"] == {"score": 0.0}


def test_script_tells_chinese_from_other_text():
    assert script("我的狗叫什么名字？") == "cjk" and script("My dog is called Biscuit.") == "other"
    assert script("我在学Python") == "cjk" and script("I love 北京") == "other" and script("12:00") == "other"
