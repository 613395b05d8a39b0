"""Domain errors with envelope codes; the one handler maps them to HTTP."""
from __future__ import annotations

from rest_framework import status


class ApiError(Exception):
    """An error the API reports as `{"error": {"code", "message", "details"}}`."""

    status_code = status.HTTP_400_BAD_REQUEST
    code = "invalid_request"

    def __init__(self, message: str, *, details: dict | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code:
            self.code = code


class InvalidRequest(ApiError):
    pass


class InvalidMemory(ApiError):
    code = "invalid_memory"


class MemoryTooLarge(ApiError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    code = "memory_too_large"


class RejectedByPolicy(ApiError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    code = "rejected_by_policy"


class IdempotencyKeyReused(ApiError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    code = "idempotency_key_reused"


class Forbidden(ApiError):
    status_code = status.HTTP_403_FORBIDDEN
    code = "forbidden"


class NotFound(ApiError):
    status_code = status.HTTP_404_NOT_FOUND
    code = "not_found"


class Conflict(ApiError):
    status_code = status.HTTP_409_CONFLICT
    code = "conflict"


class RevisionConflict(Conflict):
    """Compare-and-set lost: the stored revision (or version) is not the expected one."""

    code = "revision_conflict"

    def __init__(self, current: int, *, field: str = "currentRevision", message: str | None = None):
        super().__init__(
            message or f"the stored revision is {current}; re-read and decide again", details={field: current}
        )
        self.current = current


class NotImplementedYet(ApiError):
    status_code = status.HTTP_501_NOT_IMPLEMENTED
    code = "not_implemented"


class StorageUnavailable(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    code = "storage_unavailable"


class InternalInconsistency(ApiError):
    """The store answered something impossible (e.g. a commit that did not yield old + 1)."""

    status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
    code = "internal_inconsistency"
