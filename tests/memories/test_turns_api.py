"""The turn pipeline through HTTP (U1–U3): prepare, complete, accept, messages and events."""

from __future__ import annotations

import pytest

from memories.models import Conversation, Turn
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import SourceResult
from tests.support.api import assert_envelope
from tests.support.registry import only_commit_hooks
from tests.support.turns import prepare

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [
        {"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"},
        {"id": "s2", "agentRef": "table-agent", "variable": "memoryTable"},
    ],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


@pytest.fixture
def committed_turns() -> list[tuple[int, str]]:
    """Replace the registered commit hooks by one that records (turn pk, status seen inside the commit)."""
    seen: list[tuple[int, str]] = []

    def recorder(pk: int) -> bool:
        seen.append((pk, Turn.objects.get(pk=pk).status))
        return True  # "scheduled memory work"

    only_commit_hooks({"recorder": recorder})
    return seen


@pytest.fixture
def gate(alice) -> dict:
    registry.set_producer("memoryTable", lambda request: SourceResult("| key | guard |", "ok", version=3))
    return create_scenario(alice, SCENARIO)


def create_scenario(api, body: dict) -> dict:
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()
    return response.json()


def complete(api, turn_id: int, reply: str = "welcome", conv: str = CONV):
    return api.post(f"{conv}/turns/{turn_id}/complete", {"assistantMessage": reply})


def events(api, conv: str = CONV, **params) -> list[dict]:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return api.get(f"{conv}/events?{query}").json()["results"]


# --- prepare -------------------------------------------------------------------------------------------


def test_prepare_returns_the_prompt_variables_and_source_statuses(alice, gate):
    alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"scene": "城门"}})
    turn = prepare(alice, "gate", "who holds the key?")
    assert {
        "turnId",
        "round",
        "runtime",
        "prompt",
        "variables",
        "referencedVariables",
        "unreferencedVariables",
        "sources",
    } <= set(turn)
    assert isinstance(turn["turnId"], int) and turn["round"] == 1 and turn["runtime"] == "personalization"
    assert turn["prompt"] == 'Memory: {"scene":"城门"}\nUser: who holds the key?'
    assert turn["variables"] == {"jsonMemory": '{"scene":"城门"}', "memoryTable": "| key | guard |"}
    json_source, table_source = turn["sources"]
    assert (json_source["id"], json_source["variable"], json_source["status"], json_source["revision"]) == (
        "s1",
        "jsonMemory",
        "ok",
        1,
    )
    assert (table_source["id"], table_source["variable"], table_source["status"], table_source["version"]) == (
        "s2",
        "memoryTable",
        "ok",
        3,
    )
    assert turn["status"] == "prepared"


def test_retrieved_is_not_seen_referenced_and_unreferenced_variables(alice, gate):
    turn = prepare(alice, "gate", "hello")
    assert turn["referencedVariables"] == ["jsonMemory"]
    assert turn["unreferencedVariables"] == ["memoryTable"]
    assert "| key | guard |" not in turn["prompt"]  # recalled, but the template does not show it to the model


def test_an_empty_memory_is_reported_as_empty_with_revision_0(alice, gate):
    source = prepare(alice, "gate", "hello")["sources"][0]
    assert source["status"] == "empty" and source["revision"] == 0
    assert prepare(alice, "gate", "hello")["prompt"] == "Memory: \nUser: hello"


def test_recalled_text_is_never_re_rendered_as_a_template(alice, gate):
    alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"note": "{{userMessage}}"}})
    assert prepare(alice, "gate", "hi")["prompt"] == 'Memory: {"note":"{{userMessage}}"}\nUser: hi'


def test_the_turn_detail_shows_what_the_model_was_given(alice, gate):
    turn = prepare(alice, "gate", "hi", requestId="req-1", subscriptionCategory="ultra")
    detail = alice.get(f"{CONV}/turns/{turn['turnId']}").json()
    assert detail["prompt"] == turn["prompt"] and detail["sources"] == turn["sources"]
    assert detail["requestId"] == "req-1" and detail["status"] == "prepared" and detail["committed"] is False
    assert Turn.objects.get(pk=turn["turnId"]).subscription_category == "ultra"


def test_rounds_count_completed_turns_from_1(alice, gate, committed_turns):
    first = prepare(alice, "gate", "hello")
    assert first["round"] == 1
    assert prepare(alice, "gate", "hello")["round"] == 1  # not completed yet: the round is still the first
    assert complete(alice, first["turnId"]).json()["round"] == 1
    second = prepare(alice, "gate", "hello")
    assert second["round"] == 2
    complete(alice, second["turnId"])
    assert prepare(alice, "gate", "hello")["round"] == 3
    assert prepare(alice, "gate", "hello", conv="/v1/users/u1/conversations/other")["round"] == 1
    assert Conversation.objects.get(product=alice.product, conversation_id="c1").rounds == 2


def test_a_regenerated_reply_keeps_the_round_and_supersedes_the_old_messages(alice, gate, committed_turns):
    first = prepare(alice, "gate", "q1")
    complete(alice, first["turnId"], "a1")
    again = prepare(alice, "gate", "q1", replacesTurnId=first["turnId"])
    assert again["round"] == 1
    assert complete(alice, again["turnId"], "a1 bis").json()["round"] == 1
    messages = alice.get(f"{CONV}/messages").json()["results"]
    assert [(m["content"], m["superseded"]) for m in messages] == [
        ("q1", True),
        ("a1", True),
        ("q1", False),
        ("a1 bis", False),
    ]
    assert Conversation.objects.get(product=alice.product, conversation_id="c1").rounds == 1
    assert prepare(alice, "gate", "hello")["round"] == 2


def test_replacing_a_turn_that_is_not_completed_is_404(alice, gate):
    open_turn = prepare(alice, "gate", "hello")
    body = {"scenarioId": "gate", "userMessage": "x", "replacesTurnId": open_turn["turnId"]}
    assert_envelope(alice.post(f"{CONV}/turns", body), 404, "not_found")


def test_an_invalid_subscription_category_is_400(alice, gate):
    error = assert_envelope(
        alice.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "x", "subscriptionCategory": "gold"}),
        400,
        "invalid_request",
    )
    assert "subscriptionCategory" in str(error)
    assert not Turn.objects.exists()


@pytest.mark.parametrize("category", ["default", "plus", "ultra", "max"])
def test_every_subscription_category_is_accepted(alice, gate, category):
    prepare(alice, "gate", "hello", subscriptionCategory=category)


@pytest.mark.parametrize(
    "body",
    [
        {"userMessage": "x"},
        {"scenarioId": "gate"},
        {"scenarioId": "gate", "userMessage": 5},
        {"scenarioId": 5, "userMessage": "x"},
        {"scenarioId": "gate", "userMessage": "x", "userId": "u2"},
        {"scenarioId": "gate", "userMessage": "x", "replacesTurnId": "1"},
        {"scenarioId": "gate", "userMessage": "x", "requestId": "has space"},
        ["gate", "x"],
    ],
)
def test_a_bad_prepare_body_is_400_and_records_nothing(alice, gate, body):
    assert_envelope(alice.post(f"{CONV}/turns", body), 400, "invalid_request")
    assert not Turn.objects.exists()


def test_a_malformed_json_body_is_400(alice, gate):
    response = alice.client.post(f"{CONV}/turns", '{"scenarioId": ', content_type="application/json")
    assert_envelope(response, 400, "invalid_request")


def test_a_bad_user_or_conversation_id_is_400(alice, gate):
    assert_envelope(alice.post("/v1/users/a:b/conversations/c1/turns", {"scenarioId": "gate", "userMessage": "x"}), 400)
    assert_envelope(
        alice.post(f"/v1/users/u1/conversations/{'c' * 129}/turns", {"scenarioId": "gate", "userMessage": "x"}), 400
    )


def test_an_unknown_scenario_is_404(alice, gate):
    assert_envelope(alice.post(f"{CONV}/turns", {"scenarioId": "nope", "userMessage": "x"}), 404, "not_found")


def test_another_products_scenario_is_404(alice, bob, gate):
    assert_envelope(bob.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "x"}), 404, "not_found")
    assert not Turn.objects.exists()


# --- complete / accept ------------------------------------------------------------------------------


def test_memory_write_is_skipped_when_no_hook_scheduled_memory_work(alice, gate):
    only_commit_hooks({"bookkeeping": lambda pk: False})
    turn = prepare(alice, "gate", "hello")
    body = complete(alice, turn["turnId"], "hi").json()
    assert body["committed"] is True
    assert body["memoryWrite"] == {"status": "skipped", "reason": "no background work"}


def test_complete_stores_the_reply_and_commits(alice, gate, committed_turns):
    turn = prepare(alice, "gate", "hello")
    response = complete(alice, turn["turnId"], "welcome, traveller")
    assert response.status_code == 200
    body = response.json()
    assert body["turnId"] == turn["turnId"] and body["status"] == "committed" and body["committed"] is True
    assert body["memoryWrite"]["status"] == "pending"  # the commit hook scheduled background work
    assert committed_turns == [(turn["turnId"], "committed")]
    (event,) = events(alice)
    assert event["type"] == "turn.completed" and event["turnId"] == turn["turnId"]
    assert event["details"]["round"] == 1 and event["createdAt"].endswith("Z")
    messages = alice.get(f"{CONV}/messages").json()["results"]
    assert [(m["role"], m["content"], m["round"], m["turnId"]) for m in messages] == [
        ("user", "hello", 1, turn["turnId"]),
        ("assistant", "welcome, traveller", 1, turn["turnId"]),
    ]


def test_complete_with_no_background_work_says_the_memory_write_was_skipped(alice, gate):
    only_commit_hooks({})
    body = complete(alice, prepare(alice, "gate", "hello")["turnId"]).json()
    assert body["committed"] is True and body["memoryWrite"]["status"] == "skipped"
    assert events(alice)[0]["details"]["memoryWrite"] == body["memoryWrite"]


def test_completing_twice_is_409_and_changes_nothing(alice, gate, committed_turns):
    turn = prepare(alice, "gate", "hello")
    complete(alice, turn["turnId"], "first")
    assert_envelope(complete(alice, turn["turnId"], "second"), 409)
    assert [m["content"] for m in alice.get(f"{CONV}/messages").json()["results"]] == ["hello", "first"]
    assert len(events(alice)) == 1 and len(committed_turns) == 1


def test_completing_an_unknown_turn_is_404(alice, gate):
    assert_envelope(complete(alice, 999999), 404, "not_found")
    assert_envelope(alice.post(f"{CONV}/turns/999999/accept", {}), 404, "not_found")
    assert_envelope(alice.get(f"{CONV}/turns/999999"), 404, "not_found")


@pytest.mark.parametrize("conv", ["/v1/users/u2/conversations/c1", "/v1/users/u1/conversations/c2"])
def test_a_turn_of_another_user_or_conversation_is_404(alice, gate, conv, committed_turns):
    turn = prepare(alice, "gate", "hello")
    assert_envelope(alice.get(f"{conv}/turns/{turn['turnId']}"), 404, "not_found")
    assert_envelope(complete(alice, turn["turnId"], conv=conv), 404, "not_found")
    assert_envelope(alice.post(f"{conv}/turns/{turn['turnId']}/accept", {}), 404, "not_found")
    assert Turn.objects.get(pk=turn["turnId"]).status == "prepared"
    assert committed_turns == []


def test_a_turn_of_another_product_is_404(alice, bob, gate, committed_turns):
    turn = prepare(alice, "gate", "hello")
    assert_envelope(bob.get(f"{CONV}/turns/{turn['turnId']}"), 404, "not_found")
    assert_envelope(complete(bob, turn["turnId"]), 404, "not_found")
    assert_envelope(bob.post(f"{CONV}/turns/{turn['turnId']}/accept", {}), 404, "not_found")
    assert Turn.objects.get(pk=turn["turnId"]).status == "prepared" and committed_turns == []
    assert bob.get(f"{CONV}/messages").json() == {"results": [], "next": None}
    complete(alice, turn["turnId"])
    assert bob.get(f"{CONV}/messages").json() == {"results": [], "next": None}
    assert bob.get(f"{CONV}/events").json() == {"results": [], "next": None}


@pytest.mark.parametrize(
    "body",
    [{}, {"assistantMessage": 5}, {"assistantMessage": "x", "committed": True}, ["x"], {"assistantMessage": None}],
)
def test_a_bad_complete_body_is_400_and_changes_nothing(alice, gate, body, committed_turns):
    turn = prepare(alice, "gate", "hello")
    assert_envelope(alice.post(f"{CONV}/turns/{turn['turnId']}/complete", body), 400, "invalid_request")
    assert Turn.objects.get(pk=turn["turnId"]).status == "prepared"
    assert alice.get(f"{CONV}/messages").json()["results"] == []


def test_an_empty_reply_is_a_reply(alice, gate, committed_turns):
    assert complete(alice, prepare(alice, "gate", "hello")["turnId"], "").status_code == 200


def test_commit_on_accepted_commits_only_at_accept(alice, gate, committed_turns):
    alice.patch("/v1/scenarios/gate", {"commitOn": "accepted"})
    turn = prepare(alice, "gate", "hello")
    body = complete(alice, turn["turnId"], "a reply to review").json()
    assert body["status"] == "completed" and body["committed"] is False
    assert body["memoryWrite"]["status"] == "pending"
    assert events(alice) == [] and committed_turns == []
    assert [m["role"] for m in alice.get(f"{CONV}/messages").json()["results"]] == ["user", "assistant"]
    assert prepare(alice, "gate", "hello")["round"] == 2  # the reply was stored: the round is counted

    accepted = alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {})
    assert accepted.status_code == 200
    assert accepted.json()["status"] == "committed" and accepted.json()["committed"] is True
    assert [e["type"] for e in events(alice)] == ["turn.completed"]
    assert committed_turns == [(turn["turnId"], "committed")]


def test_accept_twice_or_before_complete_is_409(alice, gate, committed_turns):
    alice.patch("/v1/scenarios/gate", {"commitOn": "accepted"})
    turn = prepare(alice, "gate", "hello")
    assert_envelope(alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {}), 409)
    complete(alice, turn["turnId"])
    assert alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {}).status_code == 200
    assert_envelope(alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {}), 409)
    assert len(events(alice)) == 1 and len(committed_turns) == 1


def test_accept_of_a_turn_committed_at_completion_is_409(alice, gate, committed_turns):
    turn = prepare(alice, "gate", "hello")
    complete(alice, turn["turnId"])
    assert_envelope(alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {}), 409)
    assert len(committed_turns) == 1


def test_accept_refuses_a_body_with_fields(alice, gate, committed_turns):
    alice.patch("/v1/scenarios/gate", {"commitOn": "accepted"})
    turn = prepare(alice, "gate", "hello")
    complete(alice, turn["turnId"])
    assert_envelope(alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {"force": True}), 400, "invalid_request")
    assert committed_turns == []


# --- messages and events -------------------------------------------------------------------------------


def test_messages_are_oldest_first_and_cursor_paginated(alice, gate, committed_turns):
    for index in range(3):
        complete(alice, prepare(alice, "gate", f"q{index}")["turnId"], f"a{index}")
    page = alice.get(f"{CONV}/messages?limit=4").json()
    assert [m["content"] for m in page["results"]] == ["q0", "a0", "q1", "a1"] and page["next"]
    rest = alice.get(f"{CONV}/messages?limit=4&cursor={page['next']}").json()
    assert [m["content"] for m in rest["results"]] == ["q2", "a2"] and rest["next"] is None
    assert [m["round"] for m in page["results"] + rest["results"]] == [1, 1, 2, 2, 3, 3]


def test_events_are_oldest_first_cursor_paginated_and_filterable(alice, gate, committed_turns):
    turn_ids = []
    for _ in range(3):
        turn_ids.append(prepare(alice, "gate", "hello")["turnId"])
        complete(alice, turn_ids[-1])
    page = alice.get(f"{CONV}/events?limit=2").json()
    assert [e["turnId"] for e in page["results"]] == turn_ids[:2] and page["next"]
    rest = alice.get(f"{CONV}/events?limit=2&cursor={page['next']}").json()
    assert [e["turnId"] for e in rest["results"]] == turn_ids[2:] and rest["next"] is None
    assert all({"type", "createdAt", "turnId", "details"} <= set(e) for e in page["results"])
    assert [e["details"]["round"] for e in events(alice, type="turn.completed")] == [1, 2, 3]
    assert events(alice, type="diary.written") == []


@pytest.mark.parametrize("query", ["limit=0", "limit=abc", "limit=1000", "cursor=%%%", "cursor=Im5vdCBhbiBpbnQi"])
@pytest.mark.parametrize("what", ["messages", "events"])
def test_bad_paging_parameters_are_400(alice, what, query):
    assert_envelope(alice.get(f"{CONV}/{what}?{query}"), 400, "invalid_request")


def test_lists_of_a_conversation_never_written_are_empty(alice):
    assert alice.get(f"{CONV}/messages").json() == {"results": [], "next": None}
    assert alice.get(f"{CONV}/events").json() == {"results": [], "next": None}


def test_storing_a_regenerated_reply_runs_the_supersede_hooks_in_its_transaction(alice, gate, committed_turns):
    seen = []

    def hook(superseded: int, by: int) -> None:
        # Inside the transaction that stores the new reply: the old turn is already marked superseded.
        seen.append((superseded, by, Turn.objects.get(pk=superseded).status))

    registry.register_supersede_hook("probe", hook)
    first = prepare(alice, "gate", "q1")
    complete(alice, first["turnId"], "a1")
    assert seen == []  # a first reply supersedes nothing
    again = prepare(alice, "gate", "q1", replacesTurnId=first["turnId"])
    complete(alice, again["turnId"], "a1 bis")
    assert seen == [(first["turnId"], again["turnId"], "superseded")]


def test_a_failing_supersede_hook_rolls_the_regenerated_reply_back(alice, gate, committed_turns):
    def hook(superseded: int, by: int) -> None:
        raise RuntimeError("derived state could not be rolled back")

    first = prepare(alice, "gate", "q1")
    complete(alice, first["turnId"], "a1")
    registry.register_supersede_hook("broken", hook)
    again = prepare(alice, "gate", "q1", replacesTurnId=first["turnId"])
    assert_envelope(complete(alice, again["turnId"], "a1 bis"), 500, "internal_error")
    assert Turn.objects.get(pk=first["turnId"]).status == "committed"
    assert Turn.objects.get(pk=again["turnId"]).status == "prepared"
