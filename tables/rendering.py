"""Render memory tables as the prompt text st-memory-enhancement shows models (the `memoryTable` variable).

Pure code, no Django. The layout follows the plugin's `Sheet.getTableText` / `getSheetCSV` (docs/tables.md,
"Recall") character for character, because models and prompts written for the plugin read indices from
it: `* N:` is the tableIndex, the `N:` in the header is the colIndex and the first CSV field is the rowIndex.
"""

from __future__ import annotations

from collections.abc import Sequence

from tables.applying import TableState

EMPTY_TABLE_PLACEHOLDER = "（此表格当前为空）"
RULES_HEADING = "【增删改触发条件】"
RULE_LABELS = (("insert", "插入"), ("update", "更新"), ("delete", "删除"))


def render_tables(tables: Sequence[TableState], *, user_name: str | None = None) -> str:
    """All tables, numbered by position; `<user>` becomes `user_name` when given, as the plugin does."""
    # Each table ends with a blank line and the plugin joins them with "\n": two blank lines between tables.
    text = "\n".join(render_table(index, table) for index, table in enumerate(tables))
    return text.replace("<user>", user_name) if user_name is not None else text


def render_table(index: int, table: TableState) -> str:
    """One table: title, note, header line, CSV rows (or the empty placeholder), trigger rules."""
    parts = [f"* {index}:{table.name}\n"]
    if table.note:
        parts.append(f"【说明】{table.note}\n")
    parts.append("【表格内容】\n")
    parts.append(render_header(table.columns) + "\n")
    parts.append(render_rows(table.rows))
    parts.append(render_rules(table) + "\n")
    return "".join(parts)


def render_header(columns: Sequence[str]) -> str:
    """`rowIndex,0:列名,1:列名,…`."""
    return ",".join(["rowIndex", *(f"{index}:{name}" for index, name in enumerate(columns))])


def render_rows(rows: Sequence[Sequence[str]]) -> str:
    """`0,v1,v2,…` one line per row (each ending in a newline), or the placeholder line."""
    if not rows:
        return EMPTY_TABLE_PLACEHOLDER + "\n"
    return "".join(",".join([str(index), *map(_csv_cell, row)]) + "\n" for index, row in enumerate(rows))


def render_rules(table: TableState) -> str:
    """The trigger rules; a required table that is empty shows only its init rule as the insert rule."""
    lines = [RULES_HEADING]
    if table.required and not table.rows:
        initial = table.rules.get("init") or table.rules.get("insert")
        if initial:
            lines.append(f"插入：{initial}")
    else:
        lines.extend(f"{label}：{table.rules[key]}" for key, label in RULE_LABELS if table.rules.get(key))
    return "\n".join(lines) + "\n"


def _csv_cell(value: object) -> str:
    """A cell as CSV. The plugin never quotes (it forbids commas in cells); memoryhub keeps commas, so a
    cell with one is quoted the CSV way rather than shifting every later column for the model."""
    text = "" if value is None else str(value)
    # One row per line is what the header promises; a line break inside a cell would start a fake row.
    text = " ".join(text.splitlines())
    if "," in text or '"' in text:
        return '"' + text.replace('"', '""') + '"'
    return text
