"""After-steps: optional work after a turn's edits replaced tables (docs/tables.md, "After-steps").

The one after-step is a webhook: the scenario's `tableWebhook` gets a POST with the rows of every table the
turn wrote. It runs after the table transaction committed, so its failure can neither roll back nor hide
the write: it is recorded on the TableEditRecord and as a `table.after_step_failed` event. A task that is
redelivered before the outcome was recorded posts again (at-least-once delivery).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from memories.services.events import event_emit_for_turn
from memoryhub.clients.errors import UpstreamError
from memoryhub.clients.http import make_client, new_request_id, post_json
from tables.models import MemoryTable, MemoryTableVersion, TableEditRecord

SERVICE = "table_webhook"


def after_steps_run(record: TableEditRecord) -> str | None:
    """Run the pending webhook of `record`; return "ok", "failed" or None when nothing was pending."""
    if record.after_step.get("status") != "pending":
        return None
    turn = record.turn
    webhook = (turn.scenario.sections or {}).get("tableWebhook") if turn.scenario else None
    if not webhook:
        _finish(record, {"status": "skipped", "reason": "the scenario no longer configures a webhook"})
        return None
    try:
        _post(webhook, _payload(record))
    except UpstreamError as exc:
        error = {"code": exc.code, "message": exc.message, "details": exc.details}
        _finish(record, {"status": "failed", "url": webhook["url"], "error": error})
        event_emit_for_turn(
            turn,
            "table.after_step_failed",
            {
                "step": "webhook",
                "url": webhook["url"],
                "error": error,
                "tables": record.tables,
                "tableWrite": "committed",  # the tables were written; only this after-step failed
            },
        )
        return "failed"
    _finish(record, {"status": "ok", "url": webhook["url"]})
    event_emit_for_turn(turn, "table.after_step_succeeded", {"step": "webhook", "url": webhook["url"]})
    return "ok"


def _post(webhook: dict[str, Any], payload: dict[str, Any]) -> None:
    parts = urlsplit(webhook["url"])
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request_id = new_request_id()
    with make_client(
        base_url=f"{parts.scheme}://{parts.netloc}", timeout_seconds=webhook["timeoutMs"] / 1000
    ) as client:
        post_json(client, path, service=SERVICE, json=payload, headers={"x-request-id": request_id})


def _payload(record: TableEditRecord) -> dict[str, Any]:
    """The written tables as of this turn's versions (later writes do not leak into this export)."""
    turn = record.turn
    return {
        "type": "table.updated",
        "turnId": turn.pk,
        "round": record.round,
        "userId": record.user_id,
        "conversationId": record.conversation_id,
        "tables": [_table_payload(entry) for entry in record.tables],
    }


def _table_payload(entry: dict[str, Any]) -> dict[str, Any]:
    table = MemoryTable.objects.filter(pk=entry["id"]).first()
    rows = (
        MemoryTableVersion.objects.filter(table_id=entry["id"], version=entry["version"])
        .values_list("rows", flat=True)
        .first()
    )
    return {
        "id": entry["id"],
        "index": entry["index"],
        "name": entry["name"],
        "version": entry["version"],
        "columns": table.columns if table else [],
        "rows": rows if rows is not None else [],
    }


def _finish(record: TableEditRecord, outcome: dict[str, Any]) -> None:
    record.after_step = outcome
    TableEditRecord.objects.filter(pk=record.pk).update(after_step=outcome)
