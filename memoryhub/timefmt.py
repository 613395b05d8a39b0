"""How memoryhub writes times: ISO 8601 in UTC with a Z suffix, everywhere (API, exports, events)."""

from __future__ import annotations

import datetime


def iso(dt: datetime.datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z suffix; None stays None."""
    if dt is None:
        return None
    return dt.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")
