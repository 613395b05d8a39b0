"""Weighted reciprocal rank fusion (memoryhub/ranking.py): order, weights, reasons."""

import random

from memoryhub.ranking import FusedHit, SignalHit, fuse, fuse_and_place, fuse_with_neighbours, keep_places, script


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


def spread(fused: list[FusedHit], neighbours: dict, share: float, limit: int) -> list[FusedHit]:
    """The neighbours' step on its own, as history search first did it: the reference of fuse_with_neighbours."""
    by_key = {hit.key: hit for hit in fused}
    names = fused[0].names if fused else ()
    gained: dict = {}
    for hit in fused:
        for key in neighbours.get(hit.key, ()):
            gained[key] = gained.get(key, 0.0) + share * hit.score
    for key, extra in gained.items():
        if key not in by_key:
            by_key[key] = FusedHit(key=key, names=names)
        by_key[key].score += extra
    for key, entry in by_key.items():
        entry.from_neighbours = gained.get(key, 0.0)
    order = {key: n for n, key in enumerate(by_key)}
    return sorted(by_key.values(), key=lambda e: (-e.score, order[e.key]))[:limit]


def with_neighbours(rankings, neighbours: dict, *, givers=2, may_give=None, limit=3):
    return fuse_with_neighbours(
        rankings, {}, lambda keys: {key: neighbours[key] for key in keys if key in neighbours}, rrf_k=5,
        givers=givers, may_give=may_give if may_give is not None else {"a", "b", "c"}, share=0.9,
        anchor="semantic", unreadable=set(), limit=limit,
    )  # fmt: skip


def test_neighbours_earn_a_share_of_a_hits_score_and_join_the_hits_they_outscore():
    found = with_neighbours({"keyword": hits("a", "b", "c"), "semantic": []}, {"a": ["n"]}, limit=9)
    assert [h.key for h in found] == ["a", "n", "b", "c"]  # n joins the hits: c, below it, stays (a floor can
    # leave few hits, and a kept hit's neighbour — its answer — must not be the one that has no room)
    assert [h.key for h in with_neighbours({"keyword": hits("a", "b", "c"), "semantic": []}, {"a": ["n"]})] == [
        "a", "n", "b",
    ]  # fmt: skip
    by_key = {h.key: h for h in found}
    assert by_key["n"].score == 0.9 * (1 / 6)
    assert by_key["n"].why()["keyword"] == {"rank": None, "score": None}
    assert by_key["n"].why()["neighbours"] == {"score": round(0.9 / 6, 6)}
    assert by_key["b"].why()["neighbours"] == {"score": 0.0}


def test_only_the_first_givers_that_may_give_share_with_their_neighbours():
    rankings = {"keyword": hits("a", "b", "c"), "semantic": []}
    found = with_neighbours(rankings, {"a": ["x"], "b": ["y"], "c": ["z"]}, givers=2, may_give={"b", "c"}, limit=9)
    assert [h.key for h in found] == ["a", "b", "y", "c"]  # a may not give; c is not among the first two


def test_fusing_with_neighbours_answers_as_the_three_steps_one_after_the_other():
    """Random rankings (shared keys, ties, unreadable keys, neighbours in and out of the hits)."""
    generator = random.Random(7)
    keys = [f"k{n}" for n in range(40)]
    for _ in range(300):
        rankings = {
            "keyword": [SignalHit(k, generator.choice([1.0, 2.0, 3.5])) for k in generator.sample(keys, 12)],
            "semantic": [SignalHit(k, generator.random()) for k in generator.sample(keys, 15)],
        }
        neighbours = {k: generator.sample([*keys, "n1", "n2"], generator.randint(0, 2)) for k in keys}
        may_give = set(generator.sample(keys, 30))
        unreadable = set(generator.sample(keys, 8))
        limit, givers = generator.randint(1, 30), generator.randint(1, 20)
        fused = fuse(rankings, {"keyword": 1.0, "semantic": 1.0}, limit=27, rrf_k=5)
        giving = [hit for hit in fused[:givers] if hit.key in may_give]
        expected = keep_places(
            spread(fused, {h.key: neighbours[h.key] for h in giving}, 0.3, len(keys) + 2),  # every hit and neighbour
            rankings["semantic"], unreadable, limit=limit,
        )  # fmt: skip
        found = fuse_with_neighbours(
            rankings, {"keyword": 1.0, "semantic": 1.0}, lambda hits, near=neighbours: {k: near[k] for k in hits},
            rrf_k=5, givers=givers, may_give=may_give, share=0.3, anchor="semantic", unreadable=unreadable, limit=limit,
        )  # fmt: skip
        assert [(h.key, h.score, h.why()) for h in found] == [(h.key, h.score, h.why()) for h in expected]


def test_fusing_and_placing_answers_as_fuse_then_keep_places():
    generator = random.Random(11)
    keys = [f"k{n}" for n in range(40)]
    for _ in range(300):
        rankings = {
            "keyword": [(k, generator.choice([1.0, 2.0, 3.5])) for k in generator.sample(keys, 12)],
            "semantic": [(k, generator.random()) for k in generator.sample(keys, generator.randint(0, 15))],
        }
        unreadable, limit = set(generator.sample(keys, 8)), generator.randint(1, 30)
        weights = {"keyword": generator.choice([0.1, 1.0]), "semantic": 1.0}
        fused = fuse({n: [SignalHit(*hit) for hit in hits] for n, hits in rankings.items()}, weights, limit=99, rrf_k=5)
        expected = keep_places(fused, [SignalHit(*hit) for hit in rankings["semantic"]], unreadable, limit=limit)
        found = fuse_and_place(rankings, weights, rrf_k=5, anchor="semantic", unreadable=unreadable, limit=limit)
        assert [(h.key, h.score, h.why()) for h in found] == [(h.key, h.score, h.why()) for h in expected]


def test_script_tells_chinese_from_other_text():
    assert script("我的狗叫什么名字？") == "cjk" and script("My dog is called Biscuit.") == "other"
    assert script("我在学Python") == "cjk" and script("I love 北京") == "other" and script("12:00") == "other"
