"""Applying `<tableEdit>` calls: the plugin's order, skips with reasons, change detection, no mutation."""

from __future__ import annotations

import copy

import pytest

from tables.applying import ApplyResult, TableState, apply_calls
from tables.parsing import TableEditCall, parse_table_edits


def people() -> TableState:
    return TableState(
        name="角色", columns=["名字", "性格", "住所"], rows=[["A", "a", "1"], ["B", "b", "2"], ["C", "c", "3"]]
    )


def places() -> TableState:
    return TableState(name="时空", columns=["日期", "地点"], rows=[["十月", "学校"]])


def apply_text(tables: list[TableState], body: str) -> ApplyResult:
    parsed = parse_table_edits(f"<tableEdit>\n<!--\n{body}\n-->\n</tableEdit>")
    assert parsed.skipped == ()
    return apply_calls(tables, parsed.calls)


def names(result: ApplyResult, table: int = 0) -> list[str]:
    return [row[0] for row in result.tables[table].rows]


def reasons(result: ApplyResult) -> list[str]:
    return [entry["reason"] for entry in result.skipped]


# --- order ------------------------------------------------------------------------------------------------


def test_updates_then_inserts_then_deletes_by_descending_row() -> None:
    body = "\n".join(
        [
            "deleteRow(0, 0)",  # written first, applied last: indices mean the table as shown
            "insertRow(0, {0: 'D'})",
            "updateRow(0, 2, {1: 'c2'})",
            "deleteRow(0, 2)",
            "updateRow(0, 1, {1: 'b2'})",
        ]
    )
    result = apply_text([people()], body)
    assert result.tables[0].rows == [["B", "b2", "2"], ["D", "", ""]]
    assert [(entry["op"], entry["row_index"]) for entry in result.applied] == [
        ("update", 2),
        ("update", 1),
        ("insert", 1),  # reported at its final position, after both deletes
        ("delete", 2),
        ("delete", 0),
    ]
    assert result.skipped == []


def test_deletes_run_in_descending_row_order_across_tables() -> None:
    result = apply_text([people(), places()], "deleteRow(1, 0)\ndeleteRow(0, 0)\ndeleteRow(0, 2)")
    assert [(entry["table_index"], entry["row_index"]) for entry in result.applied] == [(0, 2), (1, 0), (0, 0)]
    assert names(result) == ["B"] and result.tables[1].rows == []


def test_delete_never_removes_a_row_inserted_by_the_same_reply() -> None:
    # The model sees 3 rows; "row 3" is the row it is inserting, which it cannot delete in the same reply.
    result = apply_text([people()], "insertRow(0, {0: 'D'})\ndeleteRow(0, 3)")
    assert names(result) == ["A", "B", "C", "D"]
    assert reasons(result) == ["row 3 does not exist in table 0 (角色), which has 3 rows"]


def test_update_cannot_reach_a_row_inserted_by_the_same_reply() -> None:
    result = apply_text([places()], "insertRow(0, {0: '十一月'})\nupdateRow(0, 1, {1: '家'})")
    assert result.tables[0].rows == [["十月", "学校"], ["十一月", ""]]
    assert reasons(result) == ["row 1 does not exist in table 0 (时空), which has 1 row"]


# --- skips --------------------------------------------------------------------------------------------------


NO_ROW_3 = "row 3 does not exist in table 0 (角色), which has 3 rows"
NO_ROW_7 = "row 7 does not exist in table 0 (角色), which has 3 rows"


def no_table(index: int) -> str:
    return f"table {index} does not exist (1 table in all, 0-based)"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param("updateRow(0, 3, {0: 'x'})", NO_ROW_3, id="update-past-last"),
        pytest.param("deleteRow(0, 7)", NO_ROW_7, id="delete-out-of-range"),
        pytest.param("insertRow(2, {0: 'x'})", no_table(2), id="insert-no-table"),
        pytest.param("updateRow(5, 0, {0: 'x'})", no_table(5), id="update-no-table"),
        pytest.param("deleteRow(1, 0)", no_table(1), id="delete-no-table"),
    ],
)
def test_out_of_range_calls_are_skipped_with_a_reason(body: str, reason: str) -> None:
    result = apply_text([people()], f"{body}\nupdateRow(0, 0, {{1: 'still applied'}})")
    assert reasons(result) == [reason]
    assert result.skipped[0]["source"] == body
    assert result.tables[0].rows[0] == ["A", "still applied", "1"]
    assert len(result.tables[0].rows) == 3


def test_update_past_last_row_does_not_become_an_insert() -> None:
    result = apply_text([places()], "updateRow(0, 1, {0: '十一月'})")
    assert result.tables[0].rows == [["十月", "学校"]]
    assert result.changed_table_indexes == set()


def test_column_beyond_the_last_skips_only_that_cell() -> None:
    result = apply_text([people()], "updateRow(0, 1, {1: 'new', 3: 'nowhere', 9: 'x'})\ninsertRow(0, {0: 'D', 5: 'y'})")
    assert result.tables[0].rows[1] == ["B", "new", "2"]
    assert result.tables[0].rows[3] == ["D", "", ""]
    assert [(entry["column"], entry["reason"]) for entry in result.skipped] == [
        (3, "column 3 does not exist (table 0 has 3 columns); cell skipped"),
        (9, "column 9 does not exist (table 0 has 3 columns); cell skipped"),
        (5, "column 5 does not exist (table 0 has 3 columns); cell skipped"),
    ]
    assert [entry["values"] for entry in result.applied] == [{1: "new"}, {0: "D"}]


def test_call_with_no_existing_column_is_skipped_whole() -> None:
    result = apply_text([places()], "insertRow(0, {4: 'x'})")
    assert result.tables[0].rows == [["十月", "学校"]]
    assert reasons(result)[-1] == "no cell of this call names an existing column; call skipped"


def test_dropped_keys_from_parsing_are_reported() -> None:
    result = apply_text([places()], "insertRow(0, {0: '十一月', '地点': '家'})")
    assert result.tables[0].rows[-1] == ["十一月", ""]
    assert reasons(result) == ["key '地点' is not a column index; cell dropped"]


def test_deleting_the_same_row_twice_deletes_once() -> None:
    result = apply_text([people()], "deleteRow(0, 1)\ndeleteRow(0, 1)")
    assert names(result) == ["A", "C"]
    assert reasons(result) == ["row 1 of table 0 is already deleted by this reply"]


# --- inserts, limits -----------------------------------------------------------------------------------------


def test_inserted_rows_have_every_column() -> None:
    result = apply_text([people()], "insertRow(0, {2: '宿舍'})")
    assert result.tables[0].rows[-1] == ["", "", "宿舍"]


def test_max_rows_skips_inserts_beyond_the_limit() -> None:
    table = TableState(name="事件", columns=["事件"], rows=[["a"]], max_rows=2)
    result = apply_text([table], "insertRow(0, {0: 'b'})\ninsertRow(0, {0: 'c'})")
    assert names(result) == ["a", "b"]
    assert reasons(result) == ["table 0 is full (max 2 rows); row not inserted"]


def test_max_rows_counts_the_same_replys_deletes() -> None:
    # Keeping a one-row table current: delete the old row and insert the new one.
    table = TableState(name="时空", columns=["日期"], rows=[["十月"]], max_rows=1)
    result = apply_text([table], "deleteRow(0, 0)\ninsertRow(0, {0: '十一月'})")
    assert result.tables[0].rows == [["十一月"]]
    assert result.skipped == []


# --- change detection and purity ------------------------------------------------------------------------------


def test_update_writing_the_same_values_is_not_a_change() -> None:
    result = apply_text([people(), places()], "updateRow(0, 0, {0: 'A', 1: 'a'})\nupdateRow(1, 0, {1: '家'})")
    assert result.changed_table_indexes == {1}
    assert [entry["changed"] for entry in result.applied] == [False, True]


def test_no_calls_change_nothing() -> None:
    result = apply_calls([people()], [])
    assert (result.changed, result.applied, result.skipped) == (False, [], [])
    assert result.tables == [people()]


def test_inputs_are_not_mutated() -> None:
    tables = [people(), places()]
    snapshot = copy.deepcopy(tables)
    calls = parse_table_edits(
        "<tableEdit>updateRow(0, 0, {0: 'Z'})\ninsertRow(1, {0: 'x'})\ndeleteRow(0, 2)</tableEdit>"
    ).calls
    result = apply_calls(tables, calls)
    assert tables == snapshot
    assert result.tables[0].rows is not tables[0].rows
    assert result.changed_table_indexes == {0, 1}


def test_short_stored_rows_are_padded_without_counting_as_a_change() -> None:
    table = TableState(name="t", columns=["a", "b", "c"], rows=[["x"]])
    result = apply_calls([table], [TableEditCall("update", 0, 0, {0: "x"}, 0, "updateRow(0,0,{0:'x'})")])
    assert result.tables[0].rows == [["x", "", ""]]
    assert result.changed_table_indexes == set()


def test_table_state_round_trips_through_its_dict() -> None:
    table = TableState(
        name="t", columns=["a"], rows=[["1"]], note="n", rules={"insert": "i"}, required=True, max_rows=3
    )
    data = table.to_dict()
    assert data["rules"] == {"init": "", "insert": "i", "update": "", "delete": ""}
    assert data["maxRows"] == 3
    assert TableState.from_dict(data) == table
