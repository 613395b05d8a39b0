"""URL converters: row ids in paths are integers a database column can hold.

Django's `int` converter takes any number of digits; an id past a bigint's range then fails in the database
(SQLite: OverflowError, PostgreSQL: "bigint out of range") as a 500. `<id:…>` matches at most 18 digits, so
a longer one is simply not found (404); the OpenAPI schema says so (SPECTACULAR_SETTINGS).
"""

from __future__ import annotations

MAX_ROW_ID = 10**18 - 1  # below 2**63 - 1, a bigint's maximum


class RowIdConverter:
    regex = f"[0-9]{{1,{len(str(MAX_ROW_ID))}}}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)
