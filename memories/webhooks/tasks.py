"""Celery interface of the webhooks: thin tasks, idempotent (an attempt is claimed once, see services)."""

from __future__ import annotations

from celery import shared_task

from .services.deliveries import deliveries_retry_due, delivery_attempt, messages_purge


@shared_task(name="webhooks.deliver", acks_late=True)
def deliver(webhookdelivery_pk: int, attempt: int = 0, trigger: str = "auto") -> str:
    made = delivery_attempt(delivery_pk=webhookdelivery_pk, attempt=attempt, trigger=trigger)
    return made.outcome if made else "skipped"


@shared_task(name="webhooks.retry_due")
def retry_due() -> dict:
    return {"sent": deliveries_retry_due(), "purged": messages_purge()}
