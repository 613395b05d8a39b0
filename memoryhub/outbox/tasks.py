"""The beat task of the outbox: `celery -A memoryhub beat` runs it every OUTBOX_RELAY_INTERVAL_SECONDS."""

from __future__ import annotations

from celery import shared_task

from .services import outbox_relay


@shared_task(name="outbox.relay", ignore_result=True)
def relay_outbox() -> dict[str, int]:
    report = outbox_relay()
    return {"due": report.due, "sent": report.sent, "failed": report.failed, "purged": report.purged}
