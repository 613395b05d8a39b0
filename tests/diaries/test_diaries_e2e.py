"""Diaries end to end through the HTTP API: scenario policy → turns → Celery → diary → next prompt."""

from __future__ import annotations

import time

import pytest

from diaries.tasks import diary_plan_task
from memoryhub.celery import app as celery_app
from tests.support.api import assert_envelope
from tests.support.processes import wait_for

CONV = "/v1/users/u1/conversations/c1"
SMALL = {"minRounds": 3, "freeRoundsPerDiary": 2}
SCENARIO = {
    "id": "story",
    "name": "Lighthouse story",
    "memoryRuntime": "axon_go",
    "memorySources": [{"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"}],
    "template": "Diary so far:\n{{compassMemory}}\nUser: {{userMessage}}",
    "diary": SMALL,
}


def _play(api, number: int, **extra) -> dict:
    prepared = api.post(
        f"{CONV}/turns", {"scenarioId": "story", "userMessage": f"Round {number}: is the lamp lit?", **extra}
    )
    assert prepared.status_code == 201, prepared.json()
    turn = prepared.json()
    done = api.post(
        f"{CONV}/turns/{turn['turnId']}/complete",
        {"assistantMessage": f"Round {number}: the keeper relit the lighthouse lamp."},
    )
    assert done.status_code == 200 and done.json()["committed"], done.json()
    return turn


def _events(api, type: str, conv: str = CONV) -> list[dict]:
    return api.get(f"{conv}/events", data={"type": type, "limit": 200}).json()["results"]


def _diaries(api, conv: str = CONV) -> list[dict]:
    return api.get(f"{conv}/diaries").json()["results"]


@pytest.fixture
def in_process_celery(monkeypatch):
    """Run tasks in-process at enqueue time (on commit), whatever broker is configured."""
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)


# ---------------------------------------------------------------- scenario policy


@pytest.mark.django_db
def test_scenario_api_carries_the_normalized_diary_policy(alice, bob) -> None:
    created = alice.post("/v1/scenarios", SCENARIO)
    assert created.status_code == 201, created.json()
    policy = alice.get("/v1/scenarios/story").json()["diary"]
    assert policy == {
        "enabled": True,
        "minRounds": 3,
        "freeRoundsPerDiary": 2,
        "paidRoundsPerDiary": None,
        "freeDiaryQuota": {"perDays": 1, "count": None},
    }
    patched = alice.patch("/v1/scenarios/story", {"diary": {**SMALL, "freeDiaryQuota": {"count": 1}}})
    assert patched.json()["diary"]["freeDiaryQuota"] == {"perDays": 1, "count": 1}
    assert_envelope(bob.get("/v1/scenarios/story"), 404, "not_found")


@pytest.mark.django_db
def test_an_invalid_diary_policy_is_400_naming_the_field_and_stores_nothing(alice) -> None:
    bad = {**SCENARIO, "diary": {"minRounds": 0, "freeRoundsPerDiary": "10", "freeDiaryQuota": {"perDays": 0}}}
    error = assert_envelope(alice.post("/v1/scenarios", bad), 400)
    assert set(error["details"]["fields"]) == {
        "diary.minRounds",
        "diary.freeRoundsPerDiary",
        "diary.freeDiaryQuota.perDays",
    }
    assert_envelope(alice.get("/v1/scenarios/story"), 404)


# ---------------------------------------------------------------- in-process Celery (both CI runs)


@pytest.mark.django_db(transaction=True)
def test_threshold_flow_in_process(alice, bob, in_process_celery) -> None:
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    for number in (1, 2):
        first = _play(alice, number)
    assert first["variables"]["compassMemory"] == "" and "compassMemory" in first["referencedVariables"]
    assert _diaries(alice) == []
    assert [e["details"]["reason"] for e in _events(alice, "diary.skipped")] == [
        "round 1 < minRounds 3",
        "round 2 < minRounds 3",
    ]
    _play(alice, 3)
    [diary] = _diaries(alice)
    assert (diary["roundFrom"], diary["roundTo"], diary["kind"]) == (1, 3, "summary_and_diary")
    assert [e["details"]["kind"] for e in _events(alice, "diary.written")] == ["summary_and_diary"]
    fourth = _play(alice, 4)
    assert diary["summary"] in fourth["prompt"]
    assert fourth["variables"]["compassMemory"] == f"Rounds 1-3: {diary['summary']}"
    assert len(_diaries(alice)) == 1
    assert bob.get(f"{CONV}/diaries").json() == {"results": [], "next": None}
    assert _events(bob, "diary.written") == []


@pytest.mark.django_db(transaction=True)
def test_a_template_without_compass_memory_keeps_the_summary_out_of_the_prompt(alice, in_process_celery) -> None:
    scenario = {**SCENARIO, "template": "User: {{userMessage}}"}
    assert alice.post("/v1/scenarios", scenario).status_code == 201
    for number in (1, 2, 3):
        _play(alice, number)
    [diary] = _diaries(alice)
    fourth = _play(alice, 4)
    assert fourth["unreferencedVariables"] == ["compassMemory"]
    assert diary["summary"] not in fourth["prompt"]  # retrieved is not seen


@pytest.mark.django_db(transaction=True)
def test_commit_on_accept_plans_only_after_the_accept(alice, in_process_celery) -> None:
    assert (
        alice.post("/v1/scenarios", {**SCENARIO, "commitOn": "accepted", "diary": {"minRounds": 1}}).status_code == 201
    )
    turn = alice.post(f"{CONV}/turns", {"scenarioId": "story", "userMessage": "hello"}).json()
    alice.post(f"{CONV}/turns/{turn['turnId']}/complete", {"assistantMessage": "hi there"})
    assert _diaries(alice) == [] and _events(alice, "diary.skipped") == []
    assert alice.post(f"{CONV}/turns/{turn['turnId']}/accept", {}).json()["committed"] is True
    assert [d["roundTo"] for d in _diaries(alice)] == [1]


@pytest.mark.django_db(transaction=True)
def test_recall_counts_per_category_with_six_diaries(alice, in_process_celery) -> None:
    every_round = {"minRounds": 1, "freeRoundsPerDiary": 1}
    assert alice.post("/v1/scenarios", {**SCENARIO, "diary": every_round}).status_code == 201
    for number in range(1, 7):
        _play(alice, number)
    assert len(_diaries(alice)) == 6
    for category, count in [(None, 1), ("default", 1), ("plus", 2), ("ultra", 3), ("max", 5)]:
        extra = {"subscriptionCategory": category} if category else {}
        prepared = alice.post(f"{CONV}/turns", {"scenarioId": "story", "userMessage": "recall", **extra}).json()
        lines = prepared["variables"]["compassMemory"].splitlines()  # a summary may span lines
        assert [line.split(":")[0] for line in lines if line.startswith("Rounds ")] == [
            f"Rounds {n}-{n}" for n in range(7 - count, 7)
        ], category


# ---------------------------------------------------------------- the real Celery worker (services run)


@pytest.mark.requires_worker
@pytest.mark.django_db(transaction=True)
def test_threshold_flow_through_the_real_worker(alice, celery_worker_process) -> None:
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    for number in (1, 2):
        _play(alice, number)
    skipped = wait_for(
        lambda: len(_events(alice, "diary.skipped")) == 2 and _events(alice, "diary.skipped"),
        message="two diary.skipped events",
    )
    assert {e["details"]["round"] for e in skipped} == {1, 2}
    assert _diaries(alice) == []
    third = _play(alice, 3)
    [diary] = wait_for(lambda: _diaries(alice), message="the threshold diary")
    assert (diary["roundFrom"], diary["roundTo"], diary["summarizer"]) == (1, 3, "extractive")
    # Redelivery: the same turn's task twice more writes nothing new.
    diary_plan_task.delay(third["turnId"])
    diary_plan_task.delay(third["turnId"])
    fourth = _play(alice, 4)
    assert fourth["variables"]["compassMemory"] == f"Rounds 1-3: {diary['summary']}"
    assert diary["summary"] in fourth["prompt"]
    wait_for(lambda: len(_events(alice, "diary.skipped")) == 3, message="round 4's diary.skipped")
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # the redelivered tasks have had time to run
        assert len(_diaries(alice)) == 1 and len(_events(alice, "diary.written")) == 1
        time.sleep(0.2)
