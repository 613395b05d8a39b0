"""The product-defined kind an adapter stores its items in, created on first use (shared by the adapters)."""

from __future__ import annotations

import contextlib
from typing import Any

from ._sync_client import MemoryHub
from .errors import Conflict, NotFound


def ensure_kind(hub: MemoryHub, kind: str, *, description: str, content_schema: dict[str, Any]) -> None:
    """Define `kind` for the product if it does not exist (searchable, `textField: text`)."""
    try:
        hub.kinds.get(kind)
        return
    except NotFound:
        pass
    with contextlib.suppress(Conflict):  # created concurrently ("already exists")
        hub.kinds.create(
            name=kind, description=description, content_schema=content_schema, searchable=True, text_field="text"
        )
