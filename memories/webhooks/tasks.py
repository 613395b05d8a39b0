"""Celery interface of the webhooks: the beat sweep (attempts themselves are the turn_jobs job "webhook_delivery")."""

from __future__ import annotations

from celery import shared_task

from memoryhub import turn_jobs

from .services.deliveries import DELIVERY_JOB, deliveries_retry_due, messages_purge

# Rows and messages written under the former task name still run (see turn_jobs.legacy_task).
deliver = turn_jobs.legacy_task("webhooks.deliver", DELIVERY_JOB, params=("attempt", "trigger"))


@shared_task(name="webhooks.retry_due")
def retry_due() -> dict:
    return {"sent": deliveries_retry_due(), "purged": messages_purge()}
