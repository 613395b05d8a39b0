"""The edge plan (memoryhub/api/plan.py): what a memory PUT and a turn prepare need before their view runs,
planned once from validated input, carried in one object the rate limiter fills and the view reads."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.exceptions import AuthenticationFailed, ParseError, ValidationError
from rest_framework.test import APIRequestFactory

from memories.api.documents import MemoryDocumentView
from memories.api.turns import PrepareInput, TurnPrepareView
from memories.services.conversations import conversation_scope
from memories.services.documents import CheckedReplacement, json_memory_scope
from memories.services.scenarios import scenario_scope
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.api.authentication import ProductClient
from memoryhub.api.parsers import StrictJSONParser
from memoryhub.api.plan import Admission, EdgePlan, PlannedRequest, make_plan, plan_of
from memoryhub.api.throttling import PerKeyRateThrottle
from memoryhub.errors import DomainError
from tests.support.turns import prepare

URL = {"user_id": "u1", "conversation_id": "c1"}
CONV = "/v1/users/u1/conversations/c1"
GATE = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


def planned_request(api, method: str, path: str, body: object = None, **kwargs) -> PlannedRequest:
    """A request as PlannedView.initial holds it after authentication: the product's key is its caller."""
    factory = APIRequestFactory()
    django_request = getattr(factory, method.lower())(path, body, format="json", **kwargs)
    request = PlannedRequest(django_request, parsers=[StrictJSONParser()])
    request.user = ProductClient(api.product, "api_key", "test")
    return request


def plan_put(api, body: object, **kwargs) -> EdgePlan:
    request = planned_request(api, "PUT", f"{CONV}/memory", body, **kwargs)
    return make_plan(MemoryDocumentView.planner, request, URL)


def test_a_valid_put_is_checked_once_and_plans_the_tombstone_of_its_entry(alice):
    plan = plan_put(alice, {"expectedRevision": 0, "memory": {"scene": "城门"}})
    checked = plan.validated()
    assert isinstance(checked, CheckedReplacement)
    address = ConversationAddress(alice.product, "u1", "c1")
    assert checked.address == address and checked.expected_revision == 0
    assert plan.tombstones == (json_memory_scope(address),) and plan.prefetch == ()
    assert plan.refusal is None and not plan.refused_before_counting
    assert plan.client is not None and plan.client.product == alice.product


@pytest.mark.parametrize(
    ("body", "refusal"),
    [
        ({"expectedRevision": 0}, ValidationError),  # the serializer refuses it
        ({"expectedRevision": 0, "memory": "not an object"}, DomainError),  # the write's own check refuses it
    ],
)
def test_invalid_input_plans_no_cache_work_and_is_refused_by_the_view_after_counting(alice, body, refusal):
    plan = plan_put(alice, body)
    assert isinstance(plan.refusal, refusal)
    assert plan.tombstones == () and plan.prefetch == ()
    assert not plan.refused_before_counting  # the rate limiter counts it; the view raises it
    with pytest.raises(refusal):
        plan.validated()


def test_a_body_that_is_not_json_is_refused_before_it_counts(alice):
    factory = APIRequestFactory()
    django_request = factory.put(f"{CONV}/memory", "{not json", content_type="application/json")
    request = PlannedRequest(django_request, parsers=[StrictJSONParser()])
    request.user = ProductClient(alice.product, "api_key", "test")
    plan = make_plan(MemoryDocumentView.planner, request, URL)
    assert isinstance(plan.refusal, ParseError) and plan.refused_before_counting


def test_a_method_without_a_planner_carries_only_its_client(alice):
    request = planned_request(alice, "GET", f"{CONV}/memory")
    plan = make_plan(MemoryDocumentView.planner, request, URL)
    assert (plan.input, plan.refusal, plan.prefetch, plan.tombstones) == (None, None, (), ())
    assert plan.client == request.user


def test_a_prepare_plans_its_validated_request_and_the_entries_it_will_read(alice):
    assert alice.post("/v1/scenarios", GATE).status_code == 201
    body = {"scenarioId": "gate", "userMessage": "hi", "name": "Mira"}
    address = ConversationAddress(alice.product, "u1", "c1")
    first = make_plan(TurnPrepareView.planner, planned_request(alice, "POST", f"{CONV}/turns", body), URL)
    prepared = first.validated()
    assert isinstance(prepared, PrepareInput) and prepared.address == address
    turn_request = prepared.request
    assert (turn_request.scenario_slug, turn_request.user_message, turn_request.name) == ("gate", "hi", "Mira")
    known = (scenario_scope(alice.product.pk, "gate"), conversation_scope(alice.product.pk, "u1", "c1"))
    assert first.prefetch == known  # the scenario is not known yet: its sources' entries are not predicted
    assert prepared.scopes == (address, "gate", list(known))  # handed to turn_prepare, not computed twice
    prepare(alice, "gate", "hi")  # the scenario is seen: its sources' entries are predicted from it
    again = make_plan(TurnPrepareView.planner, planned_request(alice, "POST", f"{CONV}/turns", body), URL)
    assert again.prefetch == (*known, json_memory_scope(address))


def test_a_prepare_with_an_invalid_body_prefetches_nothing(alice):
    request = planned_request(alice, "POST", f"{CONV}/turns", {"scenarioId": "gate"})
    plan = make_plan(TurnPrepareView.planner, request, URL)
    assert isinstance(plan.refusal, ValidationError) and plan.prefetch == ()


def test_a_scenario_id_that_is_no_identifier_is_planned_without_prefetch(alice):
    request = planned_request(alice, "POST", f"{CONV}/turns", {"scenarioId": "no such id", "userMessage": "hi"})
    plan = make_plan(TurnPrepareView.planner, request, URL)
    assert plan.validated().request.scenario_slug == "no such id" and plan.prefetch == ()


def test_the_rate_limiter_records_its_decision_in_the_plan(alice, monkeypatch):
    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "1/min"})
    for expected in (None, "refused"):
        request = planned_request(alice, "PUT", f"{CONV}/memory", {"expectedRevision": 0, "memory": {}})
        request.plan = make_plan(MemoryDocumentView.planner, request, URL)
        throttle = PerKeyRateThrottle()
        allowed = throttle.allow_request(request, None)
        assert plan_of(request) is request.plan
        if expected is None:
            assert allowed and request.plan.admission.wait is None
        else:
            assert not allowed and request.plan.admission.wait == throttle.wait() and throttle.wait() >= 1


@pytest.mark.requires_redis
def test_on_redis_the_plans_cache_work_rides_in_the_limiters_round_trip(alice):
    address = ConversationAddress(alice.product, "u1", "c1")
    entry, rounds = json_memory_scope(address), conversation_scope(alice.product.pk, "u1", "c1")
    cache.set(entry.key, {"cached": "value"})
    cache.set(rounds.key, {"rounds": 3})
    request = planned_request(alice, "PUT", f"{CONV}/memory", {"expectedRevision": 0, "memory": {}})
    request.plan = plan = make_plan(MemoryDocumentView.planner, request, URL)
    plan.prefetch = (rounds,)
    assert PerKeyRateThrottle().allow_request(request, None)
    assert plan.admission.invalidated == (entry.key,) and plan.admission.prefetched == {rounds.key: {"rounds": 3}}
    value, cached = working_set.get_or_build(entry, lambda: "rebuilt")
    assert (value, cached) == ("rebuilt", False)  # the tombstone was written in that round trip


def test_a_request_outside_a_planned_view_has_no_plan(alice):
    from rest_framework.request import Request

    assert plan_of(Request(APIRequestFactory().get("/"))) is None
    assert plan_of(object()) is None


def _snapshot_plan(alice, confirm) -> tuple[EdgePlan, PlannedRequest]:
    request = planned_request(alice, "PUT", f"{CONV}/memory", {"expectedRevision": 0, "memory": {}})
    request.user = ProductClient(alice.product, "api_key", "test", key_snapshot="snapshot", confirm=confirm)
    plan = make_plan(MemoryDocumentView.planner, request, URL)
    plan.admission = Admission(None, {"k": 1}, ("k",))
    return plan, request


def test_confirming_a_key_that_changed_drops_what_was_planned_for_it(alice):
    calls = []
    fresh = ProductClient(alice.product, "api_key", "test")

    def confirm(request):
        calls.append(request.user.confirm)
        return fresh, True

    plan, request = _snapshot_plan(alice, confirm)
    assert plan.confirm_key(request) is True
    assert calls == [None]  # the caller is marked confirmed before the lookup: once per request
    assert plan.client is fresh and request.user is fresh
    assert (plan.input, plan.tombstones, plan.admission.invalidated, dict(plan.admission.prefetched)) == (
        None,
        (),
        (),
        {},
    )
    assert plan.confirm_key(request) is False  # confirmed already: no second lookup
    assert len(calls) == 1


def test_confirming_a_key_that_is_unchanged_keeps_the_plan(alice):
    fresh = ProductClient(alice.product, "api_key", "test")
    plan, request = _snapshot_plan(alice, lambda request: (fresh, False))
    planned = plan.validated()
    assert plan.confirm_key(request) is False
    assert plan.validated() is planned and plan.admission.invalidated == ("k",) and plan.client is fresh


def test_confirming_a_revoked_key_leaves_no_caller(alice):
    def confirm(request):
        raise AuthenticationFailed("unknown or revoked API key")

    plan, request = _snapshot_plan(alice, confirm)
    with pytest.raises(AuthenticationFailed):
        plan.confirm_key(request)
    assert plan.client is None and request.user is None


def test_a_planned_view_tells_its_authenticator_which_writes_check_the_key():
    factory = APIRequestFactory()
    for method, checked in (("put", True), ("get", False)):
        view = MemoryDocumentView()
        view.args, view.kwargs = (), dict(URL)
        request = view.initialize_request(getattr(factory, method)(f"{CONV}/memory"))
        assert isinstance(request, PlannedRequest) and request.plan is None
        assert [a.key_checked_by_write for a in request.authenticators] == [checked]
    prepare_view = TurnPrepareView()
    prepare_view.args, prepare_view.kwargs = (), dict(URL)
    request = prepare_view.initialize_request(factory.post(f"{CONV}/turns"))
    assert [a.key_checked_by_write for a in request.authenticators] == [False]
