"""End to end on real services: HTTP turns → commit hook → a real Celery worker → tables → the next prompt.

Runs against PostgreSQL, Redis (working set and broker) and a `celery -A memoryhub worker` subprocess;
skipped on the embedded default, failing instead under MEMORYHUB_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import pytest

from tables.models import TableEditRecord
from tables.tasks import apply_table_edits
from tests.factories import TABLE_TEMPLATES
from tests.support.api import assert_envelope
from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import closed_port, wait_for
from tests.support.turns import prepare

from .faults import request_concurrent_writes
from .support import address

pytestmark = [pytest.mark.requires_worker, pytest.mark.django_db(transaction=True)]

CONV = "/v1/users/u1/conversations/c1"
INSERT = (
    "夜色里，艾琳提着风灯走进旧灯塔。\n"
    "<tableEdit>\n<!--\n"
    'insertRow(0, {"0": "2024-05-01", "1": "夜", "2": "旧灯塔", "3": "艾琳"})\n'
    "-->\n</tableEdit>"
)
ROW_LINE = "0,2024-05-01,夜,旧灯塔,艾琳\n"


def create_scenario(api, **sections) -> None:
    body = {
        "id": "rp",
        "name": "灯塔",
        "memoryRuntime": "axon_go",
        "memorySources": [{"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"}],
        "template": "{{memoryTable}}\n用户：{{userMessage}}",
        "tables": TABLE_TEMPLATES,
        **sections,
    }
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()


def complete(api, turn_id: int, reply: str, conv: str = CONV) -> dict:
    response = api.post(f"{conv}/turns/{turn_id}/complete", {"assistantMessage": reply})
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "committed"
    return response.json()


def wait_event(api, type: str, turn_id: int, conv: str = CONV) -> dict:
    def found():
        results = api.get(f"{conv}/events?type={type}&limit=200").json()["results"]
        return next((e for e in results if e["turnId"] == turn_id), None)

    return wait_for(found, timeout=60, message=f"{type} for turn {turn_id}")


def event_types(api, turn_id: int, conv: str = CONV) -> list[str]:
    results = api.get(f"{conv}/events?limit=200").json()["results"]
    return [e["type"] for e in results if e["turnId"] == turn_id]


def tables(api, conv: str = CONV) -> list[dict]:
    return api.get(f"{conv}/tables").json()["tables"]


def test_an_insert_changes_the_table_and_the_next_prompt_shows_the_row(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "我们在哪？")
    assert "（此表格当前为空）" in first["prompt"] and "* 0:时空表格" in first["prompt"]
    assert first["sources"][0]["version"] == 2
    complete(alice, first["turnId"], INSERT)
    updated = wait_event(alice, "table.updated", first["turnId"])
    assert [c["op"] for c in updated["details"]["applied"]] == ["insert"]
    second = prepare(alice, "rp", "然后呢？")
    assert ROW_LINE in second["prompt"]
    assert second["sources"][0]["version"] == 3
    assert tables(alice)[0]["rows"] == [["2024-05-01", "夜", "旧灯塔", "艾琳"]]


def test_a_reply_without_edits_leaves_the_version_unchanged(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")
    complete(alice, first["turnId"], INSERT)
    wait_event(alice, "table.updated", first["turnId"])
    second = prepare(alice, "rp", "继续")
    complete(alice, second["turnId"], "艾琳没有说话，只是看着海。")
    unchanged = wait_event(alice, "table.unchanged", second["turnId"])
    assert unchanged["details"]["applied"] == [] and unchanged["details"]["skipped"] == []
    assert [t["version"] for t in tables(alice)] == [2, 1]
    assert len(alice.get(f"{CONV}/tables/{tables(alice)[0]['id']}/versions").json()["results"]) == 2
    assert "table.updated" not in event_types(alice, second["turnId"])


def test_a_conflict_between_read_and_write_is_retried_once_and_then_reported(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")  # instantiates the tables
    request_concurrent_writes(address(alice.product), 2)  # one concurrent commit per attempt
    complete(alice, first["turnId"], INSERT)
    conflict = wait_event(alice, "table.conflict", first["turnId"])
    assert conflict["details"]["attempts"] == 2 and conflict["details"]["applied"] == []
    assert conflict["details"]["tables"][0]["name"] == "时空表格"
    assert "version conflict" in conflict["details"]["skipped"][0]["reason"]
    # both concurrent writes are kept, the reply's insert is not
    assert tables(alice)[0]["rows"] == [["fault-injection-1", "", "", ""], ["fault-injection-2", "", "", ""]]
    assert "table.updated" not in event_types(alice, first["turnId"])


def test_one_conflict_is_retried_and_the_reply_is_applied_on_the_new_version(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")
    request_concurrent_writes(address(alice.product), 1)
    complete(alice, first["turnId"], INSERT)
    updated = wait_event(alice, "table.updated", first["turnId"])
    assert updated["details"]["attempts"] == 2
    assert tables(alice)[0]["rows"] == [["fault-injection-1", "", "", ""], ["2024-05-01", "夜", "旧灯塔", "艾琳"]]


def test_a_stale_manual_edit_is_409(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")
    complete(alice, first["turnId"], INSERT)
    wait_event(alice, "table.updated", first["turnId"])
    url = f"{CONV}/tables/{tables(alice)[0]['id']}"
    error = assert_envelope(alice.put(url, {"expectedVersion": 1, "rows": []}), 409, "revision_conflict")
    assert error["details"] == {"currentRevision": 2, "currentVersion": 2}
    assert alice.put(url, {"expectedVersion": 2, "rows": []}).json()["version"] == 3
    assert "（此表格当前为空）" in prepare(alice, "rp", "继续")["prompt"].split("* 1:")[0]


def test_a_redelivered_task_applies_nothing_twice(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")
    complete(alice, first["turnId"], INSERT)
    for _ in range(2):  # duplicates racing the original delivery on the two worker processes
        apply_table_edits.delay(first["turnId"])
    wait_for(
        lambda: TableEditRecord.objects.filter(turn_id=first["turnId"], deliveries=3).exists(),
        timeout=60,
        message="three deliveries of the task",
    )
    apply_table_edits.delay(first["turnId"])  # and one after the outcome is recorded
    wait_for(
        lambda: TableEditRecord.objects.filter(turn_id=first["turnId"], deliveries=4).exists(),
        timeout=60,
        message="the fourth delivery",
    )
    assert tables(alice)[0]["rows"] == [["2024-05-01", "夜", "旧灯塔", "艾琳"]] and tables(alice)[0]["version"] == 2
    assert event_types(alice, first["turnId"]).count("table.updated") == 1


def test_a_replaced_reply_does_not_leave_its_edits_behind(alice, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")
    complete(alice, first["turnId"], INSERT)
    wait_event(alice, "table.updated", first["turnId"])
    again = prepare(alice, "rp", "继续", replacesTurnId=first["turnId"])
    assert again["round"] == first["round"]
    assert ROW_LINE not in again["prompt"]  # regenerating: prompted with the tables as before the round
    replacement = INSERT.replace("旧灯塔", "码头").replace("艾琳", "船长")
    complete(alice, again["turnId"], replacement)
    updated = wait_event(alice, "table.updated", again["turnId"])
    assert updated["details"]["replacedTurnId"] == first["turnId"]
    assert tables(alice)[0]["rows"] == [["2024-05-01", "夜", "码头", "船长"]]
    assert "0,2024-05-01,夜,码头,船长\n" in prepare(alice, "rp", "继续")["prompt"]


def closed_port_url() -> str:
    return f"http://127.0.0.1:{closed_port()}/hook"  # nothing listens here


@pytest.mark.parametrize("target", ["http-500", "closed-port"])
def test_an_after_step_failure_is_an_event_and_the_table_write_is_kept(alice, celery_worker_process, target, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receivers are on 127.0.0.1 (the worker runs with it too)
    server = StubHttpServer().start()
    try:
        server.route("POST", "/hook", Reply(500, {"error": "exporter down"}))
        url = f"{server.url}/hook" if target == "http-500" else closed_port_url()
        create_scenario(alice, tableWebhook={"url": url, "timeoutMs": 3000})
        first = prepare(alice, "rp", "继续")
        complete(alice, first["turnId"], INSERT)
        failed = wait_event(alice, "table.after_step_failed", first["turnId"])
    finally:
        server.stop()
    assert failed["details"]["tableWrite"] == "committed"
    assert failed["details"]["error"]["code"] == "upstream_failed"
    assert len(server.requests) == (1 if target == "http-500" else 0)
    assert "table.updated" in event_types(alice, first["turnId"])
    assert tables(alice)[0]["rows"] == [["2024-05-01", "夜", "旧灯塔", "艾琳"]] and tables(alice)[0]["version"] == 2


def test_bob_cannot_reach_alices_tables(alice, bob, celery_worker_process):
    create_scenario(alice)
    first = prepare(alice, "rp", "继续")
    complete(alice, first["turnId"], INSERT)
    wait_event(alice, "table.updated", first["turnId"])
    for table in tables(alice):
        url = f"{CONV}/tables/{table['id']}"
        assert_envelope(bob.get(url), 404, "not_found")
        assert_envelope(bob.put(url, {"expectedVersion": table["version"], "rows": []}), 404, "not_found")
        assert_envelope(bob.get(f"{url}/versions"), 404, "not_found")
    assert bob.get(f"{CONV}/tables").json() == {"tables": [], "memoryTable": "", "version": 0}
    assert tables(alice)[0]["version"] == 2
