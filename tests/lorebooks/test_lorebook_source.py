"""The lorebook source through HTTP: a scenario names lorebooks, a turn's prompt holds what fired, and the
turn's source status says which entries fired and by which key (SillyTavern's World Info semantics)."""

from __future__ import annotations

import copy

import pytest
from django.urls import reverse

from tests.support.api import assert_envelope
from tests.support.turns import prepare

from .support import import_world, world_info

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"


def scenario(api, slug="lore", **options) -> None:
    source = {"id": "wi", "agentRef": "lorebook", "variable": "worldInfo", "lorebooks": ["eldoria"], **options}
    body = {"id": slug, "name": slug, "memorySources": [source], "template": "{{worldInfo}}\n---\n{{userMessage}}"}
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()


def say(api, message: str, reply: str, slug="lore", **extra) -> dict:
    turn = prepare(api, slug, message, **extra)
    done = api.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": reply})
    assert done.status_code == 200, done.json()
    return turn


def fired(turn: dict) -> list[str]:
    return [f["uid"] for f in turn["sources"][0]["details"]["fired"]]


CONSTANT = "7"  # the rule of magic fires on every turn


@pytest.mark.parametrize(
    ("message", "uids"),
    [
        ("We sail to Eldoria.", ["0", CONSTANT]),  # insertion order: ascending `order`, the constant (200) last
        ("Have you seen MARAH VELL?", ["4", CONSTANT]),  # /ma(ra|rah) ?vell/i
        ("I met maravell yesterday", ["4", CONSTANT]),
        ("the king is dead", [CONSTANT]),  # caseSensitive: "King" only
        ("the King is dead", ["5", CONSTANT]),
        ("an oarsman rows", [CONSTANT]),  # matchWholeWords: "oar" is not in "oarsman"
        ("grab an oar, quick", ["6", CONSTANT]),
        ("a dragon!", [CONSTANT]),  # disabled entry
        # ferry: 8 AND ANY (token|coin), 9 NOT ALL (token+coin), 10 NOT ANY (storm|flood), 11 AND ALL (token+coin)
        ("the ferry", ["10", "9", CONSTANT]),
        ("the ferry, here is a token", ["10", "9", "8", CONSTANT]),
        ("the ferry: a token and a coin", ["11", "10", "8", CONSTANT]),
        ("the ferry in the storm with a coin", ["9", "8", CONSTANT]),
    ],
)
def test_activation_table(alice, message, uids):
    import_world(alice)
    scenario(alice)
    turn = prepare(alice, "lore", message)
    assert fired(turn) == uids
    contents = {e["uid"]: e["content"] for e in world_info()["entries"].values() for e in [e | {"uid": str(e["uid"])}]}
    assert turn["variables"]["worldInfo"] == "\n".join(contents[u] for u in uids)
    assert turn["prompt"].startswith(turn["variables"]["worldInfo"] + "\n---\n")


def test_the_status_names_the_key_and_the_secondary_logic(alice):
    import_world(alice)
    scenario(alice)
    status = prepare(alice, "lore", "Ferry! A coin? A TOKEN.")["sources"][0]
    assert (status["agentRef"], status["variable"], status["status"]) == ("lorebook", "worldInfo", "ok")
    by_uid = {f["uid"]: f for f in status["details"]["fired"]}
    assert by_uid["8"] | {} == by_uid["8"] and by_uid["8"]["key"] == "ferry"
    assert (by_uid["8"]["secondaryKeys"], by_uid["8"]["logic"]) == (["token"], "AND ANY")
    assert (by_uid["11"]["secondaryKeys"], by_uid["11"]["logic"]) == (["token", "coin"], "AND ALL")
    assert by_uid[CONSTANT]["reason"] == "constant" and by_uid[CONSTANT]["key"] is None


def test_recursion_follows_fired_content_and_respects_its_limits(alice):
    import_world(alice)
    scenario(alice, "flat")
    scenario(alice, "deep", recursive=True)
    scenario(alice, "shallow", recursive=True, maxRecursionSteps=2)
    assert fired(prepare(alice, "flat", "to Varn")) == ["1", CONSTANT]
    # Varn → Salt Guild → Grey Lanterns; the constant rule names Eldoria; 13 excludes recursion (never fires here)
    deep = prepare(alice, "deep", "to Varn")
    assert fired(deep) == ["3", "2", "1", "0", CONSTANT]
    passes = {f["uid"]: f["pass"] for f in deep["sources"][0]["details"]["fired"]}
    assert passes == {"1": 1, CONSTANT: 1, "2": 2, "0": 2, "3": 3}
    assert fired(prepare(alice, "shallow", "to Varn")) == ["2", "1", "0", CONSTANT]  # two passes only
    # 3 and 13 by the message; 3 prevents recursion; Eldoria (from the rule) → Varn → Salt Guild
    assert fired(prepare(alice, "deep", "the Grey Lanterns")) == ["13", "3", "2", "1", "0", CONSTANT]


@pytest.mark.parametrize("prevent", [True, False])
def test_prevent_recursion_keeps_an_entry_from_firing_others(alice, prevent):
    book = world_info()
    book["entries"]["3"] |= {
        "content": book["entries"]["3"]["content"] + " They answer to the King.",
        "preventRecursion": prevent,
    }
    import_world(alice, body=book)
    scenario(alice, recursive=True)
    uids = fired(prepare(alice, "lore", "the Salt Guild"))
    assert "3" in uids and ("5" in uids) is not prevent  # 3 fired by recursion; its content fires 5 unless it prevents


def test_the_budget_keeps_the_highest_order_first(alice):
    import_world(alice)
    rule, mara = len(world_info()["entries"]["7"]["content"]), len(world_info()["entries"]["4"]["content"])
    scenario(alice, budget=rule + mara + 3)  # room for 7 (order 200) and 4 (120), not for 0 (100)
    status = prepare(alice, "lore", "Mara Vell in Eldoria")["sources"][0]
    assert fired({"sources": [status]}) == ["4", CONSTANT]
    assert status["details"]["overBudget"] == [{"lorebook": "eldoria", "uid": "0", "comment": "Kingdom"}]


@pytest.mark.parametrize(("spare", "uids"), [(0, [CONSTANT]), (1, ["4", CONSTANT])])
def test_the_budget_counts_the_content_only(alice, spare, uids):
    """Two entries fire while their content stays under the budget; the line break that joins them is free."""
    import_world(alice)
    rule, mara = len(world_info()["entries"]["7"]["content"]), len(world_info()["entries"]["4"]["content"])
    scenario(alice, budget=rule + mara + spare)  # spare 0: the content would reach the budget
    status = prepare(alice, "lore", "Mara Vell")["sources"][0]
    assert fired({"sources": [status]}) == uids
    assert sum(f["chars"] for f in status["details"]["fired"]) < rule + mara + spare


def test_scan_depth_zero_scans_no_message(alice):
    import_world(alice)
    scenario(alice, "d0", scanDepth=0)
    status = prepare(alice, "d0", "We sail to Eldoria.")["sources"][0]
    assert fired({"sources": [status]}) == [CONSTANT]  # the user message was not scanned
    assert status["details"]["scannedMessages"] == 0


def test_scan_depth_counts_messages_newest_first(alice):
    import_world(alice)
    scenario(alice, "d1", scanDepth=1)
    scenario(alice, "d3", scanDepth=3)
    say(alice, "Tell me of Eldoria", "It is old.", "d1")
    assert fired(prepare(alice, "d1", "go on")) == [CONSTANT]  # depth 1: the current message only
    assert fired(prepare(alice, "d3", "go on")) == ["0", CONSTANT]  # depth 3: the user's earlier message too


def test_probability_is_deterministic_per_turn(alice):
    book = world_info()
    book["entries"]["0"] |= {"probability": 50, "useProbability": True}
    import_world(alice, body=book)
    scenario(alice)
    outcomes = {tuple(fired(prepare(alice, "lore", "Eldoria"))) for _ in range(3)}  # one round: one seed
    assert len(outcomes) == 1
    rounds = set()
    for i in range(12):
        rounds.add("0" in fired(say(alice, "Eldoria", f"reply {i}")))
    assert rounds == {True, False}  # a seed per round: sometimes it fires, sometimes not


def test_the_source_is_validated_with_the_scenario(alice):
    base = {"id": "s", "name": "s", "template": "{{w}}"}
    bad = [
        ({"id": "wi", "agentRef": "lorebook", "variable": "w"}, "memorySources[0].lorebooks"),
        (
            {"id": "wi", "agentRef": "lorebook", "variable": "w", "lorebooks": [], "budget": 0},
            "memorySources[0].budget",
        ),
        (
            {"id": "wi", "agentRef": "lorebook", "variable": "jsonMemory", "lorebooks": ["x"]},
            "memorySources[0].variable",
        ),
        (
            {"id": "wi", "agentRef": "lorebook", "variable": "w", "lorebooks": ["x"], "depth": 2},
            "memorySources[0].depth",
        ),
    ]
    for source, field in bad:
        error = assert_envelope(alice.post("/v1/scenarios", base | {"memorySources": [source]}), 400)
        assert field in error["details"]["fields"], (source, error)


def test_two_lorebook_sources_fill_two_variables_and_a_foreign_book_is_not_read(alice, bob):
    import_world(alice)
    import_world(bob, body=copy.deepcopy(world_info()))
    alice.post("/v1/lorebooks", {"id": "empty", "name": "e", "worldInfo": {"entries": {}}})
    sources = [
        {"id": "a", "agentRef": "lorebook", "variable": "world", "lorebooks": ["eldoria"]},
        {"id": "b", "agentRef": "lorebook", "variable": "other", "lorebooks": ["empty", "nope"]},
    ]
    body = {"id": "two", "name": "two", "memorySources": sources, "template": "{{world}}|{{other}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    turn = prepare(alice, "two", "Eldoria")
    assert turn["variables"]["other"] == "" and turn["sources"][1]["status"] == "empty"
    assert turn["sources"][1]["details"]["missingLorebooks"] == ["nope"]
    bob_body = body | {"memorySources": [sources[0] | {"lorebooks": ["empty"]}], "template": "{{world}}"}
    assert bob.post("/v1/scenarios", bob_body).status_code == 201
    assert bob.post(f"{CONV}/turns", {"scenarioId": "two", "userMessage": "x"}).json()["sources"][0]["details"][
        "missingLorebooks"
    ] == ["empty"]  # alice's book is not bob's


def test_an_edited_entry_fires_on_the_next_turn(alice):
    import_world(alice)
    scenario(alice)
    assert "12" not in fired(prepare(alice, "lore", "a dragon"))
    alice.patch("/v1/lorebooks/eldoria/entries/12", {"expectedRevision": 1, "entry": {"disable": False}})
    assert "12" in fired(prepare(alice, "lore", "a dragon"))


def test_the_turn_inspector_shows_what_fired_and_why(alice, admin_client):
    import_world(alice)
    scenario(alice)
    turn = prepare(alice, "lore", "the ferry, here is a token")
    page = admin_client.get(reverse("console:turn-inspector", args=[turn["turnId"]])).content.decode()
    assert "mh-lorebook-fired" in page
    assert "<td>eldoria/8</td><td>ferry AND ANY token/coin</td><td>key</td><td><code>ferry</code></td>" in page
    assert "AND ANY: token" in page


def test_a_vectorized_entry_fires_by_similarity_to_the_scanned_text(alice):
    book = {
        "entries": {
            "0": {
                "uid": 0,
                "key": ["unused-key"],
                "content": "River ferries carry travellers across the water.",
                "vectorized": True,
                "order": 10,
                "comment": "ferries (vector)",
            },
            "1": {
                "uid": 1,
                "key": ["unused-key"],
                "content": "The royal treasury pays taxes on grain and wool.",
                "vectorized": True,
                "order": 20,
                "comment": "treasury (vector)",
            },
            "2": {
                "uid": 2,
                "key": ["unused-key"],
                "content": "Boats cross the river at dawn.",
                "comment": "not vectorized",
            },
        }
    }
    import_world(alice, body=book)
    scenario(alice, vectorThreshold=0.3, vectorTopK=1)
    status = prepare(alice, "lore", "How do people get over the river by boat?")["sources"][0]
    assert [(f["uid"], f["reason"], f["key"]) for f in status["details"]["fired"]] == [("0", "vector", None)]
    assert [s["uid"] for s in status["details"]["vectorScores"]] == ["0"]


def test_an_embedder_that_is_down_fails_the_turn_instead_of_answering_without_it(alice, settings):
    book = {"entries": {"0": {"uid": 0, "key": ["x"], "content": "Ferries.", "vectorized": True}}}
    import_world(alice, body=book)
    scenario(alice)
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9"  # nothing listens there
    settings.EMBEDDING_TIMEOUT_SECONDS = 2
    response = alice.post(f"{CONV}/turns", {"scenarioId": "lore", "userMessage": "boats"})
    assert response.status_code in (502, 503, 504), response.json()
    assert alice.get(f"{CONV}/messages").json()["results"] == []


def test_a_template_using_only_the_positional_variables_references_the_source(alice):
    """The lore reached the prompt through {{worldInfoBefore}}: it was seen, and the turn says so."""
    import_world(alice)
    source = {"id": "wi", "agentRef": "lorebook", "variable": "worldInfo", "lorebooks": ["eldoria"]}
    template = "{{worldInfoBefore}}\n[card]\n{{worldInfoAfter}}\nU: {{userMessage}}"
    body = {"id": "placed", "name": "placed", "memorySources": [source], "template": template}
    assert alice.post("/v1/scenarios", body).status_code == 201
    turn = prepare(alice, "placed", "We sail to Eldoria.")
    assert turn["referencedVariables"] == ["worldInfoBefore", "worldInfoAfter"]
    assert turn["unreferencedVariables"] == []
    unused = {"id": "unused", "name": "unused", "memorySources": [source], "template": "U: {{userMessage}}"}
    assert alice.post("/v1/scenarios", unused).status_code == 201
    turn = prepare(alice, "unused", "We sail to Eldoria.")
    assert (turn["referencedVariables"], turn["unreferencedVariables"]) == ([], ["worldInfo"])


def test_a_regex_key_runs_on_re2_so_a_catastrophic_pattern_is_linear(alice):
    """docs/security.md: a product's key runs against every user message. `/(a+)+$/` against "a"×60 + "!" would
    take a backtracking engine longer than the age of the universe; RE2 answers at once."""
    from lorebooks.activation import parse_regex_key

    assert type(parse_regex_key("/(a+)+$/")).__module__.startswith("re2")
    assert parse_regex_key("/(?=x)y/") is None  # a lookahead needs backtracking: plain text, as an invalid regex
    entries = {
        "0": {"uid": 0, "key": ["/(a+)+$/"], "content": "NESTED", "order": 10},
        "1": {"uid": 1, "key": ["/MARA(?P<x>h)? vell/i"], "content": "MARA", "order": 20},
    }
    assert (
        alice.post("/v1/lorebooks", {"id": "eldoria", "name": "e", "worldInfo": {"entries": entries}}).status_code
        == 201
    )
    scenario(alice)
    assert fired(prepare(alice, "lore", "a" * 60 + "!")) == []
    assert fired(prepare(alice, "lore", "a" * 60)) == ["0"]
    assert fired(prepare(alice, "lore", "I saw marah Vell")) == ["1"]
