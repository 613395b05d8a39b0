"""The webhook after-step: runs after a committed replace; its failure is an event and never undoes the write."""

from __future__ import annotations

import pytest

from tables.models import MemoryTable, TableEditRecord
from tables.tasks import apply_table_edits
from tests.factories import TableScenarioFactory, TurnFactory
from tests.support.api import assert_envelope
from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import closed_port

from .support import edit, events

pytestmark = pytest.mark.django_db

REPLY = edit('insertRow(1, {0: "艾琳", 1: "铜制 风灯", 2: "风灯"})')


@pytest.fixture(autouse=True)
def _loopback_receivers(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the stub receivers listen on 127.0.0.1 (the rule: tests at the end)


@pytest.fixture
def server():
    stub = StubHttpServer().start()
    yield stub
    stub.stop()


def closed_port_url() -> str:
    return f"http://127.0.0.1:{closed_port()}/hook"  # nothing listens here


def run(alice, url: str, reply: str = REPLY, timeout_ms: int = 2000):
    scenario = TableScenarioFactory(product=alice.product, webhook={"url": url, "timeoutMs": timeout_ms})
    turn = TurnFactory(scenario=scenario, assistant_message=reply)
    return turn, apply_table_edits(turn.pk)  # the task body, run synchronously


def items(product) -> MemoryTable:
    return MemoryTable.objects.get(product=product, name="重要物品表格")


def test_the_written_rows_are_posted_after_the_replace(alice, server):
    server.route("POST", "/hook", Reply(200, {"ok": True}))
    turn, outcome = run(alice, f"{server.url}/hook?source=memoryhub")
    assert outcome == "updated"
    [request] = server.requests
    assert request.path == "/hook?source=memoryhub" and request.headers["x-request-id"]
    body = request.json()
    assert body | {"tables": None} == {
        "type": "table.updated",
        "turnId": turn.pk,
        "round": 1,
        "userId": "u1",
        "conversationId": "c1",
        "tables": None,
    }
    assert body["tables"] == [
        {
            "id": items(alice.product).pk,
            "index": 1,
            "name": "重要物品表格",
            "version": 2,
            "columns": ["拥有人", "物品描述", "物品名", "重要原因"],
            "rows": [["艾琳", "铜制 风灯", "风灯", ""]],
        }
    ]
    assert TableEditRecord.objects.get(turn=turn).after_step["status"] == "ok"
    assert len(events(alice.product, "table.after_step_succeeded")) == 1


def test_a_500_is_recorded_as_an_event_and_the_table_write_is_kept(alice, server):
    server.route("POST", "/hook", Reply(500, {"error": "boom"}))
    turn, outcome = run(alice, f"{server.url}/hook")
    assert outcome == "updated"
    assert items(alice.product).rows == [["艾琳", "铜制 风灯", "风灯", ""]] and items(alice.product).version == 2
    [failed] = events(alice.product, "table.after_step_failed")
    assert failed.turn_id == turn.pk and failed.details["tableWrite"] == "committed"
    assert failed.details["error"]["code"] == "upstream_failed" and failed.details["error"]["details"]["status"] == 500
    assert len(events(alice.product, "table.updated")) == 1
    assert TableEditRecord.objects.get(turn=turn).after_step["status"] == "failed"


def test_a_closed_port_is_recorded_and_the_write_is_kept(alice):
    _, outcome = run(alice, closed_port_url())
    assert outcome == "updated" and items(alice.product).version == 2
    [failed] = events(alice.product, "table.after_step_failed")
    assert failed.details["error"]["code"] == "upstream_failed" and "unreachable" in failed.details["error"]["message"]


def test_a_slow_webhook_times_out_and_is_recorded(alice, server):
    server.route("POST", "/hook", Reply(200, {}, delay_seconds=2))
    _, outcome = run(alice, f"{server.url}/hook", timeout_ms=200)
    assert outcome == "updated" and items(alice.product).version == 2
    assert events(alice.product, "table.after_step_failed")[0].details["error"]["code"] == "upstream_timeout"


def test_no_after_step_when_nothing_was_replaced(alice, server):
    server.route("POST", "/hook", Reply(200, {}))
    turn, outcome = run(alice, f"{server.url}/hook", reply="没有编辑。")
    assert outcome == "unchanged" and server.requests == []
    assert TableEditRecord.objects.get(turn=turn).after_step == {}


def test_a_redelivered_task_does_not_post_again_once_the_outcome_is_recorded(alice, server):
    server.route("POST", "/hook", Reply(500, {}))
    turn, _ = run(alice, f"{server.url}/hook")
    assert apply_table_edits(turn.pk) == "updated"
    assert len(server.requests) == 1 and len(events(alice.product, "table.after_step_failed")) == 1
    assert TableEditRecord.objects.get(turn=turn).deliveries == 2


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/hook", "http://localhost/x", "http://10.0.0.1/x", "http://169.254.169.254/latest/"]
)
def test_a_scenario_whose_table_webhook_is_not_public_is_refused(alice, settings, url):
    """docs/security.md: the table webhook follows webhooks' rules (SSRF: no loopback, private or metadata host)."""
    settings.WEBHOOK_ALLOW_PRIVATE = False
    body = {
        "id": "ssrf",
        "name": "ssrf",
        "memorySources": [{"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"}],
        "template": "{{memoryTable}}\n{{userMessage}}",
        "tables": "plugin-defaults",
        "tableWebhook": {"url": url},
    }
    error = assert_envelope(alice.post("/v1/scenarios", body), 400, "invalid_request")
    assert "tableWebhook.url" in error["details"]["fields"]
    credentials = {**body, "tableWebhook": {"url": "https://u:p@exporter.example/x"}}
    error = assert_envelope(alice.post("/v1/scenarios", credentials), 400, "invalid_request")
    assert "credentials" in error["details"]["fields"]["tableWebhook.url"]


def test_a_table_webhook_is_checked_again_before_it_is_sent_and_an_internal_answer_never_read(alice, server, settings):
    server.route("POST", "/hook", Reply(500, {"internal": "db_password=hunter2"}))
    settings.WEBHOOK_ALLOW_PRIVATE = True
    scenario = TableScenarioFactory(product=alice.product, webhook={"url": f"{server.url}/hook", "timeoutMs": 2000})
    settings.WEBHOOK_ALLOW_PRIVATE = False  # e.g. the name now resolves to an internal address
    turn = TurnFactory(scenario=scenario, assistant_message=REPLY)
    assert apply_table_edits(turn.pk) == "updated"
    assert server.requests == []
    [event] = events(alice.product, "table.after_step_failed")
    assert "refused" in event.details["error"]["message"] and "hunter2" not in str(event.details)
