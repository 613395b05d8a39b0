"""Diffs operators read: table rows cell by cell, JSON and text line by line (stdlib difflib, no HTML here).

The results are plain data; templates render them with autoescaping, so user content never becomes markup.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cell:
    """One cell of a diffed row: its text now, and what it was before when it changed."""

    text: str
    before: str | None = None

    @property
    def changed(self) -> bool:
        return self.before is not None


@dataclass(frozen=True)
class RowDiff:
    """One row of the newer table (or a removed row of the older one): added, removed, changed or same."""

    kind: str  # "same" | "added" | "removed" | "changed"
    cells: list[Cell]
    index: int | None  # rowIndex in the newer version; None for a removed row
    old_index: int | None = None


@dataclass(frozen=True)
class TableDiff:
    columns: list[str]
    rows: list[RowDiff] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(row.kind != "same" for row in self.rows)

    def counts(self) -> dict[str, int]:
        found = {"added": 0, "removed": 0, "changed": 0}
        for row in self.rows:
            if row.kind in found:
                found[row.kind] += 1
        return found


@dataclass(frozen=True)
class Line:
    """One line of a line diff: `kind` is "same", "added" or "removed"; numbers are 1-based or None."""

    kind: str
    text: str
    old_number: int | None
    new_number: int | None


def _cells(row: list, width: int) -> list[str]:
    texts = ["" if cell is None else str(cell) for cell in row]
    return texts + [""] * (width - len(texts))


def table_diff(columns: list[str], old_rows: list[list], new_rows: list[list]) -> TableDiff:
    """Align the rows (difflib), then pair replaced rows one to one so a changed cell shows its old text."""
    width = max([len(columns), *(len(r) for r in old_rows), *(len(r) for r in new_rows)])
    old = [tuple(_cells(r, width)) for r in old_rows]
    new = [tuple(_cells(r, width)) for r in new_rows]
    rows: list[RowDiff] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [RowDiff("same", [Cell(t) for t in new[j]], j, i1 + k) for k, j in enumerate(range(j1, j2))]
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            rows.append(_changed_row(old[i1 + k], new[j1 + k], j1 + k, i1 + k))
        rows += [RowDiff("removed", [Cell(t) for t in old[i]], None, i) for i in range(i1 + paired, i2)]
        rows += [RowDiff("added", [Cell(t) for t in new[j]], j) for j in range(j1 + paired, j2)]
    return TableDiff(list(columns) + [""] * (width - len(columns)), rows)


def _changed_row(old: tuple, new: tuple, index: int, old_index: int) -> RowDiff:
    cells = [Cell(n) if n == o else Cell(n, before=o) for o, n in zip(old, new, strict=True)]
    return RowDiff("changed", cells, index, old_index)


def canonical_json(value: object) -> str:
    """Pretty JSON with sorted keys and non-ASCII kept, so equal documents print equal and diffs stay small."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def line_diff(old: str, new: str) -> list[Line]:
    """Every line of both texts in order, marked same / removed / added (a full diff, no context cut)."""
    a, b = old.splitlines(), new.splitlines()
    lines: list[Line] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            lines += [Line("same", b[j1 + k], i1 + k + 1, j1 + k + 1) for k in range(i2 - i1)]
            continue
        lines += [Line("removed", a[i], i + 1, None) for i in range(i1, i2)]
        lines += [Line("added", b[j], None, j + 1) for j in range(j1, j2)]
    return lines


def json_diff(old: object, new: object) -> list[Line]:
    return line_diff(canonical_json(old), canonical_json(new))


def diff_counts(lines: list[Line]) -> dict[str, int]:
    return {kind: sum(1 for line in lines if line.kind == kind) for kind in ("added", "removed")}
