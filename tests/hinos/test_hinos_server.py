"""memoryhub's own Hinos server (H4) through its API: /hinos/v1/memory/prepare and /commit."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from memories.hinos.models import HinosClaim
from memories.hinos.services.server import hinos_commit
from memories.models import Conversation, Event, Message, Turn
from memoryhub.runtimes import registry
from tests.factories import ConversationFactory, DiaryEntryFactory, EventFactory
from tests.support.api import assert_envelope

PREPARE, COMMIT = "/hinos/v1/memory/prepare", "/hinos/v1/memory/commit"
HEADER = {"HTTP_X_FLOW_CONVERSATION_ID": "c1"}
MESSAGES = [{"role": "user", "content": "我答应明天归还铜钥匙"}]
BODY = {
    "user_id": "u1",
    "request_id": "req-1",
    "scenario_id": None,
    "model_config_id": "mc-1",
    "prompt_id": "p-1",
    "system": "你是守卫。",
    "messages": MESSAGES,
}
MISSING = object()
DIARY_SCENARIO = {
    "id": "gate",
    "name": "gate",
    "memoryRuntime": "axon_go",
    "template": "{{compassMemory}} {{userMessage}}",
    "memorySources": [{"id": "diary", "agentRef": "diary-main", "variable": "compassMemory"}],
    "diary": {"minRounds": 1, "freeRoundsPerDiary": 1},
}


def prepare(api, body: dict | None = None, headers: dict | None = None):
    return api.post(PREPARE, BODY if body is None else body, **(HEADER if headers is None else headers))


def prepared(api, **changes) -> dict:
    response = prepare(api, {**BODY, **changes})
    assert response.status_code == 200, response.json()
    return response.json()


def commit(
    api, claim_id: str, user: str = "我答应明天归还铜钥匙", assistant: str = "守卫点头，记下了约定", headers=None
):
    return api.post(
        COMMIT, {"claim_id": claim_id, "user": user, "assistant": assistant}, **(HEADER if headers is None else headers)
    )


def committed(api, claim_id: str, **kwargs) -> dict:
    response = commit(api, claim_id, **kwargs)
    assert response.status_code == 200, response.json()
    return response.json()


def make_scenario(api, body: dict) -> None:
    assert api.post("/v1/scenarios", body).status_code == 201


# --- authentication and identity -----------------------------------------------------------------------


@pytest.mark.parametrize("path", [PREPARE, COMMIT])
def test_a_product_key_is_required(db, path):
    response = APIClient().post(path, BODY, format="json", **HEADER)
    assert_envelope(response, 401, "unauthenticated")
    assert HinosClaim.objects.count() == 0


def test_the_conversation_header_never_authenticates(db):
    response = APIClient().post(PREPARE, BODY, format="json", HTTP_AUTHORIZATION="Bearer c1", **HEADER)
    assert_envelope(response, 401, "unauthenticated")


def test_prepare_needs_the_conversation_header(alice):
    error = assert_envelope(prepare(alice, headers={}), 400, "invalid_request")
    assert error["details"] == {"header": "x-flow-conversation-id"}
    assert_envelope(prepare(alice, headers={"HTTP_X_FLOW_CONVERSATION_ID": "a/b"}), 400, "invalid_id")
    assert HinosClaim.objects.count() == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"user_id": MISSING}, "user_id"),
        ({"user_id": "a:b"}, "user_id"),
        ({"messages": []}, "messages"),
        ({"messages": MISSING}, "messages"),
        ({"messages": None}, "messages"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, "messages"),
        ({"messages": [*MESSAGES, {"role": "assistant", "content": "hi"}]}, "messages"),
        ({"messages": [{"role": "system", "content": "x"}, *MESSAGES]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "x", "name": "n"}]}, "messages.0.name"),
        ({"system": 7}, "system"),
        ({"scenario_id": 3}, "scenario_id"),
        ({"temperature": 1}, "temperature"),
    ],
)
def test_prepare_validates_the_request(alice, change, field):
    body = {key: value for key, value in {**BODY, **change}.items() if value is not MISSING}
    error = assert_envelope(prepare(alice, body), 400, "invalid_request")
    assert any(key.startswith(field) for key in error["details"]["fields"]), error
    assert HinosClaim.objects.count() == 0


def test_an_unknown_scenario_id_is_404(alice):
    assert_envelope(prepare(alice, {**BODY, "scenario_id": "nope"}), 404, "not_found")
    assert HinosClaim.objects.count() == 0


# --- prepare -------------------------------------------------------------------------------------------


def test_prepare_records_a_claim_and_answers_the_protocol(alice):
    body = prepared(alice)
    assert set(body) >= {"claim_id", "memory", "turn", "state_through_round"}
    assert body["claim_id"] and body["memory"] == "" and body["turn"] == 1 and body["state_through_round"] == 0
    claim = HinosClaim.objects.get(claim_id=body["claim_id"])
    assert (claim.product, claim.user_id, claim.conversation_id) == (alice.product, "u1", "c1")
    assert (claim.request_id, claim.model_config_id, claim.prompt_id, claim.system) == (
        "req-1",
        "mc-1",
        "p-1",
        "你是守卫。",
    )
    assert claim.status == "prepared"


def test_memory_is_assembled_from_the_scenarios_sources(alice):
    make_scenario(alice, DIARY_SCENARIO)
    conversation = ConversationFactory(product=alice.product, rounds=2)
    DiaryEntryFactory(product=alice.product, round_from=1, round_to=2, summary="用户答应明天归还铜钥匙。")
    body = prepared(alice, scenario_id="gate")
    assert body["memory"] == "## Diary summaries\nRounds 1-2: 用户答应明天归还铜钥匙。"
    assert body["turn"] == conversation.rounds + 1
    assert [(s["variable"], s["status"]) for s in body["sources"]] == [("compassMemory", "ok")]


def test_another_products_memory_is_never_served(alice, bob):
    make_scenario(alice, DIARY_SCENARIO)
    make_scenario(bob, DIARY_SCENARIO)
    DiaryEntryFactory(product=alice.product, round_from=1, round_to=1, summary="alice's secret")
    assert prepared(bob, scenario_id="gate")["memory"] == ""


# --- commit --------------------------------------------------------------------------------------------


def test_commit_stores_the_round_as_a_committed_turn(alice):
    claim_id = prepared(alice)["claim_id"]
    assert committed(alice, claim_id) == {"committed": True, "claim_id": claim_id, "turn": 1, "replayed": False}
    messages = alice.get("/v1/users/u1/conversations/c1/messages").json()["results"]
    assert [(m["role"], m["content"], m["round"]) for m in messages] == [
        ("user", "我答应明天归还铜钥匙", 1),
        ("assistant", "守卫点头，记下了约定", 1),
    ]
    turn = Turn.objects.get()
    assert (turn.runtime, turn.status, turn.round, turn.prompt) == ("hinos-server", "committed", 1, "你是守卫。")
    assert Conversation.objects.get(product=alice.product).rounds == 1
    [event] = Event.objects.filter(type="turn.completed")
    assert event.turn == turn and event.details["claim_id"] == claim_id
    assert prepared(alice)["turn"] == 2


def test_commit_runs_the_commit_hooks_inside_its_transaction(alice):
    seen: list[tuple[int, bool]] = []
    registry.register_commit_hook("probe", lambda pk: seen.append((pk, transaction.get_connection().in_atomic_block)))
    committed(alice, prepared(alice)["claim_id"])
    assert seen == [(Turn.objects.get().pk, True)]


def test_a_repeated_commit_answers_committed_again_and_stores_nothing_twice(alice):
    calls: list[int] = []
    registry.register_commit_hook("probe", calls.append)
    claim_id = prepared(alice)["claim_id"]
    first = committed(alice, claim_id)
    again = committed(alice, claim_id)
    assert again == {**first, "replayed": True}
    assert Message.objects.count() == 2 and Turn.objects.count() == 1 and len(calls) == 1
    assert Event.objects.filter(type="turn.completed").count() == 1


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_commits_of_one_claim_store_it_once(alice):
    claim_id = prepared(alice)["claim_id"]
    barrier = threading.Barrier(8)

    def racer(_: int) -> bool:
        try:
            barrier.wait(timeout=10)
            return hinos_commit(product=alice.product, claim_id=claim_id, user="u", assistant="a").replayed
        finally:
            connection.close()

    with ThreadPoolExecutor(8) as pool:
        replayed = sorted(pool.map(racer, range(8)))
    assert replayed == [False] + [True] * 7
    assert Turn.objects.count() == 1 and Message.objects.count() == 2
    assert Conversation.objects.get(product=alice.product).rounds == 1


def test_a_different_body_for_a_used_claim_is_409(alice):
    claim_id = prepared(alice)["claim_id"]
    committed(alice, claim_id)
    error = assert_envelope(commit(alice, claim_id, assistant="守卫摇头"), 409, "claim_already_committed")
    assert error["details"] == {"claim_id": claim_id}
    assert Message.objects.filter(content="守卫摇头").count() == 0


def test_an_unknown_claim_is_404(alice):
    assert_envelope(commit(alice, "hc_nope"), 404, "not_found")
    assert Turn.objects.count() == 0


def test_another_products_claim_is_404(alice, bob):
    claim_id = prepared(alice)["claim_id"]
    assert_envelope(commit(bob, claim_id), 404, "not_found")
    assert Turn.objects.count() == 0
    assert HinosClaim.objects.get(claim_id=claim_id).status == "prepared"


def test_a_claim_of_another_conversation_is_404(alice):
    claim_id = prepared(alice)["claim_id"]
    assert_envelope(commit(alice, claim_id, headers={"HTTP_X_FLOW_CONVERSATION_ID": "c2"}), 404, "not_found")
    assert committed(alice, claim_id, headers={})["committed"] is True  # the claim itself names its conversation


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"claim_id": "x", "user": "u"},
        {"claim_id": 5, "user": "u", "assistant": "a"},
        {"claim_id": "x", "user": "u", "assistant": "a", "extra": 1},
        [],
    ],
)
def test_commit_validates_the_request(alice, body):
    assert_envelope(alice.post(COMMIT, body, **HEADER), 400, "invalid_request")


# --- state_through_round -------------------------------------------------------------------------------


def test_rounds_without_background_writers_are_reflected_at_once(alice):
    committed(alice, prepared(alice)["claim_id"])
    assert prepared(alice)["state_through_round"] == 1


def test_a_round_is_reflected_once_its_diary_outcome_is_recorded(alice):
    make_scenario(alice, DIARY_SCENARIO)
    claim_id = prepared(alice, scenario_id="gate")["claim_id"]
    committed(alice, claim_id)  # on_commit work does not run inside this test's transaction
    assert HinosClaim.objects.get(claim_id=claim_id).awaiting == ["diaries"]
    assert prepared(alice, scenario_id="gate")["state_through_round"] == 0
    turn = Turn.objects.get()
    EventFactory(turn=turn, type="diary.failed", details={"willRetry": True})
    assert prepared(alice, scenario_id="gate")["state_through_round"] == 0
    EventFactory(turn=turn, type="diary.written")
    assert prepared(alice, scenario_id="gate")["state_through_round"] == 1
    assert HinosClaim.objects.get(claim_id=claim_id).reflected_at is not None


def test_a_final_diary_failure_also_ends_the_wait(alice):
    make_scenario(alice, DIARY_SCENARIO)
    committed(alice, prepared(alice, scenario_id="gate")["claim_id"])
    EventFactory(turn=Turn.objects.get(), type="diary.failed", details={"willRetry": False})
    assert prepared(alice, scenario_id="gate")["state_through_round"] == 1


def test_an_unreflected_round_holds_back_the_later_ones(alice):
    make_scenario(alice, DIARY_SCENARIO)
    for _ in range(2):
        committed(alice, prepared(alice, scenario_id="gate")["claim_id"])
    first, second = Turn.objects.order_by("round")
    EventFactory(turn=second, type="diary.skipped")
    assert prepared(alice, scenario_id="gate")["state_through_round"] == 0
    EventFactory(turn=first, type="diary.skipped")
    assert prepared(alice, scenario_id="gate")["state_through_round"] == 2
