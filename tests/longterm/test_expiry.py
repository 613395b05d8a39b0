"""Expiry through HTTP: an expired memory leaves listings, search and recall at once; the sweep deletes it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from memories.longterm.models import LongTermMemory, LongTermMemoryVersion
from memories.longterm.tasks import delete_expired_memories
from memoryhub.timefmt import iso
from tests.longterm.kind_support import define, diet
from tests.longterm.support import create, memories_url, proposal, search, update_body
from tests.longterm.test_qdrant_backend import qdrant  # noqa: F401  (the in-process Qdrant fixture)
from tests.support.api import assert_envelope
from tests.support.processes import wait_for

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"


def soon(seconds: float) -> str:
    return iso(timezone.now() + timedelta(seconds=seconds))


def scenario(api, kinds: list[str]) -> None:
    body = {
        "id": "assistant",
        "name": "Assistant",
        "memorySources": [{"id": "memories", "agentRef": "longterm", "variable": "preferences", "kinds": kinds}],
        "template": "Known:\n{{preferences}}\nUser: {{userMessage}}",
    }
    assert api.post("/v1/scenarios", body).status_code == 201


def prompt(api) -> str:
    response = api.post(f"{CONV}/turns", {"scenarioId": "assistant", "userMessage": "What should I cook?"})
    assert response.status_code == 201, response.json()
    return response.json()["prompt"]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def test_expires_at_is_stored_echoed_and_must_be_in_the_future(alice):
    when = soon(3600)
    record = create(alice, proposal(expiresAt=when))
    assert record["expiresAt"] == when.replace("+00:00", "Z") or record["expiresAt"].startswith(when[:19])
    error = assert_envelope(alice.post(memories_url(), proposal(expiresAt=iso(timezone.now()))), 400)
    assert error["details"]["field"] == "expiresAt"
    assert_envelope(alice.post(memories_url(), proposal(expiresAt="tomorrow")), 400)


def test_an_update_keeps_the_expiry_unless_it_names_one_and_null_removes_it(alice):
    when = soon(3600)
    record = create(alice, proposal(expiresAt=when))
    kept = alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1)).json()
    assert kept["expiresAt"] == record["expiresAt"]
    cleared = alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=2, expiresAt=None)).json()
    assert cleared["expiresAt"] is None


def test_a_product_kind_expires_by_its_default_ttl_unless_the_write_names_another_time(alice):
    define(alice, defaultTtlDays=1)
    default = create(alice, diet())
    lifetime = datetime.fromisoformat(default["expiresAt"]) - datetime.fromisoformat(default["createdAt"])
    assert timedelta(hours=23, minutes=59) < lifetime <= timedelta(days=1)
    explicit = create(alice, diet(expiresAt=None), user="u2")
    assert explicit["expiresAt"] is None


def test_an_expired_memory_leaves_listing_get_search_and_cached_recall_at_once(alice):
    """write → search → recall in a turn → expiry, for a product-defined kind (and a preference)."""
    define(alice)
    scenario(alice, ["preference", "diet"])
    lasting = create(alice)
    expiring = create(alice, diet(expiresAt=soon(2.5)))
    assert ids(alice.get(memories_url())) == [expiring["id"], lasting["id"]]
    assert ids(search(alice, "vegan", "keyword")) == [expiring["id"]]
    assert expiring["id"] in ids(search(alice, "food the user avoids: meat, dairy", "semantic"))
    assert "- diet: The user is vegan" in prompt(alice)  # the recall snapshot is now in the working set
    time.sleep(3)
    # No write happened: the cached snapshot still holds the item, and the sweep has not run.
    assert LongTermMemory.objects.filter(memory_id=expiring["id"]).exists()
    assert ids(alice.get(memories_url())) == [lasting["id"]]
    assert ids(alice.get(f"{memories_url()}?include=superseded")) == [lasting["id"]]
    assert_envelope(alice.get(f"{memories_url()}/{expiring['id']}"), 404, "not_found")
    assert ids(search(alice, "vegan", "keyword")) == []
    assert expiring["id"] not in ids(search(alice, "food the user avoids: meat, dairy", "semantic"))
    text = prompt(alice)
    assert "vegan" not in text and "language: zh; detail: brief" in text
    assert_envelope(alice.patch(f"{memories_url()}/{expiring['id']}", update_body(expected=1)), 404, "not_found")


def test_the_sweep_deletes_expired_rows_with_their_versions_and_keeps_the_rest(alice):
    gone = create(alice)
    kept = create(alice, proposal(expiresAt=soon(3600)), user="u2")
    forever = create(alice, user="u3")
    LongTermMemory.objects.filter(memory_id=gone["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert delete_expired_memories(batch_size=1) == 1
    assert not LongTermMemory.objects.filter(memory_id=gone["id"]).exists()
    assert not LongTermMemoryVersion.objects.filter(memory_id=gone["id"]).exists()
    remaining = set(LongTermMemory.objects.values_list("memory_id", flat=True))
    assert remaining == {kept["id"], forever["id"]}
    assert LongTermMemoryVersion.objects.filter(memory_id=kept["id"]).count() == 1
    assert delete_expired_memories() == 0  # idempotent


def test_the_sweep_works_in_batches(alice):
    for user in ("a", "b", "c"):
        create(alice, user=user)
    LongTermMemory.objects.update(expires_at=datetime(2020, 1, 1, tzinfo=UTC))
    assert delete_expired_memories(batch_size=2) == 3
    assert not LongTermMemory.objects.exists()


def test_the_sweep_is_scheduled_by_celery_beat():
    from memoryhub.celery import app

    entries = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "longterm.delete_expired_memories" in entries
    app.loader.import_default_modules()
    assert "longterm.delete_expired_memories" in app.tasks


@pytest.mark.usefixtures("qdrant")
def test_qdrant_search_leaves_out_an_expired_memory(alice):
    define(alice)
    expiring = create(alice, diet(expiresAt=soon(2)))
    lasting = create(alice, diet(content={"restriction": "vegan", "note": "No animal products at all"}), user="u1")
    found = ids(search(alice, "no meat or dairy", "semantic"))
    assert set(found) == {expiring["id"], lasting["id"]}
    time.sleep(2.5)
    assert ids(search(alice, "no meat or dairy", "semantic")) == [lasting["id"]]


@pytest.mark.requires_worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_sweep(alice, celery_worker_process):
    gone = create(alice)
    kept = create(alice, user="u2")
    LongTermMemory.objects.filter(memory_id=gone["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    delete_expired_memories.delay()
    wait_for(
        lambda: not LongTermMemory.objects.filter(memory_id=gone["id"]).exists(),
        timeout=60,
        message="the worker to delete the expired memory",
    )
    assert LongTermMemory.objects.filter(memory_id=kept["id"]).exists()
    assert not LongTermMemoryVersion.objects.filter(memory_id=gone["id"]).exists()
