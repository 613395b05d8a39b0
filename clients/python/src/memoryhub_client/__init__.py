"""memoryhub's Python client: `MemoryHub` (sync) and `AsyncMemoryHub` (async), over httpx.

    hub = MemoryHub("http://127.0.0.1:8000", "mhk_…")
    doc = hub.memory("alice", "c1").get()          # doc.revision, doc.memory
    hub.memory("alice", "c1").put(expected_revision=doc.revision, memory={"pet": "cat"})

Importing the package does nothing else (no network, no logging set-up). Docs: docs/clients.md.
"""

from . import errors, models
from ._async_client import AsyncConversation, AsyncMemoryHub
from ._core import RetryPolicy, new_key
from ._sync_client import Conversation, MemoryHub
from .errors import (
    Conflict,
    MemoryHubConnectionError,
    MemoryHubError,
    NotFound,
    RateLimited,
    RejectedByPolicy,
    RevisionConflict,
    ServiceUnavailable,
    Unauthenticated,
    ValidationError,
)
from .models import MemoryDocument

__version__ = "0.1.0"

__all__ = [
    "AsyncConversation",
    "AsyncMemoryHub",
    "Conflict",
    "Conversation",
    "MemoryDocument",
    "MemoryHub",
    "MemoryHubConnectionError",
    "MemoryHubError",
    "NotFound",
    "RateLimited",
    "RejectedByPolicy",
    "RetryPolicy",
    "RevisionConflict",
    "ServiceUnavailable",
    "Unauthenticated",
    "ValidationError",
    "errors",
    "models",
    "new_key",
]
