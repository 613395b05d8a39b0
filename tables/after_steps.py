"""After-steps: optional work after a turn's edits replaced tables (docs/tables.md, "After-steps").

The one after-step is a webhook: the scenario's `tableWebhook` gets a POST with the rows of every table the
turn wrote. It runs after the table transaction committed, so its failure can neither roll back nor hide
the write: it is recorded on the TableEditRecord and as a `table.after_step_failed` event. The URL is checked and
sent to as a webhook's is (memories/webhooks/targets.py, sender.py): public addresses only. A task that is
redelivered before the outcome was recorded posts again (at-least-once delivery).
"""

from __future__ import annotations

import json
from typing import Any

from memories.services.events import event_emit_for_turn
from memories.webhooks import sender, targets
from memoryhub.clients.errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from memoryhub.clients.http import new_request_id
from memoryhub.errors import DomainError
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
    """POST to the URL as webhooks are sent: its host checked again now and the request pinned to the checked
    address (docs/security.md: a loopback, private or metadata address is refused, redirects are not followed)."""
    try:
        target = targets.check(webhook["url"])
    except DomainError as exc:
        raise UpstreamUnavailable(f"{SERVICE} target refused: {exc.message}", service=SERVICE) from None
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = {"content-type": "application/json", "x-request-id": new_request_id()}
    result = sender.send(target, headers=headers, body=body, timeout_seconds=webhook["timeoutMs"] / 1000)
    if result.outcome == "timeout":
        raise UpstreamTimeout(f"{SERVICE} did not answer in time", service=SERVICE)
    if result.outcome == "network_error":
        raise UpstreamUnavailable(f"{SERVICE} is unreachable: {result.error}", service=SERVICE)
    if result.outcome != "success":
        details = {"status": result.status_code, "body": result.excerpt[:500]}
        raise UpstreamUnavailable(f"{SERVICE} answered HTTP {result.status_code}", service=SERVICE, details=details)


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
