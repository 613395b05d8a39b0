"""`commitOn: "accepted"`: a completed regeneration does not displace the accepted reply until it is accepted
itself (docs/roleplay.md, "A regeneration waits for its accept"). Until then the accepted reply's writes stay and
its text is the round's history; the accept supersedes it (rollback) and commits the new reply."""

from __future__ import annotations

import pytest

from tests.lorebooks.support import import_world
from tests.support.api import assert_envelope
from tests.support.processes import wait_for

# Transactional, as tests/memories/test_swipes_rollback.py: the table edits run after each commit.
pytestmark = pytest.mark.django_db(transaction=True)

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "acc",
    "name": "Armoury",
    "commitOn": "accepted",
    "memorySources": [
        {"id": "h", "agentRef": "history", "variable": "history"},
        {"id": "story", "agentRef": "story", "variable": "story"},
    ],
    "tables": [{"name": "T", "columns": ["a"]}],
    "template": "{{history}}\n{{story}}\nU: {{userMessage}}",
}
PLAIN = 'Plain sword. <tableEdit>insertRow(0,{0:"plain"})</tableEdit>'
SWIPE = 'SWIPETEXT sword. <tableEdit>insertRow(0,{0:"swipe"})</tableEdit>'


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


def _prepare(api, message: str, scenario: str = "acc", **extra) -> dict:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": scenario, "userMessage": message, **extra})
    assert prepared.status_code == 201, prepared.json()
    return prepared.json()


def _complete(api, turn_id: int, answer: str) -> dict:
    completed = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": answer})
    assert completed.status_code == 200, completed.json()
    assert completed.json()["status"] == "completed" and completed.json()["committed"] is False
    return completed.json()


def _accept(api, turn_id: int) -> dict:
    accepted = api.post(f"{CONV}/turns/{turn_id}/accept", {})
    assert accepted.status_code == 200, accepted.json()

    def settled():
        body = api.get(f"{CONV}/turns/{turn_id}").json()
        return body if body["memoryWrite"].get("status") in ("done", "failed", "skipped") else None

    return wait_for(settled, timeout=60, message=f"turn {turn_id}'s memory write")


def _accepted_turn(api, message: str, answer: str, **extra) -> int:
    turn_id = _prepare(api, message, **extra)["turnId"]
    _complete(api, turn_id, answer)
    return _accept(api, turn_id)["turnId"]


def _rows(api) -> list:
    return api.get(f"{CONV}/tables").json()["tables"][0]["rows"]


def _visible(api) -> list[tuple[int, str]]:
    rows = api.get(f"{CONV}/messages?limit=200").json()["results"]
    return [(m["turnId"], m["content"]) for m in rows if not m["superseded"]]


def _found(api, query: str) -> list[str]:
    response = api.post("/v1/users/u1/history/search", {"query": query, "mode": "keyword"})
    assert response.status_code == 200, response.json()
    return [r["content"] for r in response.json()["results"]]


def _settle_story(api, turn_id: int) -> None:
    messages = api.get(f"{CONV}/messages?limit=200").json()["results"]
    anchor = next(m["id"] for m in messages if m["turnId"] == turn_id and m["role"] == "assistant")
    story = api.get(f"{CONV}/story").json()
    body = {"expectedVersion": story["version"], "anchorMessageId": anchor, "setFacts": {"sword": "plain"}}
    response = api.post(f"{CONV}/story/settlements", body)
    assert response.status_code == 201, response.json()


def test_the_accepted_reply_stays_current_until_the_regeneration_is_accepted(alice):
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    first = _accepted_turn(alice, "Buy a sword.", PLAIN)
    _settle_story(alice, first)
    assert _rows(alice) == [["plain"]]

    swipe = _prepare(alice, "Buy a sword.", replacesTurnId=first)["turnId"]
    _complete(alice, swipe, SWIPE)
    # Completed, not accepted: nothing of the accepted reply is taken back, and the swipe is not history.
    kept = alice.get(f"{CONV}/turns/{first}").json()
    assert (kept["status"], kept["rollback"]) == ("committed", None)
    assert _rows(alice) == [["plain"]]
    assert alice.get(f"{CONV}/story").json()["worldFacts"] == {"sword": "plain"}
    assert _visible(alice) == [(first, "Buy a sword."), (first, PLAIN)]
    stored = [m for m in alice.get(f"{CONV}/messages?limit=200").json()["results"] if m["turnId"] == swipe]
    assert [(m["content"], m["superseded"]) for m in stored] == [("Buy a sword.", True), (SWIPE, True)]
    prompt = _prepare(alice, "next")["prompt"]
    assert "Plain sword." in prompt and "SWIPETEXT" not in prompt
    assert _found(alice, "SWIPETEXT") == [] and _found(alice, "Plain") == [PLAIN]
    # Select is for committed replies: the waiting one is chosen by its accept; the accepted one is current.
    refused = assert_envelope(alice.post(f"{CONV}/turns/{swipe}/select", {}), 409, "turn_not_selectable")
    assert refused["details"]["status"] == "completed"
    assert alice.post(f"{CONV}/turns/{first}/select", {}).json()["changed"] is False

    # The accept supersedes the accepted reply (its writes rolled back), then commits the swipe.
    assert _accept(alice, swipe)["status"] == "committed"
    gone = alice.get(f"{CONV}/turns/{first}").json()
    assert gone["status"] == "superseded"
    assert (gone["rollback"]["cause"], gone["rollback"]["byTurnId"]) == ("regenerate", swipe)
    assert set(gone["rollback"]["kinds"]) >= {"tables", "story"}
    assert _rows(alice) == [["swipe"]]
    assert alice.get(f"{CONV}/story").json()["worldFacts"] == {}
    assert _visible(alice) == [(swipe, "Buy a sword."), (swipe, SWIPE)]
    prompt = _prepare(alice, "next")["prompt"]
    assert "SWIPETEXT sword." in prompt and "Plain sword." not in prompt
    assert _found(alice, "SWIPETEXT") == [SWIPE] and _found(alice, "Plain") == []


def test_a_regeneration_of_a_waiting_one_is_prompted_as_before_the_accepted_reply(alice):
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    first = _accepted_turn(alice, "Buy a sword.", PLAIN)
    _settle_story(alice, first)
    waiting = _prepare(alice, "Buy a sword.", replacesTurnId=first)["turnId"]
    _complete(alice, waiting, SWIPE)
    again = _prepare(alice, "Buy a sword.", replacesTurnId=waiting)
    [story] = [s for s in again["sources"] if s["id"] == "story"]
    assert story["details"].get("asBeforeReplacedReply") is True  # accepting it supersedes the accepted reply
    assert "plain" not in again["variables"]["story"]
    assert alice.get(f"{CONV}/story").json()["worldFacts"] == {"sword": "plain"}  # nothing taken back yet


def test_accepting_one_regeneration_supersedes_the_other_waiting_ones(alice):
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    first = _accepted_turn(alice, "Buy a sword.", PLAIN)
    one, two = (_prepare(alice, "Buy a sword.", replacesTurnId=first)["turnId"] for _ in range(2))
    _complete(alice, one, SWIPE)
    _complete(alice, two, "Another sword.")
    _accept(alice, one)
    lost = alice.get(f"{CONV}/turns/{two}").json()
    assert (lost["status"], lost["rollback"]["byTurnId"]) == ("superseded", one)
    error = assert_envelope(alice.post(f"{CONV}/turns/{two}/accept", {}), 409, "turn_superseded")
    assert error["details"] == {"turnId": two, "status": "superseded"}
    assert _visible(alice) == [(one, "Buy a sword."), (one, SWIPE)]
    assert _rows(alice) == [["swipe"]]


def test_an_accept_of_a_reply_a_select_displaced_before_its_commit_is_turn_superseded(alice):
    """docs/contract.md: a turn that another reply of its round replaced before it committed answers
    `409 turn_superseded`; one superseded after its commit, or never completed, `409 turn_not_acceptable`."""
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    first = _accepted_turn(alice, "Buy a sword.", PLAIN)
    second = _accepted_turn(alice, "Buy a sword.", SWIPE, replacesTurnId=first)
    waiting = _prepare(alice, "Buy a sword.", replacesTurnId=second)["turnId"]
    _complete(alice, waiting, "A third sword.")
    selected = alice.post(f"{CONV}/turns/{first}/select", {})
    assert [d["turnId"] for d in selected.json()["displaced"]] == [second, waiting]
    error = assert_envelope(alice.post(f"{CONV}/turns/{waiting}/accept", {}), 409, "turn_superseded")
    assert error["details"] == {"turnId": waiting, "status": "superseded"}
    refused = assert_envelope(alice.post(f"{CONV}/turns/{second}/accept", {}), 409, "turn_not_acceptable")
    assert refused["details"] == {"turnId": second, "status": "superseded"}
    assert _rows(alice) == [["plain"]]


def test_a_waiting_regeneration_does_not_carry_the_lorebook_timed_effects(alice):
    """The next round's sticky state comes from the round's visible (accepted) reply, not the waiting one."""
    lantern = {"uid": 1, "key": ["lantern"], "keysecondary": [], "comment": "e1", "content": "E1", "order": 100}
    import_world(alice, body={"entries": {"1": lantern | {"sticky": 5}}})
    source = {"id": "wi", "agentRef": "lorebook", "variable": "wi", "lorebooks": ["eldoria"]}
    body = {"id": "lore", "name": "lore", "commitOn": "accepted", "memorySources": [source], "template": "{{wi}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    first = _accepted_turn(alice, "a lantern", "ok", scenario="lore")
    waiting = _prepare(alice, "no light", scenario="lore", replacesTurnId=first)["turnId"]
    _complete(alice, waiting, "ok")
    fired = _prepare(alice, "-", scenario="lore")["sources"][0]["details"]["fired"]
    assert [(f["uid"], f["reason"]) for f in fired] == [("1", "sticky")]


def test_an_edit_of_the_accepted_reply_leaves_the_regeneration_waiting_and_its_accept_supersedes_the_edit(alice):
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    first = _accepted_turn(alice, "Buy a sword.", PLAIN)
    waiting = _prepare(alice, "Buy a sword.", replacesTurnId=first)["turnId"]
    _complete(alice, waiting, SWIPE)
    reply = next(m for m in alice.get(f"{CONV}/messages?limit=200").json()["results"] if m["content"] == PLAIN)
    edited = alice.post(f"{CONV}/messages/{reply['id']}/edit", {"content": "Plain sword, edited."})
    assert edited.status_code == 200 and edited.json()["status"] == "committed", edited.json()
    assert alice.get(f"{CONV}/turns/{waiting}").json()["status"] == "completed"
    swipe_reply = next(
        m["id"] for m in alice.get(f"{CONV}/messages?limit=200").json()["results"] if m["content"] == SWIPE
    )
    assert_envelope(alice.post(f"{CONV}/messages/{swipe_reply}/edit", {"content": "x"}), 409, "message_superseded")
    assert _accept(alice, waiting)["status"] == "committed"
    assert alice.get(f"{CONV}/turns/{edited.json()['turnId']}").json()["status"] == "superseded"
    assert _visible(alice) == [(waiting, "Buy a sword."), (waiting, SWIPE)]
    assert _rows(alice) == [["swipe"]]
