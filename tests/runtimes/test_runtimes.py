"""Runtimes through HTTP (S3, S4): allowed sources, missing producers, no query for axon, the shadow comparison."""

from __future__ import annotations

import pytest

from memoryhub.clients.errors import UpstreamTimeout
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import RecallRequest, SourceResult
from tests.support.api import assert_envelope
from tests.support.scenarios import agent_ref
from tests.support.turns import prepare

CONV = "/v1/users/u1/conversations/c1"
ALL_VARIABLES = ["jsonMemory", "preferences", "compassMemory", "memoryTable", "hinosMemory"]
ALLOWED = {
    "personalization": {"jsonMemory", "preferences", "compassMemory", "memoryTable"},
    "axon_go": {"compassMemory", "memoryTable"},
    "axon_shadow": {"jsonMemory", "preferences", "compassMemory", "memoryTable"},
}


class Recorder:
    """A producer that records every request it gets and answers from a function of it."""

    def __init__(self, answer=lambda request: f"text for {request.user_message or '<no query>'}"):
        self.requests: list[RecallRequest] = []
        self.answer = answer

    def __call__(self, request: RecallRequest) -> SourceResult:
        self.requests.append(request)
        return SourceResult(text=self.answer(request), status="ok", version=7)


def make_scenario(api, slug: str, runtime: str, variables: list[str], template: str | None = None) -> None:
    body = {
        "id": slug,
        "name": slug,
        "memoryRuntime": runtime,
        "memorySources": [{"id": f"src-{v}", "agentRef": agent_ref(v, f"ref-{v}"), "variable": v} for v in variables],
        "template": template
        if template is not None
        else " | ".join(f"{{{{{v}}}}}" for v in variables) + " || {{userMessage}}",
    }
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()


def by_variable(turn: dict) -> dict[str, dict]:
    return {s["variable"]: s for s in turn["sources"]}


# --- allowed sources per runtime -----------------------------------------------------------------------


@pytest.mark.parametrize("runtime", sorted(ALLOWED))
@pytest.mark.parametrize("variable", ALL_VARIABLES)
def test_each_runtime_accepts_exactly_its_variables(alice, runtime, variable):
    body = {
        "id": "s",
        "name": "s",
        "memoryRuntime": runtime,
        "template": f"{{{{{variable}}}}}",
        "memorySources": [{"id": "a", "agentRef": agent_ref(variable, "r"), "variable": variable}],
    }
    response = alice.post("/v1/scenarios", body)
    if variable in ALLOWED[runtime]:
        assert response.status_code == 201, response.json()
    else:
        fields = assert_envelope(response, 400, "invalid_request")["details"]["fields"]
        assert "memorySources[0].variable" in fields and runtime in fields["memorySources[0].variable"]


@pytest.mark.parametrize("variable", ["jsonMemory", "preferences", "compassMemory", "memoryTable"])
def test_hinos_accepts_its_source_beside_personal_variables(alice, variable):
    body = {
        "id": "h",
        "name": "h",
        "memoryRuntime": "hinos",
        "template": f"{{{{hinosMemory}}}} {{{{{variable}}}}}",
        "memorySources": [
            {"id": "a", "agentRef": "hinos", "variable": "hinosMemory"},
            {"id": "b", "agentRef": agent_ref(variable, "r"), "variable": variable},
        ],
    }
    assert alice.post("/v1/scenarios", body).status_code == 201


# --- producers: missing, failing, what they are given ---------------------------------------------------


def test_a_variable_without_a_producer_yields_empty_text_and_says_so(alice):
    registry.set_producer("memoryTable", None)
    make_scenario(alice, "t", "personalization", ["memoryTable"], "Tables: [{{memoryTable}}] {{userMessage}}")
    turn = prepare(alice, "t", "hi")
    assert turn["variables"] == {"memoryTable": ""}
    assert turn["prompt"] == "Tables: [] hi"
    status = by_variable(turn)["memoryTable"]
    assert status["status"] in ("empty", "unavailable")
    assert "no producer" in status["details"]["reason"]


def test_compass_memory_without_its_producer_yields_empty_text(alice):
    # the diaries app registers compassMemory; the core must still answer when it is absent
    registry.set_producer("compassMemory", None)
    make_scenario(alice, "d", "axon_go", ["compassMemory"])
    source = by_variable(prepare(alice, "d", "what is behind the gate?"))["compassMemory"]
    assert source["status"] != "ok" and "no producer" in source["details"]["reason"]


def test_a_producer_that_crashes_reports_error_on_its_source_and_invents_nothing(alice):
    def broken(request):
        raise ValueError("boom")

    registry.set_producer("memoryTable", broken)
    registry.set_producer("compassMemory", Recorder())
    make_scenario(alice, "t", "personalization", ["memoryTable", "compassMemory"])
    turn = prepare(alice, "t", "what is behind the gate?")
    assert turn["variables"]["memoryTable"] == ""
    assert by_variable(turn)["memoryTable"]["status"] == "error"
    assert "boom" in by_variable(turn)["memoryTable"]["details"]["reason"]
    assert by_variable(turn)["compassMemory"]["status"] == "ok"


def test_a_dependency_that_times_out_fails_the_turn_with_504(alice):
    def slow(request):
        raise UpstreamTimeout("the table service did not answer", service="tables")

    registry.set_producer("memoryTable", slow)
    make_scenario(alice, "t", "personalization", ["memoryTable"])
    assert_envelope(alice.post(f"{CONV}/turns", {"scenarioId": "t", "userMessage": "x"}), 504, "upstream_timeout")
    assert alice.get(f"{CONV}/events").json()["results"] == []


def test_personalization_gives_producers_the_query_and_the_turn_identity(alice):
    recorder = Recorder()
    registry.set_producer("compassMemory", recorder)
    make_scenario(alice, "p", "personalization", ["compassMemory"])
    turn = prepare(alice, "p", "the question", subscriptionCategory="plus")
    (request,) = recorder.requests
    assert request.user_message == "the question"
    assert (request.product.pk, request.user_id, request.conversation_id) == (alice.product.pk, "u1", "c1")
    assert request.scenario.slug == "p" and request.subscription_category == "plus" and request.round == 1
    assert request.source.agent_ref == "ref-compassMemory"
    assert by_variable(turn)["compassMemory"]["version"] == 7


def test_axon_go_recalls_without_the_query(alice):
    compass, table = Recorder(), Recorder()
    registry.set_producer("compassMemory", compass)
    registry.set_producer("memoryTable", table)
    make_scenario(alice, "g", "axon_go", ["compassMemory", "memoryTable"])
    turn = prepare(alice, "g", "a secret question")
    assert [r.user_message for r in compass.requests + table.requests] == ["", ""]
    assert [(r.user_id, r.conversation_id, r.source.id) for r in compass.requests] == [
        ("u1", "c1", "src-compassMemory")
    ]
    assert turn["runtime"] == "axon_go"
    assert turn["variables"] == {"compassMemory": "text for <no query>", "memoryTable": "text for <no query>"}
    assert "a secret question" in turn["prompt"]  # the template's {{userMessage}} still shows it to the model


# --- axon_shadow ---------------------------------------------------------------------------------------


def test_axon_shadow_serves_exactly_what_personalization_serves(alice):
    registry.set_producer("compassMemory", Recorder())
    alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"keyHolder": "guard"}})
    variables = ["jsonMemory", "compassMemory"]
    make_scenario(alice, "plain", "personalization", variables)
    make_scenario(alice, "shadow", "axon_shadow", variables)
    served = prepare(alice, "plain", "who holds the key?")
    shadowed = prepare(alice, "shadow", "who holds the key?")
    assert shadowed["runtime"] == "axon_shadow"
    assert shadowed["prompt"] == served["prompt"]
    assert shadowed["variables"] == served["variables"]
    strip = lambda turn: [{k: v for k, v in s.items() if k != "cached"} for s in turn["sources"]]  # noqa: E731
    assert strip(shadowed) == strip(served)


def test_axon_shadow_records_the_comparison_on_the_turn(alice):
    recorder = Recorder()
    registry.set_producer("compassMemory", recorder)
    alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"keyHolder": "guard"}})
    make_scenario(alice, "shadow", "axon_shadow", ["jsonMemory", "compassMemory"])
    turn = prepare(alice, "shadow", "key?")
    assert sorted(r.user_message for r in recorder.requests) == ["", "key?"]  # served with, axon without the query
    state = alice.get(f"{CONV}/turns/{turn['turnId']}").json()["runtimeState"]
    comparison = state["shadowComparison"]
    assert comparison["differed"] == ["compassMemory", "jsonMemory"]
    assert comparison["servedOnly"] == ["jsonMemory"]
    assert comparison["sizes"]["compassMemory"] == {"served": len("text for key?"), "axon": len("text for <no query>")}
    assert comparison["sizes"]["jsonMemory"]["axon"] is None
    # the shadow recall changes nothing that is served or written
    assert turn["variables"]["compassMemory"] == "text for key?"
    assert alice.get(f"{CONV}/memory").json()["revision"] == 1


def test_axon_shadow_with_identical_recalls_reports_no_difference(alice):
    registry.set_producer("memoryTable", Recorder(lambda request: "| a | b |"))
    make_scenario(alice, "shadow", "axon_shadow", ["memoryTable"])
    turn = prepare(alice, "shadow", "what is behind the gate?")
    comparison = alice.get(f"{CONV}/turns/{turn['turnId']}").json()["runtimeState"]["shadowComparison"]
    assert comparison["differed"] == [] and comparison["servedOnly"] == []


def test_a_personalization_turn_has_no_shadow_state(alice):
    make_scenario(alice, "plain", "personalization", ["jsonMemory"])
    turn = prepare(alice, "plain", "what is behind the gate?")
    assert "shadowComparison" not in alice.get(f"{CONV}/turns/{turn['turnId']}").json()["runtimeState"]


def test_the_turn_detail_of_another_product_is_404(alice, bob):
    make_scenario(alice, "plain", "personalization", ["jsonMemory"])
    turn = prepare(alice, "plain", "what is behind the gate?")
    assert_envelope(bob.get(f"{CONV}/turns/{turn['turnId']}"), 404, "not_found")


@pytest.mark.parametrize("failure", ["redis", "database"])
def test_a_storage_failure_inside_a_producer_is_503_not_a_silent_empty_source(alice, failure):
    import redis.exceptions
    from django.db import OperationalError

    def down(request):
        if failure == "redis":
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")
        raise OperationalError("the database is down")

    registry.set_producer("memoryTable", down)
    make_scenario(alice, "t", "personalization", ["memoryTable"])
    assert_envelope(alice.post(f"{CONV}/turns", {"scenarioId": "t", "userMessage": "x"}), 503, "storage_unavailable")
    from memories.models import Turn

    assert not Turn.objects.filter(product=alice.product).exists()
