"""The working set (C1–C3): prepares are served from the cache, never older than the last successful write."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.core.cache import cache

from memories.selectors.documents import memory_document_get
from memories.services import documents as documents_service
from memories.services import turns as turns_service
from memories.services.documents import json_memory_scope, memory_document_replace
from memoryhub import working_set
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from tests.support.api import assert_envelope, client_for
from tests.support.cache_trips import redis_trips
from tests.support.turns import prepare

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


@pytest.fixture
def gate(alice) -> None:
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201


def json_source(turn: dict) -> dict:
    return turn["sources"][0]


def write(api, revision: int, memory: dict, conv: str = CONV) -> None:
    response = api.put(f"{conv}/memory", {"expectedRevision": revision, "memory": memory})
    assert response.status_code == 200, response.json()


def test_repeated_prepares_are_served_from_the_cache(alice, gate):
    write(alice, 0, {"v": 1})
    cache.clear()
    first, second = prepare(alice, "gate", "hi"), prepare(alice, "gate", "hi")
    assert json_source(first)["cached"] is False and json_source(second)["cached"] is True
    assert second["prompt"] == first["prompt"] == 'Memory: {"v":1}\nUser: hi'
    assert json_source(second)["revision"] == 1


def test_a_prepare_after_a_write_never_sees_older_data(alice, gate):
    prepare(alice, "gate", "hi")
    assert json_source(prepare(alice, "gate", "hi"))["cached"] is True
    for revision in range(0, 4):
        write(alice, revision, {"v": revision + 1})
        for _ in range(2):  # within the invalidation window every prepare reads the database
            turn = prepare(alice, "gate", "hi")
            assert json_source(turn)["cached"] is False
            assert json_source(turn)["revision"] == revision + 1
            assert f'{{"v":{revision + 1}}}' in turn["prompt"]


def test_a_write_through_the_model_tool_invalidates_too(alice, gate):
    prepare(alice, "gate", "hi"), prepare(alice, "gate", "hi")
    token = alice.post(f"{CONV}/tool-tokens", {}).json()["token"]
    client = client_for(token)
    body = {"name": "update_memory", "arguments": {"expectedRevision": 0, "memory": {"by": "model"}}}
    assert client.post("/v1/tools/call", body, format="json").status_code == 200
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is False and '{"by":"model"}' in turn["prompt"]


def test_a_write_refused_by_policy_keeps_the_cached_value(alice, gate):
    prepare(alice, "gate", "hi")
    alice.product.memory_schema = {"type": "object", "required": ["scene"]}
    alice.product.save()
    assert_envelope(alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"v": 2}}), 422, "rejected_by_policy")
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is True and turn["prompt"] == "Memory: \nUser: hi"


def test_a_conflicting_write_changes_nothing_the_model_sees(alice, gate):
    # The CAS write invalidates before it runs (so a cache outage fails it before anything is written);
    # a conflict therefore costs one rebuild from the database, never a wrong prompt.
    prepare(alice, "gate", "hi")
    assert_envelope(alice.put(f"{CONV}/memory", {"expectedRevision": 3, "memory": {"v": 2}}), 409, "revision_conflict")
    turn = prepare(alice, "gate", "hi")
    assert turn["prompt"] == "Memory: \nUser: hi" and json_source(turn)["revision"] == 0


def test_entries_are_per_conversation(alice, gate):
    prepare(alice, "gate", "hi")
    write(alice, 0, {"other": True}, conv="/v1/users/u1/conversations/c2")
    write(alice, 0, {"other": True}, conv="/v1/users/u2/conversations/c1")
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is True and turn["prompt"] == "Memory: \nUser: hi"


def test_entries_are_per_product(alice, bob, gate):
    write(alice, 0, {"owner": "alice"})
    prepare(alice, "gate", "hi")
    assert bob.post("/v1/scenarios", SCENARIO).status_code == 201
    turn = prepare(bob, "gate", "hi")
    assert json_source(turn)["cached"] is False and turn["prompt"] == "Memory: \nUser: hi"


def test_on_a_miss_the_entry_is_rebuilt_from_the_database(alice, gate):
    write(alice, 0, {"v": 1})
    prepare(alice, "gate", "hi"), prepare(alice, "gate", "hi")
    cache.clear()
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is False and json_source(turn)["revision"] == 1
    assert '{"v":1}' in turn["prompt"]
    assert json_source(prepare(alice, "gate", "hi"))["cached"] is True


def test_the_cache_holds_what_the_database_holds(alice, gate):
    write(alice, 0, {"v": 1})
    cache.clear()
    prepare(alice, "gate", "hi")
    address = ConversationAddress(alice.product, "u1", "c1")
    assert cache.get(json_memory_scope(address).key) == memory_document_get(address) == (1, {"v": 1})


def test_caching_resumes_once_the_invalidation_marker_expires(alice, gate, monkeypatch):
    monkeypatch.setattr(working_set, "TOMBSTONE_SECONDS", 1)
    write(alice, 0, {"v": 1})
    time.sleep(1.1)
    assert json_source(prepare(alice, "gate", "hi"))["cached"] is False
    assert json_source(prepare(alice, "gate", "hi"))["cached"] is True


def test_a_reader_that_loaded_before_a_write_cannot_put_its_stale_value_back(alice, gate):
    """The race C2 is about: a slow reader's database load, then a write commits, then the reader stores."""
    address = ConversationAddress(alice.product, "u1", "c1")
    memory_document_replace(address=address, expected_revision=0, memory={"v": 1}, actor=Actor("api_key", "t"))
    cache.clear()

    def slow_build():
        stale = memory_document_get(address)
        memory_document_replace(address=address, expected_revision=1, memory={"v": 2}, actor=Actor("api_key", "t"))
        return stale

    value, was_cached = working_set.get_or_build(json_memory_scope(address), slow_build)
    assert value == (1, {"v": 1}) and was_cached is False
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["revision"] == 2 and '{"v":2}' in turn["prompt"]


# --- the scenario is part of the working set too: every scenario write reaches the next prepare ---------


def warm(api) -> None:
    """Drop the invalidation markers of the setup, then prepare so that the scenario is cached."""
    cache.clear()
    prepare(api, "gate", "hi")
    from memories.services.scenarios import scenario_scope

    assert cache.get(scenario_scope(api.product.pk, "gate").key).slug == "gate"


def test_a_scenario_change_reaches_the_next_prepare(alice, gate):
    warm(alice)
    patched = alice.patch("/v1/scenarios/gate", {"template": "M={{jsonMemory}} U={{userMessage}}"})
    assert patched.status_code == 200
    turn = prepare(alice, "gate", "hi")
    assert turn["prompt"] == "M= U=hi" and turn["scenarioVersion"] == 2
    replaced = {**SCENARIO, "memorySources": [], "template": "only {{userMessage}}"}
    assert alice.put("/v1/scenarios/gate", replaced).status_code == 200
    turn = prepare(alice, "gate", "hi")
    assert turn["prompt"] == "only hi" and turn["sources"] == [] and turn["scenarioVersion"] == 3


def test_a_deleted_scenario_is_gone_for_the_next_prepare(alice, gate):
    warm(alice)
    assert alice.delete("/v1/scenarios/gate").status_code == 204
    assert_envelope(alice.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "hi"}), 404, "not_found")
    assert alice.post("/v1/scenarios", {**SCENARIO, "template": "new {{userMessage}}"}).status_code == 201
    assert prepare(alice, "gate", "hi")["prompt"] == "new hi"


def test_a_scenario_deleted_outside_the_api_is_gone_too(alice, gate):
    """The admin's delete and a product's cascade do not call the scenario service."""
    from memories.models import Scenario

    warm(alice)
    Scenario.objects.filter(product=alice.product, slug="gate").delete()
    assert_envelope(alice.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "hi"}), 404, "not_found")


def test_the_same_scenario_id_in_two_products_is_two_entries(alice, bob, gate):
    warm(alice)
    assert bob.post("/v1/scenarios", {**SCENARIO, "template": "bob {{userMessage}}"}).status_code == 201
    assert prepare(bob, "gate", "hi")["prompt"] == "bob hi"
    assert prepare(alice, "gate", "hi")["prompt"] == "Memory: \nUser: hi"


def test_a_warm_prepare_reads_nothing_from_the_database_but_the_key(alice, gate):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    prepare(alice, "gate", "hi")
    alice.post(f"{CONV}/turns/{prepare(alice, 'gate', 'hi')['turnId']}/complete", {"assistantMessage": "ok"})
    prepare(alice, "gate", "hi")  # rebuilds the round counter after the completion
    time.sleep(working_set.TOMBSTONE_SECONDS + 0.1)
    prepare(alice, "gate", "hi")  # warms the entries again once the invalidation has expired
    with CaptureQueriesContext(connection) as queries:
        turn = prepare(alice, "gate", "hi")
    statements = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    assert turn["round"] == 2 and json_source(turn)["cached"] is True
    # the API key lookup and the turn record: the round counter, scenario and sources come from the working set
    assert statements.count("SELECT") == 1 and statements.count("INSERT") == 1, queries.captured_queries


def test_a_warm_prepare_reads_the_working_set_in_one_round_trip(alice, gate, monkeypatch):
    prepare(alice, "gate", "hi")
    time.sleep(working_set.TOMBSTONE_SECONDS + 0.1)
    prepare(alice, "gate", "hi")  # everything cached now
    reads = count_reads(monkeypatch)
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is True
    # Scenario, round counter and (as this process last saw the scenario) every source's entry in one MGET;
    # on Redis that MGET rides in the rate limiter's pipeline, so the prepare itself reads nothing more.
    on_redis = "Redis" in settings.CACHES["default"]["BACKEND"]
    assert reads == ([] if on_redis else ["get_many 3"]), reads
    # A process that has not seen the scenario yet (or saw it before a change) reads the sources it did not
    # predict in a second MGET, and only those.
    monkeypatch.setattr(turns_service, "_seen_scenarios", {})
    reads.clear()
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is True
    assert reads == (["get_many 1"] if on_redis else ["get_many 2", "get_many 1"]), reads


@pytest.mark.requires_redis
def test_on_redis_a_warm_prepare_makes_one_cache_round_trip(alice, gate, monkeypatch):
    prepare(alice, "gate", "hi")
    time.sleep(working_set.TOMBSTONE_SECONDS + 0.1)
    prepare(alice, "gate", "hi")
    trips = redis_trips(monkeypatch)
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is True
    # the rate limiter's counters (the key's, then the product's) and every entry the prepare reads
    assert trips == ["pipeline INCRBY EXPIRE GET INCRBY EXPIRE GET MGET"], trips


@pytest.mark.requires_redis
def test_on_redis_a_memory_put_invalidates_in_the_rate_limiters_round_trip(alice, gate, monkeypatch):
    prepare(alice, "gate", "hi"), prepare(alice, "gate", "hi")
    trips = redis_trips(monkeypatch)
    write(alice, 0, {"v": 1})
    # the counters (key, product) and the entry's tombstone, before the compare-and-set; the write sends nothing more
    assert trips == ["pipeline INCRBY EXPIRE GET INCRBY EXPIRE GET SET"], trips
    turn = prepare(alice, "gate", "hi")
    assert json_source(turn)["cached"] is False and '{"v":1}' in turn["prompt"]


@pytest.mark.requires_redis
def test_on_redis_a_refused_put_writes_no_tombstone(alice, gate, monkeypatch):
    prepare(alice, "gate", "hi"), prepare(alice, "gate", "hi")
    trips = redis_trips(monkeypatch)
    assert_envelope(alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"v": 1}, "x": 1}), 400)
    nested: object = 1
    for _ in range(40):
        nested = [nested]
    too_deep = {"expectedRevision": 0, "memory": {"a": nested}}
    assert_envelope(alice.put(f"{CONV}/memory", too_deep), 400, "invalid_memory")
    assert trips == ["pipeline INCRBY EXPIRE GET INCRBY EXPIRE GET"] * 2, trips
    assert json_source(prepare(alice, "gate", "hi"))["cached"] is True


def test_a_memory_put_checks_its_body_once(alice, monkeypatch):
    # the PUT's plan checks the body before the limiter's round trip; the write reuses that check
    checks: list[object] = []
    validate = documents_service.validate_memory

    def counting_validate(memory):
        checks.append(memory)
        return validate(memory)

    monkeypatch.setattr(documents_service, "validate_memory", counting_validate)
    write(alice, 0, {"v": 1})
    assert checks == [{"v": 1}]
    assert_envelope(alice.put(f"{CONV}/memory", {"expectedRevision": 1, "memory": {"v": [[[1]]]}, "x": 1}), 400)
    assert checks == [{"v": 1}]  # a body the serializer refuses is never checked, not even once
    assert memory_document_get(ConversationAddress(alice.product, "u1", "c1")) == (1, {"v": 1})


def test_an_invalidation_sent_ahead_is_skipped_once(alice):
    address = ConversationAddress(alice.product, "u1", "c1")
    scope = json_memory_scope(address)
    sets: list[str] = []
    set_one = cache.set

    def counting_set(key, *args, **kwargs):
        sets.append(key)
        return set_one(key, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache, "set", counting_set)
        with working_set.invalidated_ahead([scope.key]):
            working_set.invalidate(scope)  # its tombstone went with the limiter's counter
            assert sets == []
            working_set.invalidate(scope)  # a second write in the same request invalidates again
            assert sets == [scope.key]
        working_set.invalidate(scope)
        assert sets == [scope.key] * 2


def count_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    get, get_many = cache.get, cache.get_many
    inside_many = []  # the local-memory cache implements get_many with get: count only the outer call

    def counting_get(key, *args, **kwargs):
        if key.startswith("ws:") and not inside_many:
            reads.append(f"get {key}")
        return get(key, *args, **kwargs)

    def counting_get_many(keys, *args, **kwargs):
        reads.append(f"get_many {len(keys)}")
        inside_many.append(True)
        try:
            return get_many(keys, *args, **kwargs)
        finally:
            inside_many.pop()

    monkeypatch.setattr(cache, "get", counting_get)
    monkeypatch.setattr(cache, "get_many", counting_get_many)
    return reads
