"""The scenario sections this app owns: "tables" (templates) and "tableWebhook" (the optional after-step).

Both the scenario API and the admin form reach these validators through memoryhub.runtimes.registry, so an
operator and a product see the same errors, each naming its field (e.g. `tables[1].columns`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from memories.webhooks import targets
from memoryhub.errors import DomainError, InvalidRequest
from memoryhub.runtimes.registry import SectionInvalid
from memoryhub.wording import count
from tables.applying import RULE_KEYS
from tables.presets import plugin_default_tables

# Named presets a scenario may give instead of a list ("tables": "plugin-defaults").
PRESETS = {"plugin-defaults": plugin_default_tables}
TEMPLATE_FIELDS = {"name", "columns", "note", "rules", "required", "maxRows"}
MAX_TABLES = 32
MAX_COLUMNS = 32
MAX_NAME = 100
MAX_TEXT = 2000
WEBHOOK_FIELDS = {"url", "timeoutMs"}
DEFAULT_WEBHOOK_TIMEOUT_MS = 5000


def validate_tables_section(value: object) -> list[dict[str, Any]]:
    """Return the normalized template list; a preset name expands to its templates."""
    if value is None:
        return []
    if isinstance(value, str):
        if value not in PRESETS:
            raise SectionInvalid({"tables": f"unknown preset {value!r}; one of: {', '.join(PRESETS)}, or a list"})
        return PRESETS[value]()
    if not isinstance(value, list):
        raise SectionInvalid({"tables": "must be a list of table templates or a preset name"})
    if len(value) > MAX_TABLES:
        raise SectionInvalid({"tables": f"at most {MAX_TABLES} tables"})
    errors: dict[str, str] = {}
    templates = [_template(index, item, errors) for index, item in enumerate(value)]
    _check_unique_names(templates, errors)
    if errors:
        raise SectionInvalid(errors)
    return templates


def _template(index: int, item: object, errors: dict[str, str]) -> dict[str, Any]:
    where = f"tables[{index}]"
    if not isinstance(item, dict):
        errors[where] = "must be an object with name, columns, note, rules, required, maxRows"
        return {}
    for key in sorted(set(item) - TEMPLATE_FIELDS):
        errors[f"{where}.{key}"] = "unknown field"
    return {
        "name": _name(item.get("name"), f"{where}.name", errors),
        "columns": _columns(item.get("columns"), f"{where}.columns", errors),
        "note": _text(item.get("note", ""), f"{where}.note", errors),
        "rules": _rules(item.get("rules", {}), f"{where}.rules", errors),
        "required": _boolean(item.get("required", False), f"{where}.required", errors),
        "maxRows": _max_rows(item.get("maxRows"), f"{where}.maxRows", errors),
    }


def _name(value: object, field: str, errors: dict[str, str]) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME or "\n" in value:
        errors[field] = f"required: a non-empty single-line string of at most {MAX_NAME} characters"
        return ""
    return value.strip()


def _columns(value: object, field: str, errors: dict[str, str]) -> list[str]:
    if not isinstance(value, list) or not value:
        errors[field] = "required: a list of at least one column name"
        return []
    if len(value) > MAX_COLUMNS:
        errors[field] = f"at most {MAX_COLUMNS} columns"
        return []
    for index, column in enumerate(value):
        if not isinstance(column, str) or not column.strip() or len(column) > MAX_NAME or "\n" in column:
            errors[f"{field}[{index}]"] = f"must be a non-empty single-line string of at most {MAX_NAME} characters"
    columns = [column.strip() for column in value if isinstance(column, str)]
    if len(set(columns)) != len(columns):
        errors[field] = "column names must be unique"
    return columns


def _text(value: object, field: str, errors: dict[str, str]) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        errors[field] = f"must be a string of at most {MAX_TEXT} characters"
        return ""
    return value


def _rules(value: object, field: str, errors: dict[str, str]) -> dict[str, str]:
    if not isinstance(value, dict):
        errors[field] = f"must be an object with any of: {', '.join(RULE_KEYS)}"
        return {}
    for key in sorted(set(value) - set(RULE_KEYS)):
        errors[f"{field}.{key}"] = f"unknown rule; one of: {', '.join(RULE_KEYS)}"
    return {key: _text(value.get(key, ""), f"{field}.{key}", errors) for key in RULE_KEYS}


def _boolean(value: object, field: str, errors: dict[str, str]) -> bool:
    if not isinstance(value, bool):
        errors[field] = "must be a boolean"
        return False
    return value


def _max_rows(value: object, field: str, errors: dict[str, str]) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 10_000:
        errors[field] = "must be null or an integer between 1 and 10000"
        return None
    return value


def _check_unique_names(templates: list[dict[str, Any]], errors: dict[str, str]) -> None:
    seen: set[str] = set()
    for index, template in enumerate(templates):
        name = template.get("name")
        if name and name in seen:
            errors[f"tables[{index}].name"] = f"table name {name!r} is used twice"
        if name:
            seen.add(name)


def _refused_target(url: str) -> str | None:
    """Why a table webhook URL may not be used: webhooks' rules (no credentials; public addresses only, unless
    WEBHOOK_ALLOW_PRIVATE), checked again before every POST."""
    try:
        targets.check(url)
    except DomainError as exc:
        return exc.message
    return None


def validate_webhook_section(value: object) -> dict[str, Any] | None:
    """`{"url": "https://…", "timeoutMs": 5000}`: where changed rows are POSTed after a successful replace."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SectionInvalid({"tableWebhook": "must be an object with url and optional timeoutMs, or null"})
    errors = {f"tableWebhook.{key}": "unknown field" for key in sorted(set(value) - WEBHOOK_FIELDS)}
    url = value.get("url")
    parts = urlsplit(url) if isinstance(url, str) and len(url) <= 2000 else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        errors["tableWebhook.url"] = "required: an http(s) URL"
    elif isinstance(url, str) and (refused := _refused_target(url)):
        errors["tableWebhook.url"] = refused
    timeout = value.get("timeoutMs", DEFAULT_WEBHOOK_TIMEOUT_MS)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 100 <= timeout <= 60_000:
        errors["tableWebhook.timeoutMs"] = "must be an integer between 100 and 60000"
    if errors:
        raise SectionInvalid(errors)
    return {"url": url, "timeoutMs": timeout}


MAX_ROWS = 1000
MAX_CELL = 2000


def validate_rows(rows: object, *, columns: list[str], max_rows: int | None) -> list[list[str]]:
    """Rows of a manual edit: a list of rows, each exactly one string per column (API and admin alike)."""
    limit = min(max_rows, MAX_ROWS) if max_rows else MAX_ROWS
    if not isinstance(rows, list):
        raise _rows_invalid("rows", "must be a list of rows")
    if len(rows) > limit:
        raise _rows_invalid("rows", f"at most {count(limit, 'row')}")
    for index, row in enumerate(rows):
        _check_row(index, row, len(columns))
    return [list(row) for row in rows]


def _check_row(index: int, row: object, width: int) -> None:
    if not isinstance(row, list) or len(row) != width:
        raise _rows_invalid(f"rows[{index}]", f"must be a list of exactly {width} cells (one per column)")
    for column, cell in enumerate(row):
        if not isinstance(cell, str) or len(cell) > MAX_CELL:
            raise _rows_invalid(f"rows[{index}][{column}]", f"must be a string of at most {MAX_CELL} characters")


def _rows_invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{field} {message}", details={"fields": {field: message}})
