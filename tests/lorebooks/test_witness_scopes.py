"""Witness scopes through HTTP: in a group scene each character's recall holds only what it witnessed.

Messages carry the speaking character (`name`) and the characters present (`present`); a prepare that
names the replying character recalls history, diaries and lorebook scans from what that character saw.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tables.tasks import apply_table_edits
from tests.factories import DIARY_AGENT_REF, TABLE_TEMPLATES, DiaryEntryFactory
from tests.support.api import assert_envelope
from tests.support.turns import prepare
from tests.tables.support import edit

from .support import import_world

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/scene"
SOURCES = [
    {"id": "h", "agentRef": "history", "variable": "history"},
    {"id": "d", "agentRef": DIARY_AGENT_REF, "variable": "compassMemory"},
    {"id": "w", "agentRef": "lorebook", "variable": "worldInfo", "lorebooks": ["eldoria"], "scanDepth": 10},
]
TEMPLATE = "{{history}}\n##\n{{compassMemory}}\n##\n{{worldInfo}}\n##\n{{userMessage}}"
BOTH = ["Mara", "Oderic"]


def round_(api, message: str, reply: str, *, name: str, present: list[str]) -> dict:
    body = {"scenarioId": "scene", "userMessage": message, "name": name, "userName": "Rowan", "present": present}
    turn = api.post(f"{CONV}/turns", body)
    assert turn.status_code == 201, turn.json()
    done = api.post(f"{CONV}/turns/{turn.json()['turnId']}/complete", {"assistantMessage": reply})
    assert done.status_code == 200, done.json()
    return turn.json()


def prepare_for(api, name: str | None, message: str = "What do you know?") -> dict:
    named = {"name": name} if name else {}
    return prepare(api, "scene", message, conv=CONV, present=BOTH, subscriptionCategory="max", **named)


@pytest.fixture
def scene(alice):
    import_world(alice)
    body = {"id": "scene", "name": "Group scene", "memorySources": SOURCES, "template": TEMPLATE}
    assert alice.post("/v1/scenarios", body).status_code == 201
    round_(alice, "We all meet at the quay.", "Mara: Welcome aboard.", name="Mara", present=BOTH)
    round_(alice, "Oderic leaves. Mara, the Grey Lanterns hunt you.", "Then we hide.", name="Mara", present=["Mara"])
    round_(alice, "Oderic returns with bread.", "Oderic: Bread for all.", name="Oderic", present=BOTH)
    DiaryEntryFactory(
        product=alice.product,
        agent_ref=DIARY_AGENT_REF,
        conversation_id="scene",
        round_from=1,
        round_to=1,
        summary="They met.",
    )
    DiaryEntryFactory(
        product=alice.product,
        agent_ref=DIARY_AGENT_REF,
        conversation_id="scene",
        round_from=2,
        round_to=2,
        summary="Lanterns.",
    )
    DiaryEntryFactory(
        product=alice.product,
        agent_ref=DIARY_AGENT_REF,
        conversation_id="scene",
        round_from=3,
        round_to=3,
        summary="Bread.",
    )
    cache.clear()  # the factory writes diaries without the service's working-set invalidation
    return alice


def test_messages_carry_name_and_present(scene):
    messages = scene.get(f"{CONV}/messages").json()["results"]
    assert [(m["role"], m.get("name"), m.get("present")) for m in messages[2:4]] == [
        ("user", "Rowan", ["Mara"]),
        ("assistant", "Mara", ["Mara"]),
    ]


def test_each_character_recalls_only_what_it_witnessed(scene):
    mara, oderic = prepare_for(scene, "Mara"), prepare_for(scene, "Oderic")
    assert "Grey Lanterns hunt you" in mara["variables"]["history"]
    assert "Grey Lanterns" not in oderic["variables"]["history"]
    assert "Oderic returns with bread" in oderic["variables"]["history"]
    assert "We all meet at the quay" in oderic["variables"]["history"]
    assert "Lanterns." in mara["variables"]["compassMemory"]
    assert "Lanterns." not in oderic["variables"]["compassMemory"] and "Bread." in oderic["variables"]["compassMemory"]
    mara_fired = [f["uid"] for f in mara["sources"][2]["details"]["fired"]]
    oderic_fired = [f["uid"] for f in oderic["sources"][2]["details"]["fired"]]
    assert "3" in mara_fired and "3" not in oderic_fired  # the Grey Lanterns entry: only Mara heard the name
    assert [s["details"]["witness"] for s in oderic["sources"]] == ["Oderic", "Oderic", "Oderic"]
    assert oderic["witness"] == {"name": "Oderic", "present": BOTH}


def test_a_characters_history_reports_its_input_and_budget(scene):
    """The source status of compact history, witness-scoped or not: historyChars, inputChars, budgetChars."""
    message = "What do you know?"
    for name in ("Mara", None):
        details = prepare_for(scene, name, message)["sources"][0]["details"]
        assert details["inputChars"] == details["historyChars"] + len(message)
        assert details["budgetChars"] == 12000  # the default compact policy
        assert details["inputChars"] <= details["budgetChars"]


def test_without_a_character_the_recall_holds_everything(scene):
    turn = prepare_for(scene, None)
    assert "Grey Lanterns hunt you" in turn["variables"]["history"]
    assert "Lanterns." in turn["variables"]["compassMemory"]
    assert "witness" not in turn["sources"][2]["details"]


def test_a_message_without_present_is_witnessed_by_everyone(alice):
    import_world(alice)
    body = {"id": "scene", "name": "s", "memorySources": SOURCES[:1], "template": "{{history}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    turn_id = alice.post(f"{CONV}/turns", {"scenarioId": "scene", "userMessage": "hello all"}).json()["turnId"]
    alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "hi"})
    assert "hello all" in prepare_for(alice, "Anyone")["variables"]["history"]


@pytest.mark.parametrize("present", ["Mara", [""], ["x" * 101], [3], ["a"] * 51])
def test_a_bad_present_list_is_400(alice, present):
    import_world(alice)
    body = {"id": "scene", "name": "s", "memorySources": SOURCES[2:], "template": "{{worldInfo}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    response = alice.post(f"{CONV}/turns", {"scenarioId": "scene", "userMessage": "x", "present": present})
    assert assert_envelope(response, 400)["details"]["field"] == "present"


def test_tables_are_recalled_as_before_the_first_round_a_character_missed(alice):
    sources = [{"id": "t", "agentRef": "table-agent", "variable": "memoryTable"}]
    body = {
        "id": "scene",
        "name": "s",
        "memorySources": sources,
        "template": "{{memoryTable}}",
        "tables": TABLE_TEMPLATES,
    }
    assert alice.post("/v1/scenarios", body).status_code == 201, alice.post("/v1/scenarios", body).json()
    for message, place, present in [("At the quay.", "码头", BOTH), ("Alone.", "密室", ["Mara"])]:
        turn = round_(alice, message, edit(f'insertRow(1, {{0: "Mara", 2: "{place}"}})'), name="Mara", present=present)
        assert apply_table_edits(turn["turnId"]) == "updated"  # the commit's task, run here (no worker)
    mara, oderic = prepare_for(alice, "Mara")["variables"]["memoryTable"], prepare_for(alice, "Oderic")
    assert "码头" in mara and "密室" in mara
    assert "码头" in oderic["variables"]["memoryTable"] and "密室" not in oderic["variables"]["memoryTable"]
    assert oderic["sources"][0]["details"]["witness"] == "Oderic"
