"""The tables API: list with the rendered text, manual edit with compare-and-set, versions, product scope."""

from __future__ import annotations

import pytest

from tables.models import MemoryTable
from tables.presets import PLUGIN_DEFAULT_TABLES
from tables.turn_edits import turn_table_edits_apply
from tests.factories import TABLE_TEMPLATES, TableScenarioFactory, TurnFactory
from tests.support.api import assert_envelope

from .support import edit, events

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"


@pytest.fixture
def applied(alice):
    """One committed turn that inserted a row into 时空表格 (now at version 2)."""
    turn = TurnFactory(
        scenario=TableScenarioFactory(product=alice.product),
        assistant_message=edit('insertRow(0, {0: "五月一日", 2: "灯塔"})'),
    )
    turn_table_edits_apply(turn_pk=turn.pk)
    return turn


def table_id(product, name="时空表格") -> int:
    return MemoryTable.objects.get(product=product, user_id="u1", conversation_id="c1", name=name).pk


def test_a_conversation_that_never_used_tables_reads_empty(alice):
    assert alice.get(f"{CONV}/tables").json() == {"tables": [], "memoryTable": "", "version": 0}


def test_list_shows_rows_versions_and_the_memory_table_text(alice, applied):
    body = alice.get(f"{CONV}/tables").json()
    assert [(t["index"], t["name"], t["version"], t["rows"]) for t in body["tables"]] == [
        (0, "时空表格", 2, [["五月一日", "", "灯塔", ""]]),
        (1, "重要物品表格", 1, []),
    ]
    assert body["tables"][0]["columns"] == TABLE_TEMPLATES[0]["columns"]
    assert body["version"] == 3
    assert "* 0:时空表格\n" in body["memoryTable"]
    assert "rowIndex,0:日期,1:时间,2:地点（当前描写）,3:此地角色\n0,五月一日,,灯塔,\n" in body["memoryTable"]
    assert "* 1:重要物品表格\n" in body["memoryTable"] and "（此表格当前为空）" in body["memoryTable"]


def test_manual_edit_replaces_the_rows_and_bumps_the_version(alice, applied):
    url = f"{CONV}/tables/{table_id(alice.product)}"
    response = alice.put(url, {"expectedVersion": 2, "rows": [["五月二日", "清晨", "码头", "艾琳 与 船长"]]})
    assert response.status_code == 200, response.json()
    assert (response.json()["version"], response.json()["changed"]) == (3, True)
    assert alice.get(url).json()["rows"] == [["五月二日", "清晨", "码头", "艾琳 与 船长"]]
    assert events(alice.product, "table.updated")[-1].details["manual"] is True


def test_manual_edit_with_the_same_rows_keeps_the_version(alice, applied):
    url = f"{CONV}/tables/{table_id(alice.product)}"
    response = alice.put(url, {"expectedVersion": 2, "rows": [["五月一日", "", "灯塔", ""]]})
    assert (response.json()["version"], response.json()["changed"]) == (2, False)
    assert events(alice.product, "table.unchanged")[-1].details["manual"] is True


def test_stale_manual_edit_is_409_with_the_current_version_and_changes_nothing(alice, applied):
    url = f"{CONV}/tables/{table_id(alice.product)}"
    error = assert_envelope(alice.put(url, {"expectedVersion": 1, "rows": []}), 409, "revision_conflict")
    assert error["details"] == {"currentRevision": 2, "currentVersion": 2}
    assert alice.get(url).json()["rows"] == [["五月一日", "", "灯塔", ""]]
    assert alice.get(url).json()["version"] == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expectedVersion": 2, "rows": [["only one cell"]]}, "rows[0]"),
        ({"expectedVersion": 2, "rows": [["a", "b", 3, "d"]]}, "rows[0][2]"),
        ({"expectedVersion": 2, "rows": {"0": ["a", "b", "c", "d"]}}, "rows"),
        ({"expectedVersion": "2", "rows": []}, "expectedVersion"),
        ({"rows": []}, "expectedVersion"),
        ({"expectedVersion": 2, "rows": [], "force": True}, "force"),
    ],
)
def test_bad_edits_are_400_naming_the_field_and_change_nothing(alice, applied, body, field):
    url = f"{CONV}/tables/{table_id(alice.product)}"
    error = assert_envelope(alice.put(url, body), 400, "invalid_request")
    assert field in error["details"]["fields"]
    assert alice.get(url).json()["version"] == 2


def test_max_rows_is_enforced_on_manual_edits(alice):
    tables = [{"name": "当前", "columns": ["a"], "maxRows": 1}]
    turn = TurnFactory(
        scenario=TableScenarioFactory(product=alice.product, tables=tables),
        assistant_message=edit('insertRow(0, {0: "x"})'),
    )
    turn_table_edits_apply(turn_pk=turn.pk)
    url = f"{CONV}/tables/{table_id(alice.product, '当前')}"
    error = assert_envelope(alice.put(url, {"expectedVersion": 2, "rows": [["x"], ["y"]]}), 400)
    assert "rows" in error["details"]["fields"]


def test_versions_list_every_committed_version_newest_first(alice, applied):
    url = f"{CONV}/tables/{table_id(alice.product)}"
    alice.put(url, {"expectedVersion": 2, "rows": []})
    results = alice.get(f"{url}/versions").json()["results"]
    assert [(v["version"], v["cause"], v["turnId"]) for v in results] == [
        (3, "api_key", None),
        (2, "turn", applied.pk),
        (1, "created", None),
    ]
    assert results[0]["actor"].startswith("api_key:") and results[1]["rows"] == [["五月一日", "", "灯塔", ""]]
    first_page = alice.get(f"{url}/versions?limit=2").json()
    assert len(first_page["results"]) == 2 and first_page["next"]
    rest = alice.get(f"{url}/versions?limit=2&cursor={first_page['next']}").json()
    assert [v["version"] for v in rest["results"]] == [1] and rest["next"] is None


def test_another_product_gets_404_for_every_table_endpoint(alice, bob, applied):
    url = f"{CONV}/tables/{table_id(alice.product)}"
    assert_envelope(bob.get(url), 404, "not_found")
    assert_envelope(bob.put(url, {"expectedVersion": 2, "rows": []}), 404, "not_found")
    assert_envelope(bob.get(f"{url}/versions"), 404, "not_found")
    assert bob.get(f"{CONV}/tables").json() == {"tables": [], "memoryTable": "", "version": 0}
    assert alice.get(url).json()["version"] == 2


def test_a_table_id_of_another_conversation_is_404(alice, applied):
    tid = table_id(alice.product)
    assert_envelope(alice.get(f"/v1/users/u1/conversations/c2/tables/{tid}"), 404, "not_found")
    assert_envelope(alice.put(f"/v1/users/u2/conversations/c1/tables/{tid}", {"expectedVersion": 2, "rows": []}), 404)
    assert_envelope(alice.get(f"{CONV}/tables/not-a-number"), 404, "not_found")


def test_bad_user_or_conversation_ids_are_400(alice):
    assert_envelope(alice.get("/v1/users/u:1/conversations/c1/tables"), 400)


# --- the scenario's "tables" section -----------------------------------------------------------


def scenario(**sections) -> dict:
    return {
        "id": "rp",
        "name": "RP",
        "memoryRuntime": "axon_go",
        "memorySources": [{"id": "t", "agentRef": "table-agent", "variable": "memoryTable"}],
        "template": "{{memoryTable}}\n{{userMessage}}",
        **sections,
    }


def test_a_scenario_stores_validated_templates_with_defaults(alice):
    response = alice.post("/v1/scenarios", scenario(tables=[{"name": "物品", "columns": ["拥有人", "物品名"]}]))
    assert response.status_code == 201, response.json()
    assert alice.get("/v1/scenarios/rp").json()["tables"] == [
        {
            "name": "物品",
            "columns": ["拥有人", "物品名"],
            "note": "",
            "rules": {"init": "", "insert": "", "update": "", "delete": ""},
            "required": False,
            "maxRows": None,
        }
    ]


def test_the_plugin_defaults_preset_expands_to_the_six_tables(alice):
    assert alice.post("/v1/scenarios", scenario(tables="plugin-defaults")).status_code == 201
    stored = alice.get("/v1/scenarios/rp").json()["tables"]
    assert stored == PLUGIN_DEFAULT_TABLES and len(stored) == 6


@pytest.mark.parametrize(
    ("tables", "field"),
    [
        ([{"name": "a", "columns": ["x"]}, {"name": "a", "columns": ["y"]}], "tables[1].name"),
        ([{"name": "a", "columns": ["x"]}, {"name": "b", "columns": []}], "tables[1].columns"),
        ([{"name": "a"}], "tables[0].columns"),
        ([{"name": "a", "columns": ["x", "x"]}], "tables[0].columns"),
        ([{"name": "a", "columns": ["x", 3]}], "tables[0].columns[1]"),
        ([{"name": "", "columns": ["x"]}], "tables[0].name"),
        ([{"name": "a", "columns": ["x"], "color": "red"}], "tables[0].color"),
        ([{"name": "a", "columns": ["x"], "rules": {"append": "y"}}], "tables[0].rules.append"),
        ([{"name": "a", "columns": ["x"], "required": "yes"}], "tables[0].required"),
        ([{"name": "a", "columns": ["x"], "maxRows": 0}], "tables[0].maxRows"),
        (["a"], "tables[0]"),
        ("all-the-tables", "tables"),
        ({"name": "a"}, "tables"),
    ],
)
def test_invalid_templates_are_400_naming_the_field(alice, tables, field):
    error = assert_envelope(alice.post("/v1/scenarios", scenario(tables=tables)), 400)
    assert field in error["details"]["fields"], error
    assert_envelope(alice.get("/v1/scenarios/rp"), 404)


@pytest.mark.parametrize(
    ("webhook", "field"),
    [
        ({"url": "ftp://x"}, "tableWebhook.url"),
        ({"url": "http://127.0.0.1:9/h", "timeoutMs": 0}, "tableWebhook.timeoutMs"),
        ({"url": "http://127.0.0.1:9/h", "secret": "x"}, "tableWebhook.secret"),
        ("http://x", "tableWebhook"),
    ],
)
def test_invalid_webhooks_are_400_naming_the_field(alice, webhook, field):
    error = assert_envelope(alice.post("/v1/scenarios", scenario(tables="plugin-defaults", tableWebhook=webhook)), 400)
    assert field in error["details"]["fields"], error
