"""Operation ids (SPEC L4): a write's result is stored in the same transaction as the write itself.

A repeat of a completed operation (same product, same id, same request) returns the stored result
and writes nothing, also after the process died between the commit and the response. The same id
with a different request is 422 `operation_id_reused`. Two concurrent requests with one id: the
unique constraint makes the loser's transaction roll back, and it answers with the winner's result.
"""
from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from memories.models import MemoryOperation, Product
from memoryhub.errors import DomainError, InvalidRequest, RejectedByPolicy

OPERATION_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
# Test-only fault injection: the process SIGKILLs itself right after committing one of these
# (comma-separated) operation ids, before the response is sent.
CRASH_ENV = "MEMORYHUB_CRASH_AFTER_COMMIT"


class OperationIdReused(RejectedByPolicy):
    code = "operation_id_reused"


@dataclass(frozen=True)
class Operation:
    """A write that carries an operationId, with the fingerprint of its request."""

    product: Product
    user_id: str
    operation_id: str
    action: str
    fingerprint: str


@dataclass(frozen=True)
class Outcome:
    status: int
    body: dict
    replayed: bool = False


def validate_operation_id(value: object, field: str = "operationId") -> str:
    if not isinstance(value, str) or not OPERATION_ID.fullmatch(value):
        raise InvalidRequest(f"{field} must be 1-128 characters of A-Za-z0-9_.:@-", details={"field": field})
    return value


def operation_replay(operation: Operation | None) -> Outcome | None:
    """The stored result of a completed operation, or None if it never completed."""
    if operation is None:
        return None
    row = MemoryOperation.objects.filter(product=operation.product, operation_id=operation.operation_id).first()
    if row is None:
        return None
    if row.fingerprint != operation.fingerprint:
        raise OperationIdReused(
            "this operationId was used for a different request; use a new id for a new operation",
            details={"operationId": operation.operation_id, "action": row.action},
        )
    return Outcome(row.status_code, row.response, replayed=True)


def operation_commit(operation: Operation | None, write: Callable[[], tuple[int, dict]]) -> Outcome:
    """Run `write` in a transaction together with the operation's record; on a lost race, replay the winner."""
    try:
        with transaction.atomic():
            status, body = write()
            if operation is not None:
                _record(operation, status, body)
                _crash_after_commit_if_asked(operation.operation_id)
    except IntegrityError:
        replay = operation_replay(operation)
        if replay is None:
            raise
        return replay
    return Outcome(status, body)


def _record(operation: Operation, status: int, body: dict) -> None:
    MemoryOperation.objects.create(
        product=operation.product, operation_id=operation.operation_id, user_id=operation.user_id,
        action=operation.action, fingerprint=operation.fingerprint, status_code=status, response=body,
    )


def _crash_after_commit_if_asked(operation_id: str) -> None:
    if operation_id in os.environ.get(CRASH_ENV, "").split(","):
        # Committed, response not sent: the exact window the SIGKILL test needs (R2, L4).
        transaction.on_commit(lambda: os.kill(os.getpid(), signal.SIGKILL))
