"""Operator actions: re-run a failed job, re-send a failed Hinos commit, revoke a key — confirmed, audited."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from memories.console.dashboard import dashboard_build
from memories.console.services import RERUN_EVENT
from memories.models import ApiKey, Event, Turn
from memoryhub import turn_jobs
from memoryhub.outbox.models import OutboxMessage
from tables.models import TableEditRecord
from tests.browser.support import failed_job_turn, jobs_in_process, seed_product
from tests.hinos.support import COMMIT, PREPARE, PREPARED
from tests.support.api import client_for
from tests.support.http_server import Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(django_capture_on_commit_callbacks):
    with jobs_in_process(), django_capture_on_commit_callbacks(execute=True):
        return seed_product()


def audit_messages(obj) -> list[str]:
    return list(LogEntry.objects.filter(object_id=str(obj.pk)).values_list("change_message", flat=True))


def test_rerun_of_a_failed_diary_job_asks_first_then_runs_it_once_through_the_outbox(
    admin_client, seeded, django_capture_on_commit_callbacks
):
    turn = failed_job_turn(seeded, "diaries")
    url = reverse("console:rerun", args=[turn.pk, "diaries"])
    page = admin_client.get(url).content.decode()
    assert f"Schedule the failed diaries job of turn {turn.pk}" in page and "Yes, I’m sure" in page
    assert not OutboxMessage.objects.filter(dedup_key__contains="rerun").exists()  # a GET changes nothing

    with jobs_in_process(), django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, follow=True)
    assert "is scheduled again (re-run 1)" in response.content.decode()
    [row] = OutboxMessage.objects.filter(dedup_key=turn_jobs.dedup_key("diaries", turn.pk, "rerun-1"))
    assert row.done_at is not None and row.outcome == "SUCCESS"  # the embedded default ran it in-process
    turn.refresh_from_db()
    assert turn.memory_write["work"]["diaries"] == "done" and turn.memory_write["status"] == "done"
    assert Event.objects.get(turn=turn, type=RERUN_EVENT).details == {
        "work": "diaries",
        "rerun": 1,
        "actor": "operator:admin",
    }
    assert audit_messages(turn) == ["Re-ran the failed diaries job (re-run 1, through the outbox)"]

    again = admin_client.post(url, follow=True).content.decode()  # a second confirmation: nothing more
    assert "is done, not failed" in again
    assert OutboxMessage.objects.filter(dedup_key__contains=f"{turn.pk}:rerun").count() == 1


def test_rerun_of_a_table_conflict_is_refused(admin_client, seeded, django_capture_on_commit_callbacks):
    with jobs_in_process(), django_capture_on_commit_callbacks(execute=True):
        turn = failed_job_turn(seeded, "tables")
    assert TableEditRecord.objects.filter(turn=turn).update(outcome="conflict") == 1
    page = admin_client.get(reverse("console:rerun", args=[turn.pk, "tables"])).content.decode()
    assert "edit the table by hand" in page and "Yes, I’m sure" not in page
    admin_client.post(reverse("console:rerun", args=[turn.pk, "tables"]))
    assert not Event.objects.filter(turn=turn, type=RERUN_EVENT).exists()
    assert Turn.objects.get(pk=turn.pk).memory_write["work"]["tables"] == "failed"


def test_revoking_a_key_confirms_audits_and_the_key_stops_working(admin_client, seeded):
    key = ApiKey.objects.get(product=seeded.product)
    url = reverse("console:revoke_key", args=[key.pk])
    assert url in admin_client.get(reverse("admin:memories_apikey_changelist")).content.decode()  # "Revoke…"
    assert f"Revoke the API key {key.prefix}" in admin_client.get(url).content.decode()
    assert client_for(seeded.api.key).get("/v1/scenarios").status_code == 200
    admin_client.post(url)
    assert client_for(seeded.api.key).get("/v1/scenarios").status_code == 401
    assert audit_messages(key) == [f"Revoked the API key {key.prefix}…"]
    assert "already revoked" in admin_client.get(url).content.decode()
    assert url not in admin_client.get(reverse("admin:memories_apikey_changelist")).content.decode()


def test_resend_of_a_failed_hinos_commit_is_confirmed_and_audited(admin_client, alice, stub_server, settings):
    settings.HINOS_MEMORY_URL = stub_server.url
    stub_server.route("POST", PREPARE, Reply(200, PREPARED))
    stub_server.route("POST", COMMIT, Reply(200, {"committed": False}))
    scenario = {
        "id": "gate",
        "name": "City gate",
        "memoryRuntime": "hinos",
        "template": "{{hinosMemory}} {{userMessage}}",
        "memorySources": [{"id": "external-memory", "agentRef": "hinos", "variable": "hinosMemory"}],
    }
    assert alice.post("/v1/scenarios", scenario).status_code == 201
    conv = "/v1/users/u1/conversations/c1"
    turn_id = alice.post(f"{conv}/turns", {"scenarioId": "gate", "userMessage": "我答应明天归还铜钥匙"}).json()[
        "turnId"
    ]
    alice.post(f"{conv}/turns/{turn_id}/complete", {"assistantMessage": "守卫点头"})
    failed = Event.objects.get(type="memory.write_failed")
    board = admin_client.get(reverse("admin:index"), {"product": alice.product.pk}).content.decode()
    resend_url = reverse("console:resend", args=[failed.pk])
    assert resend_url in board
    hinos = dashboard_build(product=alice.product).hinos
    assert [f.value for f in hinos] == [1, 0, 1]  # failed, acknowledged since, awaiting a re-send
    assert [admin_client.get(f.url).context["cl"].result_count for f in hinos] == [1, 0, 1]
    assert "claim-1" in admin_client.get(resend_url).content.decode()

    stub_server.route("POST", COMMIT, Reply(200, {"committed": True}))
    response = admin_client.post(resend_url, follow=True).content.decode()
    assert "acknowledged the re-sent commit" in response
    assert Event.objects.filter(type="memory.write_resent", turn_id=turn_id).count() == 1
    assert audit_messages(failed)[0].startswith("Re-sent the Hinos commit: committed")
    assert resend_url not in admin_client.get(reverse("admin:index"), {"product": alice.product.pk}).content.decode()


def test_actions_need_the_permission_and_a_csrf_token(seeded):
    turn = failed_job_turn(seeded, "diaries")
    url = reverse("console:rerun", args=[turn.pk, "diaries"])
    staff = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer = Client()
    viewer.force_login(staff)
    assert viewer.post(url).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(User.objects.create_superuser("root", password="pw"))
    assert strict.post(url).status_code == 403
    assert not Event.objects.filter(type=RERUN_EVENT).exists()


def test_rerun_of_a_failed_table_job_applies_the_reply_once(admin_client, seeded, django_capture_on_commit_callbacks):
    turn = failed_job_turn(seeded, "tables")  # its job never ran here (no on_commit): no edit record yet
    assert not TableEditRecord.objects.filter(turn=turn).exists()
    with jobs_in_process(), django_capture_on_commit_callbacks(execute=True):
        admin_client.post(reverse("console:rerun", args=[turn.pk, "tables"]))
    record = TableEditRecord.objects.get(turn=turn)
    assert record.outcome == "updated" and record.deliveries == 1
    assert Turn.objects.get(pk=turn.pk).memory_write["work"]["tables"] == "done"


@pytest.mark.requires_worker
@pytest.mark.django_db(transaction=True)
def test_with_a_broker_the_rerun_reaches_a_real_worker_through_the_outbox(celery_worker_process):
    from tests.support.processes import wait_for

    seeded = seed_product()
    turn = failed_job_turn(seeded, "diaries")
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    client.post(reverse("console:rerun", args=[turn.pk, "diaries"]))
    row = OutboxMessage.objects.get(dedup_key=turn_jobs.dedup_key("diaries", turn.pk, "rerun-1"))
    wait_for(
        lambda: Turn.objects.get(pk=turn.pk).memory_write["work"]["diaries"] == "done",
        timeout=90,
        message="the worker to run the re-run",
    )
    row.refresh_from_db()
    assert row.done_at is not None and row.outcome == "SUCCESS"


def test_a_view_only_operator_is_not_offered_the_revoke_link(admin_client, alice):
    staff = User.objects.create_user("viewer", password="pw", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_apikey"))
    viewer = Client()
    viewer.force_login(staff)
    changelist = reverse("admin:memories_apikey_changelist")
    revoke = reverse("console:revoke_key", args=[ApiKey.objects.filter(product=alice.product).first().pk])
    page = viewer.get(changelist)
    assert page.status_code == 200 and revoke not in page.content.decode()
    assert viewer.get(revoke).status_code == 403
    assert revoke in admin_client.get(changelist).content.decode()  # one who may change keys is offered it
