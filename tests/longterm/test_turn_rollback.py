"""Long-term memories written for a turn (`turnId`), through HTTP: superseding the turn rolls them back as a new
version, making what they superseded current again; a select (swiping back) brings them back (docs/roleplay.md)."""

from __future__ import annotations

import pytest

from tests.longterm.support import PREFERENCE_EN, create, memories_url, proposal, search, update_body
from tests.longterm.test_qdrant_backend import qdrant  # noqa: F401  (the in-process Qdrant fixture)
from tests.memories.roleplay_support import CONV, reply, setup, turn
from tests.support.api import assert_envelope

# Transactional, as the swipe tests: the turns' background work runs after each commit (the real worker on
# PostgreSQL + Redis).
pytestmark = pytest.mark.django_db(transaction=True)

RECALL = {
    "id": "assistant",
    "name": "Assistant",
    "memorySources": [{"id": "memories", "agentRef": "longterm", "variable": "preferences"}],
    "template": "{{preferences}}\nUser: {{userMessage}}",
}


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def get(api, memory_id: str) -> dict:
    response = api.get(f"{memories_url()}/{memory_id}")
    assert response.status_code == 200, response.json()
    return response.json()


def recalled(api) -> str:
    """The preferences another conversation's prompt recalls (user-scoped memories)."""
    response = api.post("/v1/users/u1/conversations/recall/turns", {"scenarioId": "assistant", "userMessage": "hi"})
    assert response.status_code == 201, response.json()
    return response.json()["prompt"]


def events(api, type: str) -> list[dict]:
    return api.get(f"{CONV}/events?type={type}&limit=200").json()["results"]


def test_a_regenerated_turn_rolls_its_memory_back_and_a_swipe_brings_it_back(alice):
    setup(alice)
    assert alice.post("/v1/scenarios", RECALL).status_code == 201
    zh = create(alice)  # nobody's turn: never rolled back
    a = turn(alice, "From now on answer in English.", reply("lighthouse", "Eli"))
    en = create(alice, {**PREFERENCE_EN, "turnId": a["turnId"]})
    assert en["turnId"] == a["turnId"] and en["rolledBackAt"] is None
    assert get(alice, zh["id"])["supersededBy"] == en["id"]
    assert ids(alice.get(memories_url())) == [en["id"]] and "language: en" in recalled(alice)

    # regenerate: A's memory is rolled back (a new version, kept), zh is current again with its vector
    b = turn(alice, "From now on answer in English.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    report = alice.get(f"{CONV}/turns/{a['turnId']}").json()["rollback"]
    assert report["status"] == "ok", report
    longterm = report["kinds"]["longterm"]
    assert longterm["status"] == "rolled_back"
    assert longterm["memories"] == [{"id": en["id"], "kind": "preference", "version": 2, "restored": [zh["id"]]}]
    rolled = get(alice, en["id"])
    assert rolled["version"] == 2 and rolled["rolledBackAt"] and rolled["content"] == en["content"]
    restored = get(alice, zh["id"])
    assert restored["supersededBy"] is None and restored["version"] == 3
    assert ids(alice.get(memories_url())) == [zh["id"]]
    assert ids(alice.get(f"{memories_url()}?include=superseded")) == [en["id"], zh["id"]]
    assert ids(search(alice, "English", "keyword")) == []
    assert ids(search(alice, "请用简洁的中文回复我", "semantic"))[:1] == [zh["id"]]
    assert en["id"] not in ids(search(alice, "Please answer me in detailed English", "semantic"))
    text = recalled(alice)
    assert "language: zh" in text and "language: en" not in text
    assert_envelope(alice.patch(f"{memories_url()}/{en['id']}", update_body(expected=2)), 409, "memory_rolled_back")
    (event,) = events(alice, "longterm.rolled_back")
    assert event["turnId"] == a["turnId"]

    # swipe back to A: its memory is current again and supersedes zh again
    selected = alice.post(f"{CONV}/turns/{a['turnId']}/select", {})
    assert selected.status_code == 200, selected.json()
    reapplied = selected.json()["rollback"]["kinds"]["longterm"]
    assert reapplied["status"] == "reapplied"
    assert reapplied["memories"] == [{"id": en["id"], "kind": "preference", "version": 3, "superseded": [zh["id"]]}]
    assert ids(alice.get(memories_url())) == [en["id"]]
    assert get(alice, en["id"])["rolledBackAt"] is None
    again = get(alice, zh["id"])
    assert again["supersededBy"] == en["id"] and again["version"] == 4
    assert "language: en" in recalled(alice)
    assert ids(search(alice, "Please answer me in detailed English", "semantic"))[:1] == [en["id"]]
    assert events(alice, "longterm.reapplied")

    # and forward to B: rolled back once more, each step a new version
    assert alice.post(f"{CONV}/turns/{b['turnId']}/select", {}).status_code == 200
    assert ids(alice.get(memories_url())) == [zh["id"]]
    assert (get(alice, en["id"])["version"], get(alice, zh["id"])["version"]) == (4, 5)


def test_a_regeneration_is_prompted_with_the_memories_as_the_rollback_will_leave_them(alice):
    """Before the new reply is stored: the replaced reply's memory is not recalled, the one it superseded is."""
    setup(alice)
    assert alice.post("/v1/scenarios", RECALL).status_code == 201
    zh = create(alice)
    a = turn(alice, "From now on answer in English.", reply("lighthouse", "Eli"))
    en = create(alice, {**PREFERENCE_EN, "turnId": a["turnId"]})
    body = {"scenarioId": "assistant", "userMessage": "From now on answer in English.", "replacesTurnId": a["turnId"]}
    prepared = alice.post(f"{CONV}/turns", body)
    assert prepared.status_code == 201, prepared.json()
    assert "language: zh" in prepared.json()["prompt"] and "language: en" not in prepared.json()["prompt"]
    details = prepared.json()["sources"][0]["details"]
    assert details["asBeforeReplacedReply"] is True
    assert [m["id"] for m in details["memories"]] == [zh["id"]]
    # nothing was written: the memories stay as they are until the new reply is stored
    assert ids(alice.get(memories_url())) == [en["id"]] and get(alice, zh["id"])["supersededBy"] == en["id"]
    plain = alice.post(f"{CONV}/turns", {"scenarioId": "assistant", "userMessage": "Next."}).json()
    assert "language: en" in plain["prompt"] and "asBeforeReplacedReply" not in plain["sources"][0]["details"]


def test_a_regeneration_whose_only_memory_goes_with_the_reply_says_so(alice):
    """The source is empty because of the rollback, not because nothing is saved: it says which."""
    setup(alice)
    assert alice.post("/v1/scenarios", RECALL).status_code == 201
    a = turn(alice, "From now on answer in English.", reply("lighthouse", "Eli"))
    create(alice, {**PREFERENCE_EN, "turnId": a["turnId"]})
    body = {"scenarioId": "assistant", "userMessage": "From now on answer in English.", "replacesTurnId": a["turnId"]}
    [source] = alice.post(f"{CONV}/turns", body).json()["sources"]
    assert source["status"] == "empty"
    assert source["details"] == {"reason": "none before the reply being regenerated", "asBeforeReplacedReply": True}


def test_a_memory_edited_after_its_turn_is_a_conflict_not_forced(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    memory = create(alice, {**PREFERENCE_EN, "turnId": a["turnId"]})
    edited = alice.patch(f"{memories_url()}/{memory['id']}", update_body(expected=1))
    assert edited.status_code == 200, edited.json()
    turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    report = alice.get(f"{CONV}/turns/{a['turnId']}").json()["rollback"]
    assert report["status"] == "conflict", report
    (conflict,) = report["kinds"]["longterm"]["conflicts"]
    assert conflict["id"] == memory["id"] and conflict["currentVersion"] == 2 and conflict["reason"]
    kept = get(alice, memory["id"])
    assert kept["version"] == 2 and kept["rolledBackAt"] is None
    assert ids(alice.get(memories_url())) == [memory["id"]]
    assert events(alice, "longterm.rollback_conflict")
    assert not events(alice, "longterm.rolled_back")


def test_deleting_the_reply_rolls_the_memory_back(alice):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    memory = create(alice, {**proposal(), "turnId": a["turnId"]})
    messages = alice.get(f"{CONV}/messages?limit=200").json()["results"]
    reply_id = next(m["id"] for m in messages if m["turnId"] == a["turnId"] and m["role"] == "assistant")
    assert alice.delete(f"{CONV}/messages/{reply_id}").status_code == 200
    assert get(alice, memory["id"])["rolledBackAt"] and ids(alice.get(memories_url())) == []


def test_a_turn_id_must_be_a_live_turn_of_this_user(alice, bob):
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    live = turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])["turnId"]
    body = proposal()
    assert_envelope(alice.post(memories_url(), {**body, "turnId": a["turnId"]}), 409, "turn_superseded")
    error = assert_envelope(alice.post(memories_url(), {**body, "turnId": 999999}), 422, "unknown_turn")
    assert error["details"]["path"] == "turnId"
    assert_envelope(alice.post(memories_url(), {**body, "turnId": "1"}), 400)
    assert_envelope(alice.post(memories_url("u2"), {**body, "turnId": live}), 422, "unknown_turn")  # another user's
    assert_envelope(bob.post(memories_url(), {**body, "turnId": live}), 422, "unknown_turn")  # another product's
    assert ids(alice.get(memories_url())) == [] and ids(alice.get(memories_url("u2"))) == []
    assert ids(bob.get(memories_url())) == []


def test_on_qdrant_a_rolled_back_memory_is_no_hit_and_a_reapplied_one_is_found_again(alice, qdrant):  # noqa: F811
    # A first write makes the Qdrant index the active one before any turn's background work (the worker's
    # history embedding) could bootstrap an index of the worker's own configuration.
    create(alice)
    setup(alice)
    a = turn(alice, "Go on.", reply("lighthouse", "Eli"))
    en = create(alice, {**PREFERENCE_EN, "turnId": a["turnId"]})
    query = "Please answer me in detailed English"
    assert ids(search(alice, query, "semantic"))[:1] == [en["id"]]
    turn(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a["turnId"])
    assert en["id"] not in ids(search(alice, query, "semantic"))
    assert alice.post(f"{CONV}/turns/{a['turnId']}/select", {}).status_code == 200
    # the collection's payload carries the new version: the hit is served again
    assert ids(search(alice, query, "semantic"))[:1] == [en["id"]]
