"""The hinos runtime (docs/hinos.md) through the turn API, against a real Hinos stand-in on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from memories.models import Event, Turn
from tests.hinos.support import COMMIT, PREPARE, PREPARED
from tests.support.api import assert_envelope
from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import ROOT
from tests.support.turns import post_turn, prepare

CONV = "/v1/users/u1/conversations/c1"
TEMPLATE = "你是守卫。\nMemory: {{hinosMemory}}\nState: {{jsonMemory}}\nUser: {{userMessage}}"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memoryRuntime": "hinos",
    "template": TEMPLATE,
    "memorySources": [
        {"id": "external-memory", "agentRef": "hinos", "variable": "hinosMemory"},
        {"id": "state", "agentRef": "json-memory", "variable": "jsonMemory"},
    ],
    "hinos": {"modelConfigId": "mc-1", "promptId": "p-1"},
}


def make_scenario(api, **changes) -> None:
    response = api.post("/v1/scenarios", {**SCENARIO, **changes})
    assert response.status_code == 201, response.json()


def complete(api, turn_id: int, reply: str = "守卫点头，记下了约定"):
    return api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": reply})


def events(api, type: str) -> list[dict]:
    return api.get(f"{CONV}/events?type={type}").json()["results"]


def requests_to(server: StubHttpServer, path: str) -> list:
    return [r for r in server.requests if r.path == path]


def test_prepare_sends_the_protocol_and_memory_becomes_hinos_memory(alice, hinos):
    make_scenario(alice)
    assert alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"gate": "closed"}}).status_code == 200
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙", requestId="req-1")
    [sent] = requests_to(hinos, PREPARE)
    system = '你是守卫。\nMemory: \nState: {"gate":"closed"}\nUser: 我答应明天归还铜钥匙'
    assert sent.json() == {
        "user_id": f"{alice.product.pk}.u1",
        "request_id": "req-1",
        "scenario_id": "gate",
        "model_config_id": "mc-1",
        "prompt_id": "p-1",
        "system": system,
        "messages": [{"role": "user", "content": "我答应明天归还铜钥匙"}],
    }
    assert sent.headers["x-flow-conversation-id"] == f"{alice.product.pk}.c1"
    assert sent.headers["x-request-id"] == "req-1"
    assert sent.headers["authorization"] == "Bearer hinos-secret"
    assert turn["prompt"] == system.replace("Memory: \n", "Memory: 用户答应明天归还铜钥匙\n")
    assert turn["variables"]["hinosMemory"] == "用户答应明天归还铜钥匙"
    assert [s["variable"] for s in turn["sources"]] == ["hinosMemory", "jsonMemory"]
    assert turn["sources"][0]["status"] == "ok" and turn["sources"][0]["details"]["claimId"] == "claim-1"
    detail = alice.get(f"{CONV}/turns/{turn['turnId']}").json()
    assert detail["runtimeState"]["hinos"] == {"claim_id": "claim-1", "turn": 1, "state_through_round": 0}


def test_commit_sends_the_claim_with_user_and_assistant(alice, hinos):
    make_scenario(alice)
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙", requestId="req-1")
    response = complete(alice, turn["turnId"])
    assert response.status_code == 200, response.json()
    assert response.json()["committed"] is True and response.json()["memoryWrite"] == {"status": "committed"}
    [sent] = requests_to(hinos, COMMIT)
    assert sent.json() == {"claim_id": "claim-1", "user": "我答应明天归还铜钥匙", "assistant": "守卫点头，记下了约定"}
    assert sent.headers["x-flow-conversation-id"] == f"{alice.product.pk}.c1"
    assert sent.headers["x-request-id"] == "req-1"
    assert sent.headers["authorization"] == "Bearer hinos-secret"
    assert events(alice, "memory.write_failed") == []
    assert len(events(alice, "turn.completed")) == 1


def test_the_next_prepare_sends_the_formal_chat_with_the_current_user_message_last(alice, hinos):
    make_scenario(alice)
    assert complete(alice, prepare(alice, "gate", "我答应明天归还铜钥匙")["turnId"]).status_code == 200
    prepare(alice, "gate", "那我们出发吧")
    assert requests_to(hinos, PREPARE)[-1].json()["messages"] == [
        {"role": "user", "content": "我答应明天归还铜钥匙"},
        {"role": "assistant", "content": "守卫点头，记下了约定"},
        {"role": "user", "content": "那我们出发吧"},
    ]


def test_two_products_send_different_ids_for_the_same_user_and_conversation(alice, bob, hinos):
    for api in (alice, bob):
        make_scenario(api)
        complete(api, prepare(api, "gate", "我答应明天归还铜钥匙")["turnId"])
    alice_prepare, bob_prepare = requests_to(hinos, PREPARE)
    alice_commit, bob_commit = requests_to(hinos, COMMIT)
    for api, sent in ((alice, alice_prepare), (bob, bob_prepare)):
        assert sent.json()["user_id"] == f"{api.product.pk}.u1"
    for api, sent in ((alice, alice_prepare), (alice, alice_commit), (bob, bob_prepare), (bob, bob_commit)):
        assert sent.headers["x-flow-conversation-id"] == f"{api.product.pk}.c1"


def test_an_id_too_long_to_prefix_is_sent_hashed(alice, hinos):
    make_scenario(alice)
    user = "u" * 120
    turn = alice.post(f"/v1/users/{user}/conversations/c1/turns", {"scenarioId": "gate", "userMessage": "hi"})
    assert turn.status_code == 201, turn.json()
    sent = requests_to(hinos, PREPARE)[-1].json()["user_id"]
    assert sent == f"{alice.product.pk}-{hashlib.sha256(user.encode()).hexdigest()}" and len(sent) <= 128


def test_a_single_tenant_deployment_can_send_the_raw_ids(alice, hinos, settings):
    settings.HINOS_MEMORY_SCOPE = "none"
    make_scenario(alice)
    complete(alice, prepare(alice, "gate", "我答应明天归还铜钥匙")["turnId"])
    [prepared], [committed] = requests_to(hinos, PREPARE), requests_to(hinos, COMMIT)
    assert prepared.json()["user_id"] == "u1" and prepared.headers["x-flow-conversation-id"] == "c1"
    assert committed.headers["x-flow-conversation-id"] == "c1"


def test_without_token_or_section_no_authorization_and_null_identifiers(alice, hinos, settings):
    settings.HINOS_MEMORY_TOKEN = None
    make_scenario(alice, hinos={})
    prepare(alice, "gate", "我答应明天归还铜钥匙")
    sent = requests_to(hinos, PREPARE)[-1]
    assert "authorization" not in sent.headers
    assert sent.json()["model_config_id"] is None and sent.json()["prompt_id"] is None
    assert sent.headers["x-request-id"] == sent.json()["request_id"]


def test_empty_memory_keeps_the_normal_preparation(alice, hinos):
    hinos.route("POST", PREPARE, Reply(200, {**PREPARED, "memory": ""}))
    make_scenario(alice)
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙")
    assert turn["prompt"] == "你是守卫。\nMemory: \nState: \nUser: 我答应明天归还铜钥匙"
    assert turn["variables"]["hinosMemory"] == ""
    assert turn["sources"][0]["status"] == "empty"


@pytest.mark.parametrize(
    ("reply", "status", "code"),
    [
        (Reply(200, PREPARED, delay_seconds=1.5), 504, "upstream_timeout"),
        (Reply(500, {"error": "boom"}), 502, "upstream_failed"),
        (Reply(200, {key: v for key, v in PREPARED.items() if key != "claim_id"}), 502, "upstream_failed"),
        (Reply(200, {**PREPARED, "turn": "1"}), 502, "upstream_failed"),
        (Reply(200, raw=b"<html>"), 502, "upstream_failed"),
    ],
    ids=["timeout", "http-500", "no-claim-id", "turn-not-integer", "not-json"],
)
def test_a_failed_prepare_fails_the_turn_and_creates_nothing(alice, hinos, settings, reply, status, code):
    settings.HINOS_MEMORY_TIMEOUT_MS = 300
    hinos.route("POST", PREPARE, reply)
    make_scenario(alice)
    error = assert_envelope(post_turn(alice, "gate", "我答应明天归还铜钥匙"), status, code)
    assert error["details"]["service"] == "hinos"
    assert Turn.objects.count() == 0


def test_a_failure_keeps_the_upstream_body_in_the_log_not_in_the_answer(alice, hinos, caplog):
    hinos.route("POST", PREPARE, Reply(404, {"error": {"message": "no scenario 'gate' in the memory product"}}))
    make_scenario(alice)
    error = assert_envelope(post_turn(alice, "gate", "我答应明天归还铜钥匙"), 502, "upstream_failed")
    assert error["details"] == {"service": "hinos", "status": 404}
    assert "no scenario" not in json.dumps(error)
    assert "no scenario 'gate' in the memory product" in caplog.text


def test_without_hinos_memory_url_the_turn_fails_with_502(alice, hinos, settings):
    settings.HINOS_MEMORY_URL = None
    make_scenario(alice)
    error = assert_envelope(post_turn(alice, "gate", "我答应明天归还铜钥匙"), 502, "upstream_failed")
    assert "HINOS_MEMORY_URL" in error["message"]
    assert Turn.objects.count() == 0


@pytest.mark.parametrize(
    "reply",
    [Reply(200, {"committed": False}), Reply(200, {}), Reply(503, {"error": "busy"})],
    ids=["committed-false", "no-committed", "http-503"],
)
def test_best_effort_commit_failure_completes_and_says_the_memory_write_failed(alice, hinos, reply):
    hinos.route("POST", COMMIT, reply)
    make_scenario(alice)
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙")
    response = complete(alice, turn["turnId"])
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["committed"] is True and body["status"] == "committed"
    assert body["memoryWrite"]["status"] == "failed" and "Hinos commit failed" in body["memoryWrite"]["reason"]
    [failed] = events(alice, "memory.write_failed")
    assert failed["turnId"] == turn["turnId"]
    assert failed["details"]["claim_id"] == "claim-1" and failed["details"]["reason"]
    assert failed["details"]["memoryIngest"] == "best_effort"
    assert len(events(alice, "turn.completed")) == 1


def test_commit_timeout_is_a_failed_memory_write(alice, hinos, settings):
    settings.HINOS_MEMORY_TIMEOUT_MS = 300
    hinos.route("POST", COMMIT, Reply(200, {"committed": True}, delay_seconds=1.5))
    make_scenario(alice)
    body = complete(alice, prepare(alice, "gate", "我答应明天归还铜钥匙")["turnId"]).json()
    assert body["memoryWrite"]["status"] == "failed"
    assert events(alice, "memory.write_failed")[0]["details"]["code"] == "upstream_timeout"


def test_required_commit_failure_fails_the_completion_but_keeps_the_reply(alice, hinos):
    hinos.route("POST", COMMIT, Reply(200, {"committed": False}))
    make_scenario(alice, memoryIngest="required")
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙")
    error = assert_envelope(complete(alice, turn["turnId"]), 502, "upstream_failed")
    assert "memoryIngest is 'required'" in error["message"] and error["details"]["claim_id"] == "claim-1"
    detail = alice.get(f"{CONV}/turns/{turn['turnId']}").json()
    assert detail["status"] == "completed" and detail["committed"] is False
    assert detail["memoryWrite"]["status"] == "failed"
    messages = alice.get(f"{CONV}/messages").json()["results"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert len(events(alice, "memory.write_failed")) == 1  # recorded, and it survived the failed request
    assert events(alice, "turn.completed") == []


def test_required_turn_can_be_committed_by_accept_once_hinos_answers(alice, hinos):
    hinos.route("POST", COMMIT, Reply(503, {"error": "busy"}))
    make_scenario(alice, memoryIngest="required")
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙")
    assert complete(alice, turn["turnId"]).status_code == 502
    hinos.route("POST", COMMIT, Reply(200, {"committed": True}))
    response = alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {})
    assert response.status_code == 200, response.json()
    assert response.json()["committed"] is True and response.json()["memoryWrite"] == {"status": "committed"}
    assert len(requests_to(hinos, COMMIT)) == 2


def test_a_failure_event_is_kept_in_the_database_not_only_in_the_response(alice, hinos):
    hinos.route("POST", COMMIT, Reply(500, {}))
    make_scenario(alice, memoryIngest="required")
    complete(alice, prepare(alice, "gate", "我答应明天归还铜钥匙")["turnId"])
    event = Event.objects.get(type="memory.write_failed")
    assert event.product == alice.product and event.details["upstreamStatus"] == 500


def test_the_hinos_section_is_validated(alice, hinos):
    response = alice.post("/v1/scenarios", {**SCENARIO, "hinos": {"modelConfigId": 5, "temperature": 1}})
    error = assert_envelope(response, 400)
    assert set(error["details"]["fields"]) == {"hinos.modelConfigId", "hinos.temperature"}


def test_another_product_cannot_complete_the_turn(alice, bob, hinos):
    make_scenario(alice)
    turn = prepare(alice, "gate", "我答应明天归还铜钥匙")
    assert_envelope(complete(bob, turn["turnId"]), 404, "not_found")
    assert requests_to(hinos, COMMIT) == []


@pytest.mark.parametrize(("value", "scope"), [(None, "product"), ("none", "none"), ("tenant", None)])
def test_hinos_memory_scope_is_product_by_default_and_checked_at_start_up(value, scope):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HINOS_", "PYTEST", "MEMORYHUB_FAULT"))}
    env = {**base, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", **({"HINOS_MEMORY_SCOPE": value} if value else {})}
    code = "import django; django.setup(); from django.conf import settings; print(settings.HINOS_MEMORY_SCOPE)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    if scope is None:
        assert result.returncode != 0 and "HINOS_MEMORY_SCOPE must be product or none" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == scope
