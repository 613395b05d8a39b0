"""Run-once: a write's result is stored in the same transaction as the write, and a repeat replays it.

Every way a client names a write goes through here: the `Idempotency-Key` header (kind
"idempotency-key", stored and replayed by the API edge as the HTTP response it was) and `operationId`
(kind "operation", docs/contract.md "Idempotency", stored and replayed by the services as their result). A repeat of a
completed write (same product, kind and key, same request fingerprint) returns the stored result and
writes nothing, also after the process died between the commit and the response. The same key with
another request is refused (422 `idempotency_key_reused` / `operation_id_reused`). Two concurrent
requests with one key: the unique constraint rolls the loser's transaction back, and it answers with
the winner's result.

`fingerprint` is the one canonical-JSON SHA-256 of the code base: request fingerprints and the
fingerprints task checkpoints and reports keep to recognise the same data again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from memories.models import Product, RunOnceRecord
from memoryhub import faults
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import DomainError, IdempotencyKeyReused, InvalidRequest, RejectedByPolicy

T = TypeVar("T")
M = TypeVar("M", bound=models.Model)

IDEMPOTENCY_KEY = RunOnceRecord.Kind.IDEMPOTENCY_KEY.value
OPERATION = RunOnceRecord.Kind.OPERATION.value
MAX_IDEMPOTENCY_KEY_LENGTH = 255
OPERATION_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")


class OperationIdReused(RejectedByPolicy):
    """An operationId was sent again with a different request."""

    code = "operation_id_reused"


def fingerprint(value: object) -> str:
    """SHA-256 of `value` as canonical JSON (sorted keys, compact, UTF-8)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def request_fingerprint(method: str, path: str, body: object) -> str:
    """What makes two requests "the same request" for a replay: method, path and body."""
    return fingerprint([method, path, body])


@dataclass(frozen=True)
class RunOnce:
    """A write that must take effect once: where its record goes and the fingerprint of what it asks."""

    product: Product
    kind: str
    key: str
    action: str
    fingerprint: str
    user_id: str = ""
    conversation_id: str = ""

    @classmethod
    def idempotency_key(cls, address: ConversationAddress, key: str, action: str, request_hash: str) -> RunOnce:
        if not 0 < len(key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
            raise InvalidRequest(
                f"Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY_LENGTH} characters",
                details={"header": "Idempotency-Key"},
            )
        product = address.product
        return cls(product, IDEMPOTENCY_KEY, key, action, request_hash, address.user_id, address.conversation_id)

    @classmethod
    def operation(cls, product: Product, user_id: str, operation_id: str, action: str, request_hash: str) -> RunOnce:
        return cls(product, OPERATION, operation_id, action, request_hash, user_id)

    @property
    def operation_id(self) -> str:
        """The key as the history rows record it ("" unless this is an operationId)."""
        return self.key if self.kind == OPERATION else ""


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How a result is stored (JSON) and what a stored result replays as."""

    encode: Callable[[T], dict]
    decode: Callable[[dict], T]


def replay(request: RunOnce | None, codec: Codec[T]) -> T | None:
    """The stored result of a completed write, or None if it never completed; a reused key raises."""
    if request is None:
        return None
    record = RunOnceRecord.objects.filter(product=request.product, kind=request.kind, key=request.key).first()
    if record is None:
        return None
    if record.fingerprint != request.fingerprint:
        raise _reused(request, record)
    return codec.decode(record.result)


def commit(request: RunOnce | None, write: Callable[[], T], codec: Codec[T]) -> T:
    """Run `write` in one transaction with the request's record; if a concurrent twin won, replay its result."""
    try:
        with transaction.atomic():
            result = write()
            if request is not None:
                _record(request, codec.encode(result))
                faults.crash_after_commit(request.key)
    except (DomainError, IntegrityError):
        # The unique constraint (or the write itself) lost to a concurrent request with the same key.
        replayed = replay(request, codec)
        if replayed is None:
            raise
        return replayed
    return result


def run_once(request: RunOnce | None, perform: Callable[[], T], codec: Codec[T]) -> T:
    """`perform` once per key: the stored result when it already ran, else its result, stored with it."""
    replayed = replay(request, codec)
    if replayed is not None:
        return replayed
    return commit(request, perform, codec)


def idempotency_keys_purge() -> int:
    """Delete Idempotency-Key records older than the retention (operationId records are kept)."""
    cutoff = timezone.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_RETENTION_HOURS)
    deleted, _ = RunOnceRecord.objects.filter(kind=IDEMPOTENCY_KEY, created_at__lt=cutoff).delete()
    return deleted


# ---------------------------------------------------------------------------------------------
# Storing model instances as results (a replay rebuilds them, unsaved, as they were at the write)
# ---------------------------------------------------------------------------------------------


def snapshot(instance: models.Model, fields: Iterable[str]) -> dict[str, Any]:
    """The named fields (attnames such as `product_id` included) as JSON; times in ISO 8601."""
    values = {name: getattr(instance, name) for name in fields}
    return {name: value.isoformat() if isinstance(value, datetime) else value for name, value in values.items()}


def restore(model: type[M], values: dict[str, Any]) -> M:
    """An unsaved instance carrying a snapshot's values, parsed back by each field."""
    return model(**{name: _field(model, name).to_python(value) for name, value in values.items()})


def _field(model: type[models.Model], name: str) -> models.Field:
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):  # a reverse relation is not a stored value
        raise TypeError(f"{model.__name__}.{name} is not a field")
    return field


def _record(request: RunOnce, result: dict) -> None:
    RunOnceRecord.objects.create(
        product=request.product,
        kind=request.kind,
        key=request.key,
        user_id=request.user_id,
        conversation_id=request.conversation_id,
        action=request.action,
        fingerprint=request.fingerprint,
        result=result,
    )


def _reused(request: RunOnce, record: RunOnceRecord) -> DomainError:
    if request.kind == OPERATION:
        return OperationIdReused(
            "this operationId was used for a different request; use a new id for a new operation",
            details={"operationId": request.key, "action": record.action},
        )
    return IdempotencyKeyReused(
        "this Idempotency-Key was used with a different request", details={"header": "Idempotency-Key"}
    )
