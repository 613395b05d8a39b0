"""Emit events to a product's endpoints, attempt deliveries, retry them with backoff, redeliver on request.

A published event becomes one WebhookMessage (its exact payload) and one WebhookDelivery per subscribed,
enabled endpoint, written in the publisher's transaction. Every attempt is the registered job "webhook_delivery"
(memoryhub/turn_jobs.py) scheduled through the outbox: the first in the publisher's transaction, later ones by
the beat sweep `webhooks.retry_due` when their time comes. An attempt is claimed by a compare-and-set on the
delivery's attempt counter, so duplicate jobs never send twice.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memoryhub import turn_jobs
from memoryhub.events import DomainEvent
from memoryhub.timefmt import iso

from .. import sender, signing, targets
from ..models import DELIVERED, FAILED, PENDING, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookMessage
from .endpoints import secrets_in_use, subscribed

logger = logging.getLogger(__name__)

# The registered job of every attempt (memories/webhooks/apps.py), run by turn_jobs' generic task.
DELIVERY_JOB = "webhook_delivery"
# How long a claimed attempt may take before the sweep may send the delivery again (worker lost mid-attempt).
LEASE_SLACK_SECONDS = 60


# ----------------------------------------------------------------------------------------------- emit


def on_event(event: DomainEvent) -> None:
    """The memoryhub.events subscriber: nothing is written unless an enabled endpoint wants the event."""
    if getattr(event.product, "webhook_endpoints_enabled", None) == 0:
        return  # the product row read with this request/task says it has none: no query on the hot path
    enabled = WebhookEndpoint.objects.filter(product_id=event.product_id, enabled=True)
    endpoints = [e for e in enabled if subscribed(e, event.type)]
    if not endpoints:
        return
    with transaction.atomic():  # the publisher's transaction when it has one (a savepoint), else our own
        message_emit(event, endpoints)


def message_emit(event: DomainEvent, endpoints: list[WebhookEndpoint]) -> WebhookMessage:
    now = timezone.now()
    message = WebhookMessage(
        product_id=event.product_id, user_id=event.user, conversation_id=event.conversation or "", type=event.type
    )
    message.payload = {
        "type": event.type,
        "id": message.id,
        "timestamp": iso(now),
        "product": event.product_id,
        "user": event.user,
        **({"conversation": event.conversation} if event.conversation else {}),
        "data": event.data,
    }
    message.save(force_insert=True)
    for endpoint in endpoints:
        delivery = WebhookDelivery.objects.create(
            message=message, endpoint=endpoint, next_attempt_at=now + _sweep_grace()
        )
        _schedule(delivery.pk, attempt=0, key="first")
    return message


def _schedule(delivery_pk: int, *, attempt: int, key: str, trigger: str = "auto") -> None:
    # The job's subject is `webhookdelivery_pk`: erasing the user also removes the outbox rows naming their deliveries.
    turn_jobs.schedule(DELIVERY_JOB, delivery_pk, key=key, attempt=attempt, trigger=trigger)


def _sweep_grace() -> timedelta:
    # The outbox sends the first attempt; the sweep steps in only if that has not happened by then.
    return timedelta(seconds=settings.OUTBOX_REDISPATCH_AFTER_SECONDS + LEASE_SLACK_SECONDS)


# ----------------------------------------------------------------------------------------------- attempt


def delivery_job_run(delivery_pk: int, job_attempt: turn_jobs.Attempt, attempt: int = 0, trigger: str = "auto") -> str:
    """The job: `attempt` is the delivery's attempt counter it claims (not the job's retry, `job_attempt`)."""
    made = delivery_attempt(delivery_pk=delivery_pk, attempt=attempt, trigger=trigger)
    return made.outcome if made else "skipped"


def delivery_attempt(*, delivery_pk: int, attempt: int, trigger: str = "auto") -> WebhookAttempt | None:
    """Make attempt `attempt + 1` of the delivery, unless another job made it already (then None)."""
    now = timezone.now()
    lease = timedelta(seconds=settings.WEBHOOK_TIMEOUT_MS / 1000 + LEASE_SLACK_SECONDS)
    claimed = WebhookDelivery.objects.filter(pk=delivery_pk, status=PENDING, attempts=attempt).update(
        attempts=F("attempts") + 1, next_attempt_at=now + lease
    )
    if not claimed:
        return None  # delivered, given up, gone, or this attempt was made by a duplicate job
    delivery = WebhookDelivery.objects.select_related("message", "endpoint").get(pk=delivery_pk)
    result = _send(delivery, now, _time_left(delivery, attempt, trigger, now))
    return _record(delivery, attempt + 1, trigger, result)


def _time_left(delivery: WebhookDelivery, attempt: int, trigger: str, now: datetime) -> float:
    """The timeout of this attempt: WEBHOOK_TIMEOUT_MS, and for a first attempt no more than what is left of
    the event's WEBHOOK_EVENT_DEADLINE_SECONDS (shared by all its endpoints: slow ones cannot add up)."""
    timeout = settings.WEBHOOK_TIMEOUT_MS / 1000
    if attempt > 0 or trigger != "auto":
        return timeout
    deadline = delivery.message.created_at + timedelta(seconds=settings.WEBHOOK_EVENT_DEADLINE_SECONDS)
    return min(timeout, (deadline - now).total_seconds())


def _send(delivery: WebhookDelivery, now: datetime, timeout: float) -> sender.SendResult:
    if not delivery.endpoint.enabled:  # disabled after the event: nothing goes out; retried in case it comes back
        return sender.SendResult("refused", None, 0, error="the endpoint is disabled")
    try:
        target = targets.check(delivery.endpoint.url)  # again now: the name may resolve elsewhere (rebinding)
    except targets.TargetRefused as exc:
        return sender.SendResult("refused", None, 0, error=exc.message[:500])
    if timeout <= 0:  # nothing sent: the retry (after the backoff) has its own timeout
        error = "the event's delivery deadline (WEBHOOK_EVENT_DEADLINE_SECONDS) passed before this attempt"
        return sender.SendResult("timeout", None, 0, error=error)
    body = json.dumps(delivery.message.payload, separators=(",", ":"), ensure_ascii=False).encode()
    headers = signed_headers(delivery, body, now)
    return sender.send(target, headers=headers, body=body, timeout_seconds=timeout)


def signed_headers(delivery: WebhookDelivery, body: bytes, now: datetime) -> dict[str, str]:
    """The Standard Webhooks headers; the timestamp is the attempt's (receivers refuse stale ones)."""
    timestamp = int(now.timestamp())
    secrets = secrets_in_use(delivery.endpoint, now)
    return {
        "content-type": "application/json",
        "user-agent": "memoryhub-webhooks",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signing.signature_header(secrets, delivery.message_id, timestamp, body),
    }


def _record(delivery: WebhookDelivery, number: int, trigger: str, result: sender.SendResult) -> WebhookAttempt:
    now = timezone.now()
    fields: dict = {"last_status_code": result.status_code, "last_error": result.error[:500]}
    if result.outcome == WebhookAttempt.SUCCESS:
        fields.update(status=DELIVERED, delivered_at=now, next_attempt_at=None, last_error="")
    else:
        fields.update(_after_failure(delivery, number, now))
    with transaction.atomic():
        attempt = WebhookAttempt.objects.create(
            delivery=delivery,
            number=number,
            trigger=trigger,
            outcome=result.outcome,
            status_code=result.status_code,
            latency_ms=result.latency_ms,
            response_excerpt=result.excerpt,
            error=result.error[:500],
        )
        WebhookDelivery.objects.filter(pk=delivery.pk, attempts=number).update(**fields)
    if result.outcome != WebhookAttempt.SUCCESS:
        logger.info("webhook delivery %s attempt %s: %s %s", delivery.pk, number, result.outcome, result.status_code)
    return attempt


def retry_delay(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed attempt: WEBHOOK_RETRY_BASE_SECONDS doubling, capped."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS
    return timedelta(seconds=min(base * 2 ** min(attempts - 1, 30), settings.WEBHOOK_RETRY_MAX_SECONDS))


def _after_failure(delivery: WebhookDelivery, number: int, now: datetime) -> dict:
    due = now + retry_delay(number)
    window_ends = delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS)
    if due > window_ends:
        return {"status": FAILED, "next_attempt_at": None}  # the retry window is over: give up
    return {"next_attempt_at": due}


# ----------------------------------------------------------------------------------------------- retries


def deliveries_retry_due(*, now: datetime | None = None, limit: int = 200) -> int:
    """The beat sweep: schedule every pending delivery whose time has come; answer how many were scheduled.

    The due time is pushed back by the lease first, in the transaction writing the attempt's outbox row, so the
    next sweep does not send the same one again while it waits in the queue; the attempt counter decides which
    job really attempts.
    """
    now = now or timezone.now()
    lease = timedelta(seconds=settings.WEBHOOK_TIMEOUT_MS / 1000 + LEASE_SLACK_SECONDS)
    due = list(
        WebhookDelivery.objects.filter(status=PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("pk", "attempts")[:limit]
    )
    sent = 0
    for pk, attempts in due:
        with transaction.atomic():
            claimed = WebhookDelivery.objects.filter(pk=pk, attempts=attempts, status=PENDING)
            if claimed.update(next_attempt_at=now + lease):
                # A sweep after a lost worker's lease sends the same attempt again: the time tells the rows apart.
                _schedule(pk, attempt=attempts, key=f"sweep:{attempts}:{now.timestamp():.6f}")
                sent += 1
    return sent


def delivery_redeliver(*, delivery: WebhookDelivery) -> None:
    """Send the delivery again now (the operator's "redeliver"), whatever its status; same webhook-id."""
    with transaction.atomic():
        # Due after the sweep's grace, as a first attempt is: the redeliver job makes this attempt, and a sweep
        # running meanwhile must not claim it as an automatic one.
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=PENDING, next_attempt_at=timezone.now() + _sweep_grace()
        )
        delivery.refresh_from_db(fields=["attempts", "status", "next_attempt_at"])
        _schedule(delivery.pk, attempt=delivery.attempts, key=f"redeliver:{delivery.attempts}", trigger="redeliver")


def messages_purge(*, now: datetime | None = None) -> int:
    """Delete messages older than WEBHOOK_RETENTION_HOURS that have nothing pending (attempt logs go with them)."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.WEBHOOK_RETENTION_HOURS)
    old = WebhookMessage.objects.filter(created_at__lt=cutoff).exclude(deliveries__status=PENDING)
    deleted, _ = old.delete()
    return deleted
