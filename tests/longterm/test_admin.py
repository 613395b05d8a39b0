"""The operator console for long-term memories, refusals, indexes and tasks."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import DELETION, LogEntry

from memories.longterm.models import LongTermMemory, LongTermMemoryVersion
from tests.longterm.support import create, memories_url, proposal, search, update_body

pytestmark = pytest.mark.django_db


def test_memory_list_filters_and_detail_show_content_and_version_history(admin_client, alice):
    record = create(alice)
    alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1))
    listing = admin_client.get(
        f"/admin/longterm/longtermmemory/?kind=preference&user_id=u1&product__id__exact={alice.product.pk}"
    )
    assert listing.status_code == 200 and record["id"] in listing.content.decode()
    assert record["id"] not in admin_client.get("/admin/longterm/longtermmemory/?user_id=u2").content.decode()
    row = LongTermMemory.objects.get()
    page = admin_client.get(f"/admin/longterm/longtermmemory/{row.pk}/change/").content.decode()
    assert "v1" in page and "v2" in page and "created" in page and "updated" in page
    assert f"{alice.product.pk}:u1:memory:{record['id']}" in page
    assert 'name="_save"' not in page  # read-only: memories are written by the product, with consent


def test_deleting_from_the_admin_goes_through_the_service(admin_client, alice):
    record = create(alice)
    row = LongTermMemory.objects.get()
    response = admin_client.post(f"/admin/longterm/longtermmemory/{row.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not LongTermMemory.objects.exists()
    deleted = LongTermMemoryVersion.objects.get(action="deleted")
    assert deleted.actor_type == "operator" and deleted.memory_id == record["id"]
    assert search(alice, "中文", "semantic").json()["results"] == []


def test_bulk_delete_action_uses_the_service(admin_client, alice):
    create(alice)
    create(alice)
    pks = list(LongTermMemory.objects.values_list("pk", flat=True))
    response = admin_client.post(
        "/admin/longterm/longtermmemory/",
        {
            "action": "delete_through_service",
            "_selected_action": pks,
        },
        follow=True,
    )
    assert "Deleted 2 memories" in response.content.decode()
    assert LongTermMemoryVersion.objects.filter(action="deleted").count() == 2
    entries = LogEntry.objects.filter(action_flag=DELETION, object_id__in=[str(pk) for pk in pks])
    assert sorted(entries.values_list("change_message", flat=True)) == ["Deleted through the service"] * 2


def test_the_log_of_a_deleted_memory_holds_nothing_of_its_user_so_an_erasure_leaves_none(admin_client, alice):
    """An erasure finds log entries by their rows' ids; a row deleted before it leaves no id to find them by."""
    create(alice)
    create(alice)
    first, second = LongTermMemory.objects.order_by("pk")
    assert admin_client.post(f"/admin/longterm/longtermmemory/{first.pk}/delete/", {"post": "yes"}).status_code == 302
    admin_client.post(
        "/admin/longterm/longtermmemory/", {"action": "delete_through_service", "_selected_action": [second.pk]}
    )
    entries = LogEntry.objects.filter(action_flag=DELETION)
    assert sorted(entries.values_list("object_repr", flat=True)) == [f"long-term memory {first.pk}",
                                                                     f"long-term memory {second.pk}"]  # fmt: skip
    assert alice.delete("/v1/users/u1").status_code in (200, 202)
    assert not [e for e in LogEntry.objects.all() if "u1" in f"{e.object_repr} {e.change_message}"]


def test_refusals_indexes_operations_and_tasks_are_listed_read_only(admin_client, alice):
    alice.post(memories_url(), proposal(consent=False))
    create(alice, proposal(operationId="op-admin"))
    alice.put(
        "/v1/users/u1/tasks/t1/checkpoints/collect", {"data": {"n": 1}, "input": {"p": 1}, "operationId": "cp-admin"}
    )
    alice.put("/v1/users/u1/tasks/t1/report", {"data": {"done": True}})
    refusals = admin_client.get("/admin/longterm/admissionrefusal/?code=no_consent").content.decode()
    assert "no_consent" in refusals
    indexes = admin_client.get("/admin/longterm/embeddingindex/").content.decode()
    assert "active" in indexes and "multilingual-e5-small" in indexes
    assert "op-admin" in admin_client.get("/admin/memories/runoncerecord/?kind=operation").content.decode()
    tasks = admin_client.get("/admin/longterm/task/").content.decode()
    assert "t1" in tasks
    from memories.longterm.models import Task

    detail = admin_client.get(f"/admin/longterm/task/{Task.objects.get().pk}/change/").content.decode()
    assert "collect" in detail and "done" in detail
    assert admin_client.get("/admin/longterm/admissionrefusal/add/").status_code == 403
    assert admin_client.get("/admin/longterm/embeddingindex/add/").status_code == 403


# --- memory kinds, supersession and expiry in the admin -------------------------------------------------------


def kind_form(product, **changes) -> dict:
    import json

    from tests.longterm.kind_support import DIET_KIND

    data = {
        "product": product.pk,
        "name": "diet",
        "description": DIET_KIND["description"],
        "content_schema": json.dumps(DIET_KIND["contentSchema"]),
        "stated_fields": json.dumps(DIET_KIND["statedFields"]),
        "searchable": "on",
        "text_field": "note",
        "max_per_user": "3",
        "default_ttl_days": "30",
        "evidence_policy": "statement",
    }
    data.update(changes)
    return data


def test_an_operator_defines_a_kind_in_the_admin_with_the_apis_rules(admin_client, alice):
    from memories.longterm.models import MemoryKind
    from tests.longterm.kind_support import diet

    bad = admin_client.post("/admin/longterm/memorykind/add/", kind_form(alice.product, content_schema='{"type": 7}'))
    assert bad.status_code == 200 and "invalid JSON Schema" in bad.content.decode()
    reserved = admin_client.post("/admin/longterm/memorykind/add/", kind_form(alice.product, name="preference"))
    assert "built-in kind" in reserved.content.decode()
    response = admin_client.post("/admin/longterm/memorykind/add/", kind_form(alice.product))
    assert response.status_code == 302, response.content.decode()[:2000]
    kind = MemoryKind.objects.get()
    assert kind.single_valued_fields == ["restriction"] and kind.max_per_user == 3
    record = create(alice, diet())  # usable through the API at once
    listing = admin_client.get("/admin/longterm/memorykind/").content.decode()
    assert "diet" in listing and "restriction" in listing
    # In use: no delete button for it here (the API's ?cascade=true is the deliberate way).
    assert admin_client.get(f"/admin/longterm/memorykind/{kind.pk}/delete/").status_code == 403
    changed = admin_client.post(
        f"/admin/longterm/memorykind/{kind.pk}/change/", kind_form(alice.product, description="Diet", searchable="")
    )
    assert "is fixed when a kind is created" in changed.content.decode()
    rows = admin_client.get("/admin/longterm/longtermmemory/?kind=diet").content.decode()
    assert record["id"] in rows and "vegan" in rows


def test_an_operator_sets_a_kinds_evidence_policy_in_the_admin(admin_client, alice):
    from memories.longterm.models import MemoryKind
    from tests.longterm.kind_support import diet

    page = admin_client.get("/admin/longterm/memorykind/add/").content.decode()
    assert 'name="evidence_policy"' in page and 'value="quote"' in page
    bad = admin_client.post("/admin/longterm/memorykind/add/", kind_form(alice.product, evidence_policy="verbatim"))
    assert bad.status_code == 200 and "verbatim is not one of the available choices" in bad.content.decode()
    assert not MemoryKind.objects.exists()
    response = admin_client.post("/admin/longterm/memorykind/add/", kind_form(alice.product, evidence_policy="quote"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert alice.get("/v1/memory-kinds/diet").json()["evidencePolicy"] == "quote"  # saved through the service
    past = "I was vegan for a while last year"
    create(alice, diet(evidence=past, source=f"{past}, it was hard."))  # the statement rules would refuse the past
    kind = MemoryKind.objects.get()
    changed = admin_client.post(f"/admin/longterm/memorykind/{kind.pk}/change/", kind_form(alice.product))
    assert changed.status_code == 302 and alice.get("/v1/memory-kinds/diet").json()["evidencePolicy"] == "statement"
    refused = alice.post(memories_url(), diet(evidence=past, source=f"{past}, it was hard."))
    assert refused.status_code == 422 and refused.json()["error"]["details"]["reason"] == "past"


@pytest.mark.parametrize(
    "field, api_field, value, message",
    [
        ("max_per_user", "maxPerUser", "0", "must be an integer between 1 and 100000"),
        ("max_per_user", "maxPerUser", "100001", "must be an integer between 1 and 100000"),
        ("default_ttl_days", "defaultTtlDays", "0", "must be an integer between 1 and 36500"),
        ("default_ttl_days", "defaultTtlDays", "36501", "must be an integer between 1 and 36500"),
    ],
)
def test_a_kinds_limits_outside_the_apis_bounds_are_refused_by_the_admin(
    admin_client, alice, field, api_field, value, message
):
    from memories.longterm.models import MemoryKind
    from tests.longterm.kind_support import define

    define(alice)  # maxPerUser 3, defaultTtlDays 30
    api = alice.patch("/v1/memory-kinds/diet", {api_field: int(value)})
    assert api.status_code == 400 and message in api.content.decode()
    kind = MemoryKind.objects.get()
    changed = admin_client.post(
        f"/admin/longterm/memorykind/{kind.pk}/change/", kind_form(alice.product, **{field: value})
    )
    assert changed.status_code == 200 and message in changed.content.decode()
    stored = alice.get("/v1/memory-kinds/diet").json()
    assert (stored["maxPerUser"], stored["defaultTtlDays"]) == (3, 30)
    assert not LogEntry.objects.exists()
    added = admin_client.post(
        "/admin/longterm/memorykind/add/", kind_form(alice.product, name="diet2", **{field: value})
    )
    assert added.status_code == 200 and message in added.content.decode()
    assert MemoryKind.objects.count() == 1


def test_a_kinds_limits_at_the_apis_bounds_or_empty_are_saved_by_the_admin(admin_client, alice):
    from memories.longterm.models import MemoryKind
    from tests.longterm.kind_support import define

    define(alice)
    kind = MemoryKind.objects.get()
    url = f"/admin/longterm/memorykind/{kind.pk}/change/"
    assert (
        admin_client.post(url, kind_form(alice.product, max_per_user="1", default_ttl_days="36500")).status_code == 302
    )
    stored = alice.get("/v1/memory-kinds/diet").json()
    assert (stored["maxPerUser"], stored["defaultTtlDays"]) == (1, 36500)
    assert admin_client.post(url, kind_form(alice.product, max_per_user="", default_ttl_days="")).status_code == 302
    stored = alice.get("/v1/memory-kinds/diet").json()
    assert (stored["maxPerUser"], stored["defaultTtlDays"]) == (None, None)


def test_the_memory_list_shows_superseded_and_expired_memories_by_state(admin_client, alice):
    from datetime import timedelta

    from django.utils import timezone

    old = create(alice)
    english = "Please always answer me in English"
    new = create(alice, proposal(content={"language": "en"}, evidence=english, source=english))
    expired = create(alice, user="u2")
    LongTermMemory.objects.filter(memory_id=expired["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    current = admin_client.get("/admin/longterm/longtermmemory/?state=current").content.decode()
    assert new["id"] in current and old["id"] not in current and expired["id"] not in current
    superseded = admin_client.get("/admin/longterm/longtermmemory/?state=superseded").content.decode()
    assert old["id"] in superseded and new["id"] in superseded  # the row and the id that replaced it
    assert expired["id"] in admin_client.get("/admin/longterm/longtermmemory/?state=expired").content.decode()
    row = LongTermMemory.objects.get(memory_id=old["id"])
    page = admin_client.get(f"/admin/longterm/longtermmemory/{row.pk}/change/").content.decode()
    assert "superseded" in page and new["id"] in page
