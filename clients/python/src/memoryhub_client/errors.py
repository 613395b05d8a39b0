"""Every error envelope `{"error": {"code", "message", "details"}}` as a typed exception.

The class is chosen by `code` (docs/contract.md, "The error envelope"); a code this client does not know
falls back to the class of its HTTP status, so a new server code never becomes a bare Exception.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "BudgetExceeded",
    "ClaimAlreadyCommitted",
    "Conflict",
    "DependencyUnavailable",
    "EmbeddingIndexMismatch",
    "ErasureInProgress",
    "ExportNotReady",
    "Forbidden",
    "IdempotencyKeyReused",
    "InternalError",
    "KindInUse",
    "LengthRequired",
    "MaxPerUserReached",
    "MemoryHubConnectionError",
    "MemoryHubError",
    "MemorySuperseded",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "OperationIdReused",
    "PayloadTooLarge",
    "RateLimited",
    "RejectedByPolicy",
    "RequestTimeout",
    "RevisionConflict",
    "ServiceUnavailable",
    "StorageUnavailable",
    "TurnStateConflict",
    "Unauthenticated",
    "UnsupportedMediaType",
    "UpstreamError",
    "UpstreamTimeout",
    "ValidationError",
    "WebhookRefused",
    "error_from_response",
]


class MemoryHubError(Exception):
    """An error answer of the server: `status`, the envelope's `code`, `message` and `details`."""

    # Set by `MemoryHubVectorStore.add_documents` (and `aadd_documents`) on the error that stopped it: the ids of
    # the documents this call had written before it, in order. None on an error raised anywhere else.
    written_ids: list[str] | None = None
    # Set by `MemoryHubStore.batch` (and `abatch`, and the `put`/`delete` built on them) on the error that stopped
    # it: the (namespace, key) of each PutOp (a put or a delete) it had applied before it, in order. None elsewhere.
    written_keys: list[tuple[tuple[str, ...], str]] | None = None

    def __init__(
        self, status: int, code: str, message: str, details: Mapping[str, Any] | None = None, headers: Any = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" {dict(details)}" if details else ""))
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.headers: Mapping[str, str] = headers or {}


class MemoryHubConnectionError(MemoryHubError):
    """No answer at all (connection refused, reset, timed out) after the retries this request allowed."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "connection_error", message)


class BadRequest(MemoryHubError):
    """400: the request is malformed."""


class ValidationError(BadRequest):
    """400 `invalid_request` / `invalid_id` / `invalid_memory`: `details` names the place (field, path, fields)."""


class Unauthenticated(MemoryHubError):
    """401: no, unknown or revoked API key, or an expired or revoked tool token."""


class Forbidden(MemoryHubError):
    """403: a tool token used beyond its scope."""


class NotFound(MemoryHubError):
    """404: no such resource in this product (another product's id too)."""


class MethodNotAllowed(MemoryHubError):
    """405."""


class NotAcceptable(MemoryHubError):
    """406."""


class Conflict(MemoryHubError):
    """409: a compare-and-set lost, or the resource is in another state."""


class RevisionConflict(Conflict):
    """409 `revision_conflict`: re-read and decide again. `current_revision` is the stored revision."""

    @property
    def current_revision(self) -> int | None:
        value = self.details.get("currentRevision")
        return value if isinstance(value, int) else None

    @property
    def current_version(self) -> int | None:
        value = self.details.get("currentVersion", self.details.get("currentRevision"))
        return value if isinstance(value, int) else None


class TurnStateConflict(Conflict):
    """409: the turn (or task, claim, report, lorebook proposal or entry) is already in another state."""


class ErasureInProgress(Conflict):
    """409 `erasure_in_progress`."""


class KindInUse(Conflict):
    """409 `kind_in_use`: the kind still has memories (`details.memories`)."""


class MemorySuperseded(Conflict):
    """409 `memory_superseded`: a newer memory answers the same single-valued field."""


class ExportNotReady(Conflict):
    """409 `export_not_ready`."""


class AlreadyExists(Conflict):
    """409 `already_exists`."""


class ClaimAlreadyCommitted(Conflict):
    """409 `claim_already_committed` (Hinos)."""


class LengthRequired(MemoryHubError):
    """411: a chunked body was refused."""


class PayloadTooLarge(MemoryHubError):
    """413: memory, request, prompt or import over its limit (`details` names the limit)."""


class UnsupportedMediaType(MemoryHubError):
    """415."""


class RejectedByPolicy(MemoryHubError):
    """422: valid, but a rule refuses it (`details.reason` for long-term admission)."""

    @property
    def reason(self) -> str | None:
        value = self.details.get("reason")
        return value if isinstance(value, str) else None


class IdempotencyKeyReused(RejectedByPolicy):
    """422 `idempotency_key_reused`: the same Idempotency-Key with another body."""


class OperationIdReused(RejectedByPolicy):
    """422 `operation_id_reused`: the same operationId with another request."""


class BudgetExceeded(RejectedByPolicy):
    """422 `budget_exceeded`."""


class MaxPerUserReached(RejectedByPolicy):
    """422 `max_per_user_reached`."""


class WebhookRefused(RejectedByPolicy):
    """422 `webhook_target_refused` / `webhook_limit_reached`."""


class RateLimited(MemoryHubError):
    """429 `rate_limited`: `retry_after` is the server's Retry-After in seconds (None if it sent none)."""

    @property
    def retry_after(self) -> float | None:
        return parse_retry_after(self.headers.get("retry-after"))


class InternalError(MemoryHubError):
    """500 `internal_error` / `internal_inconsistency`: a bug; nothing was committed."""


class UpstreamError(MemoryHubError):
    """502 `upstream_failed` / `upstream_error`: an outbound service (embeddings, summariser, Hinos) failed."""


class ServiceUnavailable(MemoryHubError):
    """503: a dependency is down or not ready (`details.dependency`)."""


class StorageUnavailable(ServiceUnavailable):
    """503 `storage_unavailable`: the database or Redis is down."""


class EmbeddingIndexMismatch(ServiceUnavailable):
    """503 `embedding_index_mismatch`: run `manage.py reindex_embeddings`."""


class DependencyUnavailable(ServiceUnavailable):
    """503 `dependency_unavailable`: the embedder or another dependency is down."""


class RequestTimeout(ServiceUnavailable):
    """503 `request_timeout`: the request ran past the server's timeout; it was rolled back."""


class UpstreamTimeout(MemoryHubError):
    """504 `upstream_timeout`."""


_BY_CODE: dict[str, type[MemoryHubError]] = {
    "invalid_request": ValidationError,
    "invalid_id": ValidationError,
    "invalid_memory": ValidationError,
    "invalid_export": ValidationError,
    "invalid_state_candidate": RejectedByPolicy,
    "client_id_conflict": RejectedByPolicy,
    "unknown_turn": RejectedByPolicy,
    "unauthenticated": Unauthenticated,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "not_acceptable": NotAcceptable,
    "conflict": Conflict,
    "revision_conflict": RevisionConflict,
    "anchor_conflict": Conflict,
    "input_conflict": Conflict,
    "stage_already_committed": Conflict,
    "turn_already_completed": TurnStateConflict,
    "turn_already_committed": TurnStateConflict,
    "turn_not_acceptable": TurnStateConflict,
    "turn_not_selectable": TurnStateConflict,
    "turn_superseded": TurnStateConflict,
    "message_superseded": TurnStateConflict,
    "task_not_started": TurnStateConflict,
    "report_already_published": TurnStateConflict,
    "erasure_in_progress": ErasureInProgress,
    "kind_in_use": KindInUse,
    "memory_superseded": MemorySuperseded,
    "memory_rolled_back": MemorySuperseded,
    "export_not_ready": ExportNotReady,
    "proposal_decided": TurnStateConflict,
    "entry_deleted": TurnStateConflict,
    "already_exists": AlreadyExists,
    "claim_already_committed": ClaimAlreadyCommitted,
    "length_required": LengthRequired,
    "memory_too_large": PayloadTooLarge,
    "request_too_large": PayloadTooLarge,
    "prompt_too_large": PayloadTooLarge,
    "import_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "rejected_by_policy": RejectedByPolicy,
    "idempotency_key_reused": IdempotencyKeyReused,
    "operation_id_reused": OperationIdReused,
    "budget_exceeded": BudgetExceeded,
    "max_per_user_reached": MaxPerUserReached,
    "webhook_target_refused": WebhookRefused,
    "webhook_limit_reached": WebhookRefused,
    "rate_limited": RateLimited,
    "internal_error": InternalError,
    "internal_inconsistency": InternalError,
    "upstream_failed": UpstreamError,
    "upstream_error": UpstreamError,
    "upstream_timeout": UpstreamTimeout,
    "storage_unavailable": StorageUnavailable,
    "embedding_index_mismatch": EmbeddingIndexMismatch,
    "dependency_unavailable": DependencyUnavailable,
    "request_timeout": RequestTimeout,
}

_BY_STATUS: dict[int, type[MemoryHubError]] = {
    400: BadRequest,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    411: LengthRequired,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: RejectedByPolicy,
    429: RateLimited,
    500: InternalError,
    502: UpstreamError,
    503: ServiceUnavailable,
    504: UpstreamTimeout,
}

KNOWN_CODES = frozenset(_BY_CODE)


def error_class(status: int, code: str) -> type[MemoryHubError]:
    if code in _BY_CODE:
        return _BY_CODE[code]
    return _BY_STATUS.get(status, MemoryHubError)


def error_from_response(status: int, body: object, headers: Mapping[str, str]) -> MemoryHubError:
    """The exception for an error answer; a body that is not the envelope (a proxy's page) keeps its status."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    else:
        code, message, details = f"http_{status}", "the answer is not memoryhub's error envelope", {}
    return error_class(status, code)(status, code, message, details, headers)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
