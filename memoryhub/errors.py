"""Domain errors with envelope codes. No HTTP here: memoryhub.api.handler alone maps them to status codes."""

from __future__ import annotations


class DomainError(Exception):
    """An error reported as `{"error": {"code", "message", "details"}}`; `code` is the envelope's code."""

    code = "invalid_request"

    def __init__(self, message: str, *, details: dict | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code:
            self.code = code


class InvalidRequest(DomainError):
    """The request is malformed or names something impossible."""


class InvalidMemory(DomainError):
    """A JSON memory document breaks the structural limits (depth, types)."""

    code = "invalid_memory"


class MemoryTooLarge(DomainError):
    """A JSON memory document is over the size limit."""

    code = "memory_too_large"


class PayloadTooLarge(DomainError):
    """A request (or a file it carries) is over a size limit; `details` names the limit."""

    code = "request_too_large"


class PromptTooLarge(DomainError):
    """The rendered prompt would be over the size limit (checked before it is built)."""

    code = "prompt_too_large"


class RejectedByPolicy(DomainError):
    """Well-formed, but refused by a rule (schema, admission, reused key)."""

    code = "rejected_by_policy"


class IdempotencyKeyReused(RejectedByPolicy):
    """An Idempotency-Key or operationId was sent again with a different request."""

    code = "idempotency_key_reused"


class Forbidden(DomainError):
    """The caller may not do this (e.g. a tool token outside its scope)."""

    code = "forbidden"


class NotFound(DomainError):
    """No such thing for this product (a foreign id is simply not found)."""

    code = "not_found"


class Conflict(DomainError):
    """The state of the resource does not allow the operation now."""

    code = "conflict"


class RevisionConflict(Conflict):
    """Compare-and-set lost: the stored revision is not the expected one.

    `details.currentRevision` always; `details.currentVersion` too where the resource names its field `version`.
    """

    code = "revision_conflict"

    def __init__(self, current: int, *, versioned: bool = False, message: str | None = None):
        details = {"currentRevision": current, **({"currentVersion": current} if versioned else {})}
        super().__init__(message or f"the stored revision is {current}; re-read and decide again", details=details)
        self.current = current


class RequestTimedOut(DomainError):
    """The request ran past the server's timeout (gunicorn's `worker_abort` raises it inside the request)."""

    code = "request_timeout"


class InternalInconsistency(DomainError):
    """The store answered something impossible (e.g. a commit that did not yield old + 1)."""

    code = "internal_inconsistency"
