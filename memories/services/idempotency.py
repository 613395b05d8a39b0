"""Idempotency-Key handling: the first successful response is stored with the write, in one transaction."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.models import IdempotencyRecord, Product
from memoryhub.errors import DomainError, IdempotencyKeyReused, InvalidRequest

MAX_KEY_LENGTH = 255


def request_fingerprint(method: str, path: str, body: object) -> str:
    canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def idempotent_call(
    *, product: Product, key: str | None, fingerprint: str, perform: Callable[[], tuple[int, dict]]
) -> tuple[int, dict, bool]:
    """Run `perform` once per (product, key); return (status, body, replayed)."""
    if key is None:
        status, body = perform()
        return status, body, False
    if not 0 < len(key) <= MAX_KEY_LENGTH:
        raise InvalidRequest(f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} characters", details={"header": "Idempotency-Key"})
    replay = _replay(product, key, fingerprint)
    if replay:
        return (*replay, True)
    try:
        with transaction.atomic():
            status, body = perform()
            IdempotencyRecord.objects.create(
                product=product, key=key, request_hash=fingerprint, status_code=status, response=body
            )
        return status, body, False
    except (DomainError, IntegrityError):
        # A concurrent request with the same key may have won meanwhile: answer with its result.
        replay = _replay(product, key, fingerprint)
        if replay:
            return (*replay, True)
        raise


def _replay(product: Product, key: str, fingerprint: str) -> tuple[int, dict] | None:
    record = IdempotencyRecord.objects.filter(product=product, key=key).first()
    if record is None:
        return None
    if record.request_hash != fingerprint:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used with a different request", details={"header": "Idempotency-Key"}
        )
    return record.status_code, record.response


def idempotency_records_purge() -> int:
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_RETENTION_HOURS)
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
