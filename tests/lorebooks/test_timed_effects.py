"""Timed effects, inclusion groups and placement through HTTP, with SillyTavern's semantics (docs/roleplay.md).

Timed effects count chat messages as SillyTavern does: round n of a conversation whose earlier rounds were all
completed scans a chat of 2n-1 messages (the earlier user/assistant pairs, then the current user message).
An entry fired at length L with `sticky: s` stays active while the chat is shorter than L+s; `cooldown: c`
keeps it off while it is shorter than L+c; `delay: d` holds it back while the chat is shorter than d.
"""

from __future__ import annotations

import pytest

from tests.support.api import assert_envelope
from tests.support.turns import prepare

from .support import import_world

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"


def entry(uid: int, keys: list[str], **fields) -> dict:
    base = {"uid": uid, "key": keys, "keysecondary": [], "comment": f"e{uid}", "content": f"E{uid}", "order": 100}
    return base | fields


def book(*entries: dict) -> dict:
    return {"entries": {str(e["uid"]): e for e in entries}}


def scenario(api, template: str = "{{wi}}\n---\n{{userMessage}}", **options) -> None:
    source = {"id": "wi", "agentRef": "lorebook", "variable": "wi", "lorebooks": ["eldoria"], **options}
    body = {"id": "lore", "name": "lore", "memorySources": [source], "template": template}
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()


def fired(turn: dict) -> dict[str, str]:
    """uid → the reason it fired."""
    return {f["uid"]: f["reason"] for f in turn["sources"][0]["details"]["fired"]}


def complete(api, turn: dict, reply: str = "ok") -> None:
    done = api.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": reply})
    assert done.status_code == 200, done.json()


def play(api, messages: list[str]) -> list[dict]:
    """One completed round per message; each round's prepared turn."""
    turns = []
    for message in messages:
        turns.append(prepare(api, "lore", message))
        complete(api, turns[-1])
    return turns


# (the entry's timed fields, the user message of each round, what it did in each round: reason or None)
TIMED_CASES = [
    # sticky 5 at length 1: active at lengths 3 and 5 without its key, ended at 7
    ({"sticky": 5}, ["lantern", "-", "-", "-"], ["key", "sticky", "sticky", None]),
    # sticky 3: one more round only
    ({"sticky": 3}, ["lantern", "-", "-"], ["key", "sticky", None]),
    # a sticky entry whose key is still there keeps its first effect (no renewal): ended at 1+3
    ({"sticky": 3}, ["lantern", "lantern", "lantern"], ["key", "sticky", "key"]),
    # cooldown 4 at length 1: off at length 3, fires again at 5, then off at 7
    ({"cooldown": 4}, ["lantern", "lantern", "lantern", "lantern"], ["key", None, "key", None]),
    # sticky 3 + cooldown 2: sticky at 3, its end at 5 starts a cooldown to 7, fires again at 7
    ({"sticky": 3, "cooldown": 2}, ["lantern", "-", "lantern", "lantern"], ["key", "sticky", None, "key"]),
    # delay 5: held back while the chat is shorter than 5 messages, then fires on its key
    ({"delay": 5}, ["lantern", "lantern", "lantern", "-"], [None, None, "key", None]),
    # no timed field: its key alone decides
    ({}, ["lantern", "-", "lantern"], ["key", None, "key"]),
]


@pytest.mark.parametrize(("fields", "messages", "expected"), TIMED_CASES)
def test_timed_effects_table(alice, fields, messages, expected):
    import_world(alice, body=book(entry(1, ["lantern"], **fields)))
    scenario(alice)
    turns = play(alice, messages)
    assert [fired(t).get("1") for t in turns] == expected
    assert [t["sources"][0]["details"]["chatLength"] for t in turns] == [1, 3, 5, 7][: len(turns)]
    suppressed = [[s["by"] for s in t["sources"][0]["details"].get("suppressed", [])] for t in turns]
    for message, reason, why in zip(messages, expected, suppressed, strict=True):
        if message == "lantern" and reason is None:
            assert why == ["delay" if "delay" in fields else "cooldown"]


def test_only_an_entry_that_would_have_fired_is_listed_as_suppressed(alice):
    """A delay (or cooldown) holds an entry back; it is `suppressed` only when its key is in the scanned text."""
    import_world(alice, body=book(entry(1, ["owl"], delay=4), entry(2, ["lantern"], delay=4)))
    scenario(alice)
    first = prepare(alice, "lore", "hello there, lantern in hand")
    assert fired(first) == {}
    assert [(s["uid"], s["by"]) for s in first["sources"][0]["details"]["suppressed"]] == [("2", "delay")]


@pytest.mark.parametrize(("runtime", "scanned"), [("personalization", 2), ("axon_go", 2)])
def test_scan_depth_counts_the_messages_the_runtime_scans(alice, runtime, scanned):
    """scanDepth 2: the user message and the reply before it, or (axon: no user message) the last two messages."""
    import_world(alice, body=book(entry(1, ["lantern"])))
    source = {"id": "wi", "agentRef": "lorebook", "variable": "wi", "lorebooks": ["eldoria"], "scanDepth": 2}
    body = {"id": "lore", "name": "lore", "memoryRuntime": runtime, "memorySources": [source], "template": "{{wi}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    play(alice, ["a lantern in the fog"])
    second = prepare(alice, "lore", "nothing")
    assert second["sources"][0]["details"]["scannedMessages"] == scanned
    # the key is two messages back: out of reach when the user message takes a slot, within it for axon
    assert fired(second) == ({} if runtime == "personalization" else {"1": "key"})


def test_sticky_state_is_kept_on_the_turn_and_shown(alice):
    import_world(alice, body=book(entry(1, ["lantern"], sticky=5, cooldown=8)))
    scenario(alice)
    (first,) = play(alice, ["lantern"])
    effects = first["sources"][0]["details"]["timedEffects"]
    assert effects == {
        "sticky": {"eldoria.1": {"start": 1, "end": 6, "protected": False}},
        "cooldown": {"eldoria.1": {"start": 1, "end": 9, "protected": False}},
    }
    assert alice.get(f"{CONV}/turns/{first['turnId']}").json()["sources"][0]["details"]["timedEffects"] == effects


def test_a_regenerated_reply_leaves_no_sticky_behind_and_a_swipe_back_restores_it(alice):
    import_world(alice, body=book(entry(1, ["lantern"], sticky=9)))
    scenario(alice)
    play(alice, ["hello"])
    a = prepare(alice, "lore", "I light the lantern.")
    complete(alice, a)
    assert fired(a) == {"1": "key"}
    # regenerated without the key: A is superseded, so its sticky effect is not the conversation's any more
    b = prepare(alice, "lore", "I wait.", replacesTurnId=a["turnId"])
    complete(alice, b)
    assert fired(b) == {}
    assert fired(prepare(alice, "lore", "And then?")) == {}
    # swiping back to A brings its effect back: the next round sees the entry sticky
    assert alice.post(f"{CONV}/turns/{a['turnId']}/select", {}).status_code == 200
    assert fired(prepare(alice, "lore", "And then?")) == {"1": "sticky"}


def test_editing_away_the_words_that_made_an_entry_sticky_ends_its_effect(alice):
    """docs/roleplay.md, "Timed effects": the state follows the visible conversation — after an edit too."""
    import_world(alice, body=book(entry(1, ["torch"], sticky=3)))
    scenario(alice, scanDepth=1)
    play(alice, ["hello"])
    lit = prepare(alice, "lore", "light the torch")
    complete(alice, lit, "it burns")
    assert fired(lit) == {"1": "key"}
    messages = alice.get(f"{CONV}/messages", data={"limit": 200}).json()["results"]
    user = next(m["id"] for m in messages if m["content"] == "light the torch")
    edited = alice.post(f"{CONV}/messages/{user}/edit", {"content": "keep it dark"})
    assert edited.status_code == 200, edited.json()
    edit_turn = alice.get(f"{CONV}/turns/{edited.json()['turnId']}").json()
    assert edit_turn["sources"][0]["details"]["timedEffects"]["sticky"] == {}
    assert fired(prepare(alice, "lore", "walk on")) == {}  # no visible message ever said "torch"
    assert fired(prepare(alice, "lore", "light the torch again")) == {"1": "key"}  # the entry itself still fires


def test_a_regenerated_turn_starts_from_the_same_state_as_the_turn_it_replaces(alice):
    import_world(alice, body=book(entry(1, ["lantern"], cooldown=4)))
    scenario(alice)
    play(alice, ["lantern"])
    a = prepare(alice, "lore", "lantern again")
    complete(alice, a)
    b = prepare(alice, "lore", "lantern again", replacesTurnId=a["turnId"])
    assert fired(a) == fired(b) == {}  # both on the cooldown the first round started
    assert b["sources"][0]["details"]["suppressed"] == [
        {"lorebook": "eldoria", "uid": "1", "comment": "e1", "by": "cooldown"}
    ]


def group_book(**second) -> dict:
    return book(
        entry(1, ["door"], group="doors", order=10),
        entry(2, ["door"], group="doors", order=20, **second),
        entry(3, ["door"], order=5),  # no group: fires beside the winner
    )


def test_a_group_keeps_one_winner_chosen_by_weight_and_the_turn_seed(alice):
    import_world(alice, body=group_book(groupWeight=0))
    scenario(alice)
    for _ in range(6):
        turn = prepare(alice, "lore", "a door")
        assert fired(turn) == {"3": "key", "1": "key"}  # a weight of 0 never wins the roll
        losers = turn["sources"][0]["details"]["groupLosers"]
        assert [(loser["uid"], loser["group"]) for loser in losers] == [("2", "doors")]
        complete(alice, turn)


def test_the_group_roll_is_deterministic_per_turn(alice):
    import_world(alice, body=group_book())
    scenario(alice)
    for _ in range(8):
        again = [fired(prepare(alice, "lore", "a door")) for _ in range(2)]  # the same round twice
        assert again[0] == again[1] and len(again[0]) == 2 and "3" in again[0]
        complete(alice, prepare(alice, "lore", "a door"))


def test_group_override_wins_by_order(alice):
    entries = book(
        entry(1, ["well"], group="wells", order=90),
        entry(2, ["well"], group="wells", order=10, groupOverride=True),
        entry(3, ["well"], group="wells", order=50, groupOverride=True),
    )
    import_world(alice, body=entries)
    scenario(alice)
    assert fired(prepare(alice, "lore", "the well")) == {"3": "key"}


@pytest.mark.parametrize(("option", "expected"), [(True, {"2": "key"}), (False, {"1": "key"})])
def test_group_scoring_keeps_the_entries_matching_most_keys(alice, option, expected):
    entries = book(
        entry(1, ["river"], group="water", order=50, groupOverride=True),
        entry(2, ["river", "boat"], group="water", order=10),
    )
    import_world(alice, body=entries)
    scenario(alice, useGroupScoring=option)
    assert fired(prepare(alice, "lore", "a boat on the river")) == expected


def test_a_sticky_entry_wins_its_group(alice):
    entries = book(
        entry(1, ["sea"], group="tides", order=10, sticky=9),
        entry(2, ["tide"], group="tides", order=90, groupOverride=True),
    )
    import_world(alice, body=entries)
    scenario(alice)
    first, second = play(alice, ["the sea", "the tide"])
    assert fired(first) == {"1": "key"}
    assert fired(second) == {"1": "sticky"}  # the override would win, but entry 1 is sticky
    assert [loser["uid"] for loser in second["sources"][0]["details"]["groupLosers"]] == ["2"]


def test_entries_are_exposed_by_position(alice):
    entries = book(
        entry(1, [], constant=True, position=0, order=20, content="before-20"),
        entry(2, [], constant=True, position=0, order=10, content="before-10"),
        entry(3, [], constant=True, position=1, content="after"),
        entry(4, [], constant=True, position=4, depth=2, role=1, order=30, content="depth2-user-30"),
        entry(5, [], constant=True, position=4, depth=2, role=1, order=40, content="depth2-user-40"),
        entry(6, [], constant=True, position=4, depth=0, content="depth0-system"),
        entry(7, [], constant=True, position=6, content="examples-after"),
    )
    import_world(alice, body=entries)
    template = "{{wiBefore}}\n[card]\n{{wiAfter}}\n[depth]\n{{wiAtDepth}}\n[em]\n{{wiEMBottom}}|{{wiANTop}}|"
    scenario(alice, template=template)
    turn = prepare(alice, "lore", "hi")
    assert turn["prompt"] == (
        "before-10\nbefore-20\n[card]\nafter\n[depth]\ndepth2-user-30\ndepth2-user-40\ndepth0-system\n"
        "[em]\nexamples-after||"
    )
    assert turn["variables"]["wiANTop"] == "" and turn["variables"]["wiBefore"] == "before-10\nbefore-20"
    assert turn["sources"][0]["details"]["atDepth"] == [
        {"depth": 0, "role": 0, "content": "depth0-system"},  # groups met from the highest order down
        {"depth": 2, "role": 1, "content": "depth2-user-30\ndepth2-user-40"},  # each in insertion order
    ]
    by_uid = {f["uid"]: f for f in turn["sources"][0]["details"]["fired"]}
    assert (by_uid["4"]["position"], by_uid["4"]["depth"], by_uid["4"]["role"]) == (4, 2, 1)
    assert "depth" not in by_uid["1"]


def test_position_variables_are_checked_with_the_scenario(alice):
    import_world(alice, body=book(entry(1, ["x"])))
    source = {"id": "wi", "agentRef": "lorebook", "variable": "wi", "lorebooks": ["eldoria"]}
    unknown = alice.post(
        "/v1/scenarios", {"id": "s1", "name": "s", "memorySources": [source], "template": "{{wiNowhere}}"}
    )
    assert "wiNowhere" in assert_envelope(unknown, 400)["details"]["fields"]["template"]
    clash = dict(source, id="wi2", variable="wiBefore")
    twice = alice.post(
        "/v1/scenarios", {"id": "s2", "name": "s", "memorySources": [source, clash], "template": "{{wi}}"}
    )
    assert "'wiBefore'" in assert_envelope(twice, 400)["details"]["fields"]["memorySources[1].variable"]
