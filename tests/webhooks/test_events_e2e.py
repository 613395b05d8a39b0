"""One end-to-end test per event family: the public API writes, the receiver gets the event, verified.

Tasks run in-process (both CI runs); tests/webhooks/test_worker.py has the real Celery worker.
"""

from __future__ import annotations

import pytest

from tests.factories import TABLE_TEMPLATES
from tests.longterm.support import create as create_longterm
from tests.longterm.support import memories_url, update_body
from tests.state.support import candidate, state_scenario, submit, upsert
from tests.story.support import SETTLE, settlement, story_scenario
from tests.story.support import turn as story_turn

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

CONV = "/v1/users/u1/conversations/c1"
SECRET_WORDS = "the password is swordfish"  # a user message: it must never travel in a payload


def scenario(api, **body) -> None:
    base = {
        "id": "gate",
        "name": "City gate",
        "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
        "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
    }
    response = api.post("/v1/scenarios", {**base, **body})
    assert response.status_code == 201, response.json()


def play(api, message: str = SECRET_WORDS, reply: str = "Welcome.", scenario_id: str = "gate") -> int:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": scenario_id, "userMessage": message})
    assert prepared.status_code == 201, prepared.json()
    turn_id = prepared.json()["turnId"]
    done = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": reply})
    assert done.status_code == 200, done.json()
    return turn_id


def of_type(receiver, type: str) -> list[dict]:
    return [p for p in receiver.verified() if p["type"] == type]


def test_turn_completed(alice, receiver):
    register(alice, receiver, ["turn.completed"])
    scenario(alice)
    turn_id = play(alice)
    [event] = receiver.verified()
    assert event["type"] == "turn.completed" and (event["user"], event["conversation"]) == ("u1", "c1")
    assert event["data"] == {"turnId": turn_id, "round": 1}
    assert SECRET_WORDS not in receiver.received[0].body.decode()  # by reference, never the prompt


def test_turn_completed_waits_for_the_accept_when_the_scenario_commits_on_accept(alice, receiver):
    register(alice, receiver, ["turn.completed"])
    scenario(alice, commitOn="accepted")
    turn_id = play(alice)
    assert receiver.received == []
    assert alice.post(f"{CONV}/turns/{turn_id}/accept").status_code == 200
    assert [e["data"]["turnId"] for e in receiver.verified()] == [turn_id]


def test_memory_updated_by_the_api_and_by_a_model_tool(alice, receiver):
    register(alice, receiver, ["memory.updated"])
    assert alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    scenario(alice)
    token = alice.post(f"{CONV}/tool-tokens", {"scenarioId": "gate"}).json()["token"]
    call = {"name": "update_memory", "arguments": {"expectedRevision": 1, "memory": {"a": 2}}}
    from tests.support.api import client_for

    response = client_for(token).post("/v1/tools/call", call, format="json")
    assert response.status_code == 200, response.json()
    assert [(e["data"]["revision"], e["data"]["actorType"]) for e in receiver.verified()] == [
        (1, "api_key"),
        (2, "tool"),
    ]


def test_longterm_created_updated_deleted(alice, receiver):
    register(alice, receiver, ["longterm.created", "longterm.updated", "longterm.deleted"])
    record = create_longterm(alice)
    url = f"{memories_url()}/{record['id']}"
    assert alice.patch(url, update_body(expected=1)).status_code == 200
    assert alice.delete(url).status_code == 204
    events = receiver.verified()
    assert [(e["type"], e["data"]["version"]) for e in events] == [
        ("longterm.created", 1),
        ("longterm.updated", 2),
        ("longterm.deleted", 2),
    ]
    assert all(e["data"]["memoryId"] == record["id"] and "conversation" not in e for e in events)
    assert "用户喜欢" not in receiver.received[0].body.decode()  # content stays behind the id


def test_diary_written(alice, receiver):
    register(alice, receiver, ["diary.written"])
    scenario(
        alice,
        memoryRuntime="axon_go",
        memorySources=[{"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"}],
        template="Diary so far:\n{{compassMemory}}\nUser: {{userMessage}}",
        diary={"minRounds": 3, "freeRoundsPerDiary": 2},
    )
    for number in (1, 2, 3):
        play(alice, f"Round {number}: is the lamp lit?", "The keeper relit the lighthouse lamp.")
    [event] = receiver.verified()
    diary = alice.get(f"{CONV}/diaries").json()["results"][0]
    assert event["data"]["entryId"] == diary["id"]
    assert (event["data"]["roundFrom"], event["data"]["roundTo"]) == (1, 3)


def test_table_updated(alice, receiver):
    register(alice, receiver, ["table.updated"])
    scenario(
        alice,
        memoryRuntime="axon_go",
        memorySources=[{"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"}],
        template="{{memoryTable}}\n用户：{{userMessage}}",
        tables=TABLE_TEMPLATES,
    )
    reply = (
        "夜色里，艾琳提着风灯走进旧灯塔。\n<tableEdit>\n<!--\n"
        'insertRow(0, {"0": "2024-05-01", "1": "夜", "2": "旧灯塔", "3": "艾琳"})\n-->\n</tableEdit>'
    )
    turn_id = play(alice, "走进灯塔", reply)
    [event] = receiver.verified()
    assert event["data"]["turnId"] == turn_id
    [table] = event["data"]["tables"]
    assert table["version"] == table["fromVersion"] + 1 and "艾琳" not in receiver.received[0].body.decode()


def test_state_committed(alice, receiver):
    register(alice, receiver, ["state.committed"])
    state_scenario(alice)
    response = submit(alice, candidate(0, upsert=[upsert("inventory", "lamp", "lit")]))
    assert response.status_code in (200, 201), response.json()
    [event] = receiver.verified()
    assert event["data"] == {"revision": 1, "baseRevision": 0}


def test_story_settled(alice, receiver):
    register(alice, receiver, ["story.settled"])
    story_scenario(alice)
    played = story_turn(alice)
    body = settlement(0, played["assistantMessageId"], appendEvents=[{"text": "The door opened."}])
    response = alice.post(SETTLE, body)
    assert response.status_code in (200, 201), response.json()
    [event] = receiver.verified()
    assert event["data"] == {"version": 1, "anchorMessageId": played["assistantMessageId"], "round": 1}


def test_export_ready(alice, receiver):
    register(alice, receiver, ["export.ready"])
    assert alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    started = alice.post("/v1/users/u1/exports")
    assert started.status_code == 202, started.json()
    [event] = receiver.verified()
    assert (event["user"], event["data"]) == ("u1", {"exportId": started.json()["exportId"]})
    assert alice.get(f"/v1/exports/{event['data']['exportId']}").json()["status"] == "done"


def test_user_erased_and_pending_messages_about_the_user_go_with_the_erasure(alice, receiver):
    from memories.webhooks.models import WebhookMessage

    register(alice, receiver, ["user.erased", "memory.updated"])
    assert alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    started = alice.delete("/v1/users/u1")
    assert started.status_code == 202, started.json()
    events = receiver.verified()
    assert [e["type"] for e in events] == ["memory.updated", "user.erased"]
    assert events[1]["data"] == {"erasureId": started.json()["erasureId"], "scope": "user"}
    # the memory.updated message about the user went with the erasure; only the erasure's own notice is left
    assert list(WebhookMessage.objects.values_list("type", flat=True)) == ["user.erased"]
