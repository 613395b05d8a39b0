"""The product-defined kind an adapter stores its items in, created on first use (shared by the adapters)."""

from __future__ import annotations

import contextlib
from typing import Any

from ._sync_client import MemoryHub
from .errors import Conflict, NotFound
from .models import Kind


def ensure_kind(hub: MemoryHub, kind: str, *, description: str, content_schema: dict[str, Any]) -> None:
    """Define `kind` for the product if it does not exist (searchable, `textField: text`). An existing kind the
    adapter cannot search (defined earlier, e.g. through the API with `searchable: false`) raises ValueError: its
    searches would find nothing, and `searchable` and `textField` cannot change after creation."""
    try:
        existing = hub.kinds.get(kind)
    except NotFound:
        existing = None
    if existing is not None:
        _check_searchable(existing)
        return
    with contextlib.suppress(Conflict):  # created concurrently ("already exists")
        hub.kinds.create(
            name=kind, description=description, content_schema=content_schema, searchable=True, text_field="text"
        )


def _check_searchable(kind: Kind) -> None:
    if kind["searchable"] and kind["textField"] == "text":
        return
    raise ValueError(
        f"the product's kind {kind['name']!r} is not searchable on the field 'text' (searchable: "
        f"{kind['searchable']}, textField: {kind['textField']!r}), so this store's searches would find nothing: "
        "pass another kind= (created on first use), or delete that kind first"
    )
