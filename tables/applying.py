"""Apply parsed `<tableEdit>` calls to memory tables, in the plugin's order.

Pure code, no Django. The plugin runs all updates, then all inserts (appended), then all deletes by
descending row index (docs/tables.md, "The `<tableEdit>` grammar"). Its prompts and the models
trained on them therefore mean every index "as the table was shown before this reply"; keeping that
order keeps those indices right. Unlike the plugin, an update past the last row is skipped instead of
turning into an insert, and nothing is skipped silently: every refusal comes back with a reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryhub.wording import count
from tables.parsing import TableEditCall

RULE_KEYS = ("init", "insert", "update", "delete")


@dataclass(frozen=True)
class TableState:
    """One table as the model sees it; its index is its position in the list of tables."""

    name: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""
    # Trigger texts keyed by RULE_KEYS; "init" is shown instead of the others while a required table is empty.
    rules: dict[str, str] = field(default_factory=dict)
    required: bool = False
    max_rows: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableState:
        """Build from a template/stored dict: name, columns, rows, note, rules, required, maxRows."""
        rules = data.get("rules") or {}
        return cls(
            name=str(data.get("name", "")),
            columns=[str(column) for column in data.get("columns") or []],
            rows=[[_cell_text(cell) for cell in row] for row in data.get("rows") or []],
            note=str(data.get("note") or ""),
            rules={key: str(rules[key]) for key in RULE_KEYS if rules.get(key)},
            required=bool(data.get("required", False)),
            max_rows=data.get("maxRows", data.get("max_rows")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape `from_dict` reads (camelCase `maxRows`, like the templates)."""
        return {
            "name": self.name,
            "columns": list(self.columns),
            "rows": [list(row) for row in self.rows],
            "note": self.note,
            "rules": {key: self.rules.get(key, "") for key in RULE_KEYS},
            "required": self.required,
            "maxRows": self.max_rows,
        }


@dataclass(frozen=True)
class ApplyResult:
    """New tables plus a log: `applied`/`skipped` are JSON-ready dicts, in the order they were decided."""

    tables: list[TableState]
    applied: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    changed_table_indexes: set[int]

    @property
    def changed(self) -> bool:
        return bool(self.changed_table_indexes)


class _Batch:
    """Working copies of the rows plus the log of one `apply_calls` run."""

    def __init__(self, tables: Sequence[TableState]) -> None:
        self.tables = tables
        self.rows = [[_padded(row, len(table.columns)) for row in table.rows] for table in tables]
        self.before = [[list(row) for row in rows] for rows in self.rows]
        self.shown = [len(rows) for rows in self.rows]  # row counts the model saw
        self.applied: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []

    def skip(self, call: TableEditCall, reason: str, column: int | None = None) -> None:
        entry = _describe(call) | {"reason": reason}
        if column is not None:
            entry["column"] = column
        self.skipped.append(entry)

    def table_error(self, call: TableEditCall) -> str | None:
        if 0 <= call.table_index < len(self.tables):
            return None
        there = count(len(self.tables), "table")
        return f"table {call.table_index} does not exist ({there} in all, 0-based)"

    def row_error(self, call: TableEditCall) -> str | None:
        shown = self.shown[call.table_index]
        if call.row_index is not None and 0 <= call.row_index < shown:
            return None
        name = self.tables[call.table_index].name
        rows = count(shown, "row")
        return f"row {call.row_index} does not exist in table {call.table_index} ({name}), which has {rows}"


def apply_calls(tables: Sequence[TableState], calls: Iterable[TableEditCall]) -> ApplyResult:
    """Apply `calls` to copies of `tables`: updates, then inserts, then deletes by descending row."""
    batch = _Batch(tables)
    calls = list(calls)
    for call in _of(calls, "update"):
        _apply_update(batch, call)
    deletes = _accepted_deletes(batch, _of(calls, "delete"))
    room = _room_for_inserts(batch, deletes)
    inserted = [entry for call in _of(calls, "insert") if (entry := _apply_insert(batch, call, room))]
    _apply_deletes(batch, deletes)
    _renumber_inserts(batch, inserted, deletes)
    return ApplyResult(
        tables=[dataclasses.replace(table, rows=rows) for table, rows in zip(tables, batch.rows)],
        applied=batch.applied,
        skipped=batch.skipped,
        changed_table_indexes={index for index, rows in enumerate(batch.rows) if rows != batch.before[index]},
    )


def _of(calls: list[TableEditCall], op: str) -> list[TableEditCall]:
    return [call for call in calls if call.op == op]


def _apply_update(batch: _Batch, call: TableEditCall) -> None:
    error = batch.table_error(call) or batch.row_error(call)
    if error:
        batch.skip(call, error)
        return
    cells = _cells_in_range(batch, call)
    if not cells:
        return
    row = batch.rows[call.table_index][call.row_index]  # type: ignore[index]
    changed = any(row[column] != value for column, value in cells.items())
    for column, value in cells.items():
        row[column] = value
    batch.applied.append(_describe(call) | {"values": cells, "changed": changed})


def _apply_insert(batch: _Batch, call: TableEditCall, room: list[int | None]) -> dict[str, Any] | None:
    error = batch.table_error(call)
    if error:
        batch.skip(call, error)
        return None
    if room[call.table_index] is not None and room[call.table_index] <= 0:  # type: ignore[operator]
        limit = batch.tables[call.table_index].max_rows
        batch.skip(call, f"table {call.table_index} is full (max {count(limit or 0, 'row')}); row not inserted")
        return None
    cells = _cells_in_range(batch, call)
    if not cells:
        return None
    if room[call.table_index] is not None:
        room[call.table_index] -= 1  # type: ignore[operator]
    rows = batch.rows[call.table_index]
    rows.append([cells.get(column, "") for column in range(len(batch.tables[call.table_index].columns))])
    entry = _describe(call) | {"row_index": len(rows) - 1, "values": cells, "changed": True}
    batch.applied.append(entry)
    return entry


def _accepted_deletes(batch: _Batch, calls: list[TableEditCall]) -> list[TableEditCall]:
    """Deletes that name an existing, shown row, each row once; inserts of this reply are never shown rows."""
    accepted: list[TableEditCall] = []
    seen: set[tuple[int, int | None]] = set()
    for call in calls:
        error = batch.table_error(call) or batch.row_error(call)
        if not error and (call.table_index, call.row_index) in seen:
            error = f"row {call.row_index} of table {call.table_index} is already deleted by this reply"
        if error:
            batch.skip(call, error)
            continue
        seen.add((call.table_index, call.row_index))
        accepted.append(call)
    return accepted


def _room_for_inserts(batch: _Batch, deletes: list[TableEditCall]) -> list[int | None]:
    """Rows each table may still gain. Counted after this reply's deletes, because models keep a
    one-row table current by deleting the old row and inserting the new one in the same reply."""
    room: list[int | None] = []
    for index, table in enumerate(batch.tables):
        if table.max_rows is None:
            room.append(None)
            continue
        deleted = sum(1 for call in deletes if call.table_index == index)
        room.append(table.max_rows - (batch.shown[index] - deleted))
    return room


def _apply_deletes(batch: _Batch, deletes: list[TableEditCall]) -> None:
    # Descending row order across all tables, as the plugin does, so earlier deletes never shift later ones.
    for call in sorted(deletes, key=lambda item: item.row_index or 0, reverse=True):
        del batch.rows[call.table_index][call.row_index]  # type: ignore[arg-type]
        batch.applied.append(_describe(call) | {"changed": True})


def _renumber_inserts(batch: _Batch, inserted: list[dict[str, Any]], deletes: list[TableEditCall]) -> None:
    """Report an inserted row at its final position: every delete removed a row above it."""
    for entry in inserted:
        entry["row_index"] -= sum(1 for call in deletes if call.table_index == entry["table_index"])


def _cells_in_range(batch: _Batch, call: TableEditCall) -> dict[int, str]:
    """The call's cells that name an existing column; the others are skipped one by one."""
    width = len(batch.tables[call.table_index].columns)
    cells: dict[int, str] = {}
    for column, value in call.values.items():
        if column < width:
            cells[column] = value
        else:
            reason = f"column {column} does not exist (table {call.table_index} has {width} columns); cell skipped"
            batch.skip(call, reason, column)
    for reason in call.dropped:
        batch.skip(call, reason)
    if not cells:
        batch.skip(call, "no cell of this call names an existing column; call skipped")
    return cells


def _describe(call: TableEditCall) -> dict[str, Any]:
    return {
        "op": call.op,
        "table_index": call.table_index,
        "row_index": call.row_index,
        "block": call.block,
        "source": call.source,
    }


def _padded(row: Sequence[Any], width: int) -> list[str]:
    """A stored row with exactly one cell per column (short rows come from older templates)."""
    cells = [_cell_text(cell) for cell in row]
    return cells + [""] * (width - len(cells)) if len(cells) < width else cells


def _cell_text(cell: Any) -> str:
    return "" if cell is None else str(cell)
