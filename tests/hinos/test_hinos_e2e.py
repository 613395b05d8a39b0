"""End to end: a hinos scenario whose HINOS_MEMORY_URL is memoryhub's own Hinos server (a live server).

turn → complete → the diary background work runs (inline with Celery eager on the embedded default,
in a real worker on the services run) → the next prepare's `hinosMemory` carries the diary summary.
"""

from __future__ import annotations

import pytest

from diaries.models import DiaryEntry
from memories.hinos.models import HinosClaim
from memories.models import Event, Message, Turn
from tests.support.api import ProductApi
from tests.support.processes import wait_for

CONV = "/v1/users/u1/conversations/c1"
SMALL_DIARY = {"minRounds": 1, "freeRoundsPerDiary": 1}
DIARY_SOURCE = {"id": "diary", "agentRef": "diary-main", "variable": "compassMemory"}
HINOS_SOURCE = {"id": "external-memory", "agentRef": "hinos", "variable": "hinosMemory"}
TEMPLATE = "你是守卫。\nMemory:\n{{hinosMemory}}\nUser: {{userMessage}}"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def background(request, settings) -> None:
    """Background work: inline on the embedded default (Celery eager), a real worker with a broker."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


@pytest.fixture
def memoryhub_as_hinos(live_server, settings, background) -> None:
    settings.HINOS_MEMORY_URL = f"{live_server.url}/hinos"
    settings.HINOS_MEMORY_TIMEOUT_MS = 10000


def make_scenario(api, **body) -> None:
    response = api.post("/v1/scenarios", {"id": "gate", "name": "City gate", **body})
    assert response.status_code == 201, response.json()


def turn(api, user_message: str, reply: str) -> tuple[dict, dict]:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": user_message})
    assert prepared.status_code == 201, prepared.json()
    completed = api.post(f"{CONV}/turns/{prepared.json()['turnId']}/complete", {"assistantMessage": reply})
    assert completed.status_code == 200, completed.json()
    return prepared.json(), completed.json()


def diaries_written(product, count: int) -> None:
    wait_for(
        lambda: Event.objects.filter(product=product, type="diary.written").count() >= count,
        timeout=60,
        message=f"{count} diary(ies)",
    )


def diary_written(product, conversation_id: str = "c1") -> DiaryEntry:
    diaries_written(product, 1)
    return DiaryEntry.objects.get(product=product, conversation_id=conversation_id)


def scoped(api, path: str) -> str:
    """The conversation path under which the memory product stores `api`'s u1/c1 (docs/hinos.md)."""
    return f"/v1/users/{api.product.pk}.u1/conversations/{api.product.pk}.c1{path}"


def next_prepare(api) -> dict:
    response = api.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "那我们出发吧"})
    assert response.status_code == 201, response.json()
    return api.get(f"{CONV}/turns/{response.json()['turnId']}").json()


def test_same_product_the_next_prepare_reflects_the_committed_round(alice, memoryhub_as_hinos, settings):
    settings.HINOS_MEMORY_TOKEN = alice.key
    settings.HINOS_MEMORY_SCOPE = "none"  # a single-tenant deployment: the server adopts the client's own turn
    make_scenario(
        alice, memoryRuntime="hinos", template=TEMPLATE, memorySources=[HINOS_SOURCE, DIARY_SOURCE], diary=SMALL_DIARY
    )
    first, completed = turn(alice, "我答应明天归还铜钥匙", "守卫点头，记下了约定")
    assert first["variables"]["hinosMemory"] == "" and first["sources"][0]["status"] == "empty"
    assert completed["committed"] is True and completed["memoryWrite"] == {"status": "committed"}
    entry = diary_written(alice.product)
    second = next_prepare(alice)
    assert second["variables"]["hinosMemory"] == f"## Diary summaries\nRounds 1-1: {entry.summary}"
    assert f"Memory:\n## Diary summaries\nRounds 1-1: {entry.summary}\nUser: 那我们出发吧" in second["prompt"]
    assert second["runtimeState"]["hinos"]["turn"] == 2
    assert second["runtimeState"]["hinos"]["state_through_round"] == 1
    # memoryhub's pipeline stored the round; its own Hinos server adopted it instead of storing it twice
    assert Message.objects.filter(product=alice.product).count() == 2
    claim = HinosClaim.objects.get(claim_id=first["sources"][0]["details"]["claimId"])
    assert claim.status == "committed" and claim.committed_turn_id == first["turnId"]
    assert not Turn.objects.filter(runtime="hinos-server").exists()


def test_another_product_as_the_hinos_service(alice, bob, memoryhub_as_hinos, settings):
    settings.HINOS_MEMORY_TOKEN = bob.key
    make_scenario(alice, memoryRuntime="hinos", template=TEMPLATE, memorySources=[HINOS_SOURCE])
    make_scenario(
        bob, memoryRuntime="axon_go", template="{{compassMemory}}", memorySources=[DIARY_SOURCE], diary=SMALL_DIARY
    )
    first, completed = turn(alice, "我答应明天归还铜钥匙", "守卫点头，记下了约定")
    assert first["variables"]["hinosMemory"] == ""
    assert completed["memoryWrite"] == {"status": "committed"}
    stored = bob.get(scoped(alice, "/messages")).json()["results"]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "我答应明天归还铜钥匙"),
        ("assistant", "守卫点头，记下了约定"),
    ]
    entry = diary_written(bob.product, f"{alice.product.pk}.c1")
    second = next_prepare(alice)
    assert second["variables"]["hinosMemory"] == f"## Diary summaries\nRounds 1-1: {entry.summary}"
    assert second["runtimeState"]["hinos"]["state_through_round"] == 1
    assert not DiaryEntry.objects.filter(product=alice.product).exists()


def test_two_products_with_the_same_ids_never_share_the_hinos_memory(alice, bob, memoryhub_as_hinos, settings):
    """One deployment-wide HINOS_MEMORY_URL/TOKEN (bob's); alice and carol both run scenario "gate" for u1/c1."""
    settings.HINOS_MEMORY_TOKEN = bob.key
    carol = ProductApi("carol-app")
    for api in (alice, carol):
        make_scenario(api, memoryRuntime="hinos", template=TEMPLATE, memorySources=[HINOS_SOURCE])
    make_scenario(
        bob, memoryRuntime="axon_go", template="{{compassMemory}}", memorySources=[DIARY_SOURCE], diary=SMALL_DIARY
    )
    turn(alice, "我答应明天归还铜钥匙", "守卫点头，记下了约定")
    diaries_written(bob.product, 1)
    # read: carol's prepare for the same scenario, user and conversation gets none of alice's memory
    carol_first, _ = turn(carol, "INJECTED BY CAROL", "carol reply")
    assert carol_first["variables"]["hinosMemory"] == ""
    assert carol_first["sources"][0]["details"]["turn"] == 1
    diaries_written(bob.product, 2)
    # write: carol's committed round is not in alice's memory, and alice's is not in carol's
    alice_next, carol_next = next_prepare(alice), next_prepare(carol)
    assert "铜钥匙" in alice_next["variables"]["hinosMemory"] and "CAROL" not in alice_next["prompt"]
    assert "Rounds 2-2" not in alice_next["prompt"] and alice_next["runtimeState"]["hinos"]["turn"] == 2
    assert "CAROL" in carol_next["variables"]["hinosMemory"] and "铜钥匙" not in carol_next["prompt"]
    for api, said in ((alice, "我答应明天归还铜钥匙"), (carol, "INJECTED BY CAROL")):
        stored = bob.get(scoped(api, "/messages")).json()["results"]
        assert [m["content"] for m in stored if m["role"] == "user"] == [said]
