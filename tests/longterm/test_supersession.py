"""Supersession through HTTP: one current answer per single-valued field; the old memory is kept as history."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memories.longterm.models import LongTermMemory, LongTermMemoryVersion
from tests.longterm.kind_support import VEGETARIAN, define, diet
from tests.longterm.support import PREFERENCE_EN, create, memories_url, proposal, search, update_body
from tests.longterm.test_qdrant_backend import qdrant  # noqa: F401  (the in-process Qdrant fixture)
from tests.support.api import assert_envelope, client_for

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"
ENGLISH = proposal(
    content={"language": "en"},
    evidence="Please always answer me in English",
    source="Please always answer me in English. Thanks!",
)


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def scenario(api) -> None:
    body = {
        "id": "assistant",
        "name": "Assistant",
        "memorySources": [
            {"id": "memories", "agentRef": "longterm", "variable": "preferences", "kinds": ["preference", "diet"]}
        ],
        "template": "{{preferences}}\nUser: {{userMessage}}",
    }
    assert alice_ok(api.post("/v1/scenarios", body))


def alice_ok(response) -> bool:
    assert response.status_code in (200, 201), response.json()
    return True


def prompt(api) -> str:
    response = api.post(f"{CONV}/turns", {"scenarioId": "assistant", "userMessage": "hello there"})
    assert response.status_code == 201, response.json()
    return response.json()["prompt"]


def test_a_contradicting_preference_supersedes_the_current_one(alice):
    define(alice)
    scenario(alice)
    old = create(alice)  # language zh, detail brief
    assert "language: zh" in prompt(alice)  # cached in the working set
    new = create(alice, ENGLISH)
    assert ids(alice.get(memories_url())) == [new["id"]]
    assert ids(alice.get(f"{memories_url()}?include=superseded")) == [new["id"], old["id"]]
    superseded = alice.get(f"{memories_url()}/{old['id']}").json()
    assert superseded["supersededBy"] == new["id"] and superseded["version"] == 2
    assert superseded["supersededAt"].endswith("Z") and superseded["content"] == old["content"]
    history = LongTermMemoryVersion.objects.filter(memory_id=old["id"]).order_by("id")
    assert [(v.version, v.action) for v in history] == [(1, "created"), (2, "superseded")]
    assert ids(search(alice, "中文回答", "keyword")) == []
    assert old["id"] not in ids(search(alice, "请用简洁的中文回复我", "semantic"))
    text = prompt(alice)
    assert "language: en" in text and "language: zh" not in text
    error = assert_envelope(alice.patch(f"{memories_url()}/{old['id']}", update_body(expected=2)), 409)
    assert error["code"] == "memory_superseded" and error["details"]["supersededBy"] == new["id"]
    assert alice.delete(f"{memories_url()}/{old['id']}").status_code == 204  # history may still be deleted


def test_agreeing_or_unrelated_preferences_stay_current(alice):
    first = create(alice)  # zh, brief
    same = create(alice, proposal(content={"language": "zh"}))  # the same answer: no contradiction
    other_user = create(alice, ENGLISH, user="u2")
    assert ids(alice.get(memories_url())) == [same["id"], first["id"]]
    assert ids(alice.get(memories_url("u2"))) == [other_user["id"]]


def test_an_update_that_contradicts_another_memory_supersedes_it(alice):
    zh = create(alice, proposal(content={"language": "zh"}))
    detailed = create(alice, proposal(PREFERENCE_EN, content={"detail": "detailed"}))
    body = update_body(expected=1, content={"language": "en"}, evidence=ENGLISH["evidence"], source=ENGLISH["source"])
    assert alice.patch(f"{memories_url()}/{detailed['id']}", body).status_code == 200
    assert ids(alice.get(memories_url())) == [detailed["id"]]
    assert alice.get(f"{memories_url()}/{zh['id']}").json()["supersededBy"] == detailed["id"]


def test_a_product_kind_marks_its_single_valued_fields(alice):
    define(alice)
    vegan = create(alice, diet())
    vegetarian = create(alice, VEGETARIAN)
    assert ids(alice.get(memories_url())) == [vegetarian["id"]]
    assert alice.get(f"{memories_url()}/{vegan['id']}").json()["supersededBy"] == vegetarian["id"]
    assert ids(search(alice, "vegan", "keyword")) == []
    # A field without "x-single-valued" may hold many answers.
    schema = {"type": "object", "properties": {"dish": {"type": "string"}}}
    define(alice, name="favourite_dish", contentSchema=schema, statedFields=["dish"], textField="dish")
    for dish in ("ramen", "pho"):
        create(
            alice,
            diet(kind="favourite_dish", content={"dish": dish}, evidence=f"I love {dish}", source=f"I love {dish}"),
        )
    assert len(ids(alice.get(f"{memories_url()}?kind=favourite_dish"))) == 2


def test_include_accepts_only_superseded(alice):
    assert_envelope(alice.get(f"{memories_url()}?include=everything"), 400)


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_contradicting_writes_keep_exactly_one_current_answer(alice):
    """PostgreSQL: writers of one user's single-valued field serialise on a lock; exactly one answer stays current."""
    racers = 8
    create(alice, user="warm-up")  # the first write activates the vector index; the race is about the lock
    barrier = threading.Barrier(racers)
    bodies = [create_body(index) for index in range(racers)]
    statuses: list[int] = [0] * racers
    errors: list[BaseException] = []

    def racer(index: int) -> None:
        client = client_for(alice.key)
        try:
            barrier.wait(timeout=30)
            statuses[index] = client.post(memories_url(), bodies[index], format="json").status_code
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and statuses == [201] * racers, (errors, statuses)
    current = LongTermMemory.objects.filter(user_id="u1", superseded_by="")
    assert current.count() == 1
    assert LongTermMemory.objects.filter(user_id="u1").exclude(superseded_by="").count() == racers - 1
    assert len(ids(alice.get(memories_url()))) == 1
    # Each write superseded exactly the one memory current when it took the lock: a chain ending at the current one.
    superseders = [v for v in LongTermMemory.objects.filter(user_id="u1").values_list("superseded_by", flat=True) if v]
    assert len(set(superseders)) == racers - 1 and current.get().memory_id in superseders


LANGUAGES = ["English", "Chinese", "Japanese", "Korean", "French", "German", "Spanish", "Russian"]


def create_body(index: int) -> dict:
    """Eight different answers to `language`: each contradicts every other."""
    evidence = f"Please always answer me in {LANGUAGES[index]}"
    return proposal(content={"language": LANGUAGES[index]}, evidence=evidence, source=evidence + ".")


@pytest.mark.usefixtures("qdrant")
def test_in_qdrant_a_superseded_memory_keeps_its_payload_but_loses_its_vector(alice):
    from memories.longterm.models import EmbeddingIndex
    from memories.longterm.services.vectors import qdrant_client

    old = create(alice)
    new = create(alice, ENGLISH)
    row = LongTermMemory.objects.get(memory_id=old["id"])
    collection = EmbeddingIndex.objects.get(status="active").storage_name
    point = qdrant_client(":memory:").retrieve(collection, ids=[row.pk], with_payload=True, with_vectors=True)[0]
    assert point.payload["supersededBy"] == new["id"] and point.payload["version"] == 2
    assert not point.vector  # never a search hit again
    assert ids(search(alice, "请用简洁的中文回复我", "semantic")) == [new["id"]]
