"""How memoryhub writes times: ISO 8601 in UTC with a Z suffix, everywhere (API, exports, events)."""

from __future__ import annotations

import datetime

from django.db import connection


def iso(dt: datetime.datetime | None) -> str | None:
    """ISO 8601 in UTC with a Z suffix; None stays None."""
    if dt is None:
        return None
    return dt.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def sql_time(dt: datetime.datetime) -> object:
    """A time as a raw SQL parameter compares with the stored column: SQLite keeps naive UTC text
    ("2024-03-01 18:00:02"), and a bare aware datetime would be sent as "…+00:00", which compares as text,
    wrongly at equal times. PostgreSQL takes the datetime as it is."""
    return connection.ops.adapt_datetimefield_value(dt)
