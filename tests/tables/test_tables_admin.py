"""The operator console for tables: rendered tables, history, each turn's calls, edits through the CAS service."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.urls import reverse

from tables.forms import MemoryTableForm
from tables.models import MemoryTable, MemoryTableVersion, TableEditRecord
from tables.turn_edits import turn_table_edits_apply
from tests.factories import TableScenarioFactory, TurnFactory
from tests.support.metrics import metric

from .support import edit, events

pytestmark = pytest.mark.django_db

REPLY = edit('insertRow(0, {0: "五月一日", 2: "<b>灯塔</b>"})', "deleteRow(0, 9)")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def scene(alice) -> MemoryTable:
    turn = TurnFactory(scenario=TableScenarioFactory(product=alice.product), assistant_message=REPLY)
    turn_table_edits_apply(turn_pk=turn.pk)
    return MemoryTable.objects.get(product=alice.product, name="时空表格")


def change_url(obj) -> str:
    return reverse(f"admin:tables_{obj._meta.model_name}_change", args=[obj.pk])


def save(admin_client, table, rows, loaded_version: int):
    data = {"rows": json.dumps(rows, ensure_ascii=False), "loaded_version": str(loaded_version), "_save": "Save"}
    return admin_client.post(change_url(table), data, follow=True)


def test_the_change_page_renders_tables_history_and_the_turns_calls(admin_client, scene):
    page = admin_client.get(change_url(scene)).content.decode()
    assert "<th>0:日期</th>" in page and "<td>五月一日</td>" in page
    assert "&lt;b&gt;灯塔&lt;/b&gt;" in page and "<b>灯塔</b>" not in page  # cells are escaped
    assert "* 1:重要物品表格" in page and "（此表格当前为空）" in page  # the conversation's other table
    assert "v2 · turn" in page and "v1 · created" in page
    assert "row 9 does not exist" in page  # the skipped call with its reason
    assert admin_client.get(reverse("admin:tables_memorytable_changelist")).status_code == 200


def test_an_operator_edit_goes_through_the_cas_service(admin_client, scene, alice):
    response = save(admin_client, scene, [["五月二日", "晨", "码头", "艾琳"]], loaded_version=2)
    assert response.status_code == 200
    scene.refresh_from_db()
    assert scene.version == 3 and scene.rows == [["五月二日", "晨", "码头", "艾琳"]]
    latest = MemoryTableVersion.objects.get(table=scene, version=3)
    assert (latest.cause, latest.actor) == ("operator", "operator:admin")
    assert events(alice.product, "table.updated")[-1].details["actor"] == "operator:admin"


def test_a_stale_operator_edit_is_refused_with_a_visible_message(admin_client, scene):
    MemoryTable.objects.filter(pk=scene.pk).update(version=5)  # someone else wrote meanwhile
    conflicts = metric("memoryhub_conflicts_total", kind="memory_table")
    response = save(admin_client, scene, [["x", "", "", ""]], loaded_version=2)
    page = response.content.decode()
    assert "changed while you edited it" in page and "nothing was saved" in page
    assert metric("memoryhub_conflicts_total", kind="memory_table") == conflicts + 1
    assert not [m for m in get_messages(response.wsgi_request) if "successfully" in str(m)]
    scene.refresh_from_db()
    assert scene.rows == [["五月一日", "", "<b>灯塔</b>", ""]]


def test_a_bad_operator_edit_names_the_problem(admin_client, scene):
    page = save(admin_client, scene, [["only one"]], loaded_version=2).content.decode()
    assert "exactly 4 cells" in page
    scene.refresh_from_db()
    assert scene.version == 2


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ('[["a", "\\ud800", "", ""]]', "lone surrogate"),
        ('[["a\\u0000", "", "", ""]]', "U+0000"),
        ("[[NaN]]", "valid JSON"),
    ],
)
def test_text_no_store_keeps_is_refused_by_the_form_and_nothing_is_saved(admin_client, scene, alice, typed, shown):
    data = {"rows": typed, "loaded_version": "2", "_save": "Save"}
    page = admin_client.post(change_url(scene), data, follow=True).content.decode()
    assert shown in page
    scene.refresh_from_db()
    assert scene.version == 2 and MemoryTableVersion.objects.filter(table=scene).count() == 2
    assert alice.get(f"/v1/users/{scene.user_id}/conversations/{scene.conversation_id}/tables").status_code == 200


def test_edit_records_are_read_only_and_show_applied_and_skipped_calls(admin_client, scene):
    record = TableEditRecord.objects.get()
    page = admin_client.get(change_url(record)).content.decode()
    assert "五月一日" in page and "row 9 does not exist" in page
    assert admin_client.post(change_url(record), {}).status_code == 403
    assert admin_client.get(reverse("admin:tables_tableeditrecord_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:tables_memorytableversion_changelist")).status_code == 200


def test_an_edit_losing_a_race_after_validation_writes_no_changed_entry(admin_client, scene, monkeypatch):
    # Another write lands between the form's check and the service call: the service's CAS refuses it.
    monkeypatch.setattr(MemoryTableForm, "clean", lambda form: form.cleaned_data)
    MemoryTable.objects.filter(pk=scene.pk).update(version=5)
    response = save(admin_client, scene, [["x", "", "", ""]], loaded_version=2)
    assert any("Not saved" in str(m) for m in get_messages(response.wsgi_request))
    scene.refresh_from_db()
    assert scene.rows == [["五月一日", "", "<b>灯塔</b>", ""]]
    assert not LogEntry.objects.filter(object_id=str(scene.pk), action_flag=CHANGE).exists()
    save(admin_client, scene, [["y", "", "", ""]], loaded_version=5)
    assert LogEntry.objects.filter(object_id=str(scene.pk), action_flag=CHANGE).count() == 1
