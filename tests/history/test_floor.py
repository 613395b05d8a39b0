"""History search and the history-search source apply long-term search's semantic floor (docs/recall.md, "The floor"),
through the HTTP API: an unrelated query returns and recalls nothing in hybrid mode, `minScore: -1` turns it off."""

from __future__ import annotations

import pytest

from tests.history.support import contents, imported, search, search_url
from tests.history.test_recall_source import OLD, SOURCE, scenario, turn
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db(transaction=True)

UNRELATED = "What is the weather in Paris tomorrow?"  # no word of Sam's messages; cosines ~0.12 and below
RELATED = "How is Lena doing with her violin?"
EVERY = {m["content"] for m in OLD}


@pytest.fixture(params=["held", "sql"])
def path(request):
    """On PostgreSQL a small user is searched from rows held in the process, or by the SQL statements."""
    if request.param == "sql":
        request.getfixturevalue("sql_path")
    return request.param


def test_an_unrelated_query_finds_nothing_in_hybrid_and_minscore_minus_one_turns_the_floor_off(alice, path):
    imported(alice, "u1", "old", OLD)
    assert contents(search(alice, "u1", UNRELATED)) == []  # hybrid is the default mode
    assert contents(search(alice, "u1", "😀🎸")) == []  # no word at all: only a (negative) cosine
    assert set(contents(search(alice, "u1", UNRELATED, minScore=-1))) == EVERY
    related = search(alice, "u1", RELATED).json()["results"]
    assert {hit["content"] for hit in related[:2]} == {OLD[0]["content"], OLD[1]["content"]}
    assert all(hit["why"]["semantic"]["rank"] for hit in related[:2])


def test_semantic_mode_has_no_floor_unless_asked_and_keyword_mode_ignores_it(alice, path):
    imported(alice, "u1", "old", OLD)
    assert set(contents(search(alice, "u1", UNRELATED, "semantic"))) == EVERY  # as before
    assert contents(search(alice, "u1", UNRELATED, "semantic", minScore=0.5)) == []
    kept = search(alice, "u1", RELATED, "semantic", minScore=0.3).json()["results"]
    assert kept and all(hit["score"] >= 0.3 for hit in kept) and len(kept) < len(OLD)
    assert set(contents(search(alice, "u1", "violin", "keyword", minScore=1))) == {OLD[0]["content"], OLD[1]["content"]}


def test_a_keyword_hit_below_the_floor_is_still_returned_by_its_keyword_rank(alice, path):
    imported(alice, "u1", "old", OLD)
    hit, *neighbours = search(alice, "u1", "fence in Paris tomorrow", minScore=0.99).json()["results"]
    assert hit["content"] == OLD[2]["content"]
    assert hit["why"]["keyword"]["rank"] == 1 and hit["why"]["semantic"] == {"rank": None, "score": None}
    # its neighbour (the reply before it) joins with a share of its score, no signal of its own
    assert [n["content"] for n in neighbours] == [OLD[1]["content"]] and neighbours[0]["why"]["neighbours"]["score"]


@pytest.mark.parametrize("value", [1.5, -1.01, "0.2", True, None])
def test_a_bad_minscore_is_400_naming_it(alice, value):
    response = alice.post(search_url("u1"), {"query": "violin", "minScore": value})
    assert_envelope(response, 400, "invalid_request")
    assert "minScore" in response.json()["error"]["details"]["fields"]


def test_a_turn_recalls_nothing_unrelated_in_hybrid_and_the_sources_minscore_turns_it_off(alice, path):
    imported(alice, "u1", "old", OLD)
    scenario(alice)
    body = turn(alice, "new", UNRELATED, reply=None)
    [status] = body["sources"]
    assert status["status"] == "empty" and body["variables"]["recalledHistory"] == ""
    assert "violin" in turn(alice, "new", RELATED, reply=None)["variables"]["recalledHistory"]
    for name, option in (("off", {"minScore": -1}), ("plain", {"mode": "semantic"})):  # as before the floor
        body = {"id": name, "name": name, "memorySources": [{**SOURCE, **option}], "template": "{{recalledHistory}}"}
        assert alice.post("/v1/scenarios", body).status_code == 201, body
        prepared = alice.post("/v1/users/u1/conversations/new/turns", {"scenarioId": name, "userMessage": UNRELATED})
        assert prepared.json()["sources"][0]["status"] == "ok", name
        assert prepared.json()["variables"]["recalledHistory"].count("\n") == 2, name  # all three messages


@pytest.mark.parametrize("value", [1.5, -2, "0.2", True, None])
def test_a_bad_source_minscore_is_400_at_scenario_save(alice, value):
    body = {"id": "x", "name": "X", "memorySources": [{**SOURCE, "minScore": value}], "template": "{{recalledHistory}}"}
    response = alice.post("/v1/scenarios", body)
    assert_envelope(response, 400, "invalid_request")
    assert any("minScore" in field for field in response.json()["error"]["details"]["fields"]), response.json()
