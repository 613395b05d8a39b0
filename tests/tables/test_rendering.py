"""Rendering tables in the plugin's prompt layout (docs/tables.md, "Recall"), and the default presets."""

from __future__ import annotations

from tables.applying import TableState
from tables.presets import PLUGIN_DEFAULT_TABLES, plugin_default_tables
from tables.rendering import EMPTY_TABLE_PLACEHOLDER, render_header, render_table, render_tables


def spacetime(rows: list[list[str]]) -> TableState:
    return TableState(
        name="时空表格",
        columns=["日期", "时间", "地点（当前描写）", "此地角色"],
        rows=rows,
        note="记录时空信息的表格，应保持在一行",
        rules={
            "init": "本轮需要记录当前时间、地点、人物信息，使用insertRow函数",
            "update": "当描写的场景，时间，人物变更时",
            "delete": "此表大于一行时应删除多余行",
        },
        required=True,
    )


TASKS = TableState(
    name="任务、命令或者约定表格",
    columns=["角色", "任务", "地点", "持续时间"],
    note="思考本轮是否应该执行任务/赴约",
    rules={
        "insert": "当特定时间约定一起去做某事时/某角色收到做某事的命令或任务时",
        "delete": "当大家赴约时/任务或命令完成时/任务，命令或约定被取消时",
    },
)


def test_header_line_format() -> None:
    assert render_header(["日期", "时间", "地点"]) == "rowIndex,0:日期,1:时间,2:地点"


def test_filled_table_matches_the_plugin_layout() -> None:
    assert render_table(0, spacetime([["2021-09-01", "12:00", "阳台", "小花"]])) == (
        "* 0:时空表格\n"
        "【说明】记录时空信息的表格，应保持在一行\n"
        "【表格内容】\n"
        "rowIndex,0:日期,1:时间,2:地点（当前描写）,3:此地角色\n"
        "0,2021-09-01,12:00,阳台,小花\n"
        "【增删改触发条件】\n"
        "更新：当描写的场景，时间，人物变更时\n"
        "删除：此表大于一行时应删除多余行\n"
        "\n"
    )


def test_empty_table_shows_the_placeholder() -> None:
    assert render_table(3, TASKS) == (
        "* 3:任务、命令或者约定表格\n"
        "【说明】思考本轮是否应该执行任务/赴约\n"
        "【表格内容】\n"
        "rowIndex,0:角色,1:任务,2:地点,3:持续时间\n"
        f"{EMPTY_TABLE_PLACEHOLDER}\n"
        "【增删改触发条件】\n"
        "插入：当特定时间约定一起去做某事时/某角色收到做某事的命令或任务时\n"
        "删除：当大家赴约时/任务或命令完成时/任务，命令或约定被取消时\n"
        "\n"
    )


def test_empty_required_table_shows_only_its_init_rule_as_insert() -> None:
    text = render_table(0, spacetime([]))
    assert text.endswith(
        "（此表格当前为空）\n【增删改触发条件】\n插入：本轮需要记录当前时间、地点、人物信息，使用insertRow函数\n\n"
    )


def test_tables_are_numbered_by_position_and_separated_by_two_blank_lines() -> None:
    text = render_tables([spacetime([["十月", "", "学校", "悠悠"]]), TASKS])
    assert "删除：此表大于一行时应删除多余行\n\n\n* 1:任务、命令或者约定表格\n" in text
    assert text.startswith("* 0:时空表格\n")


def test_rows_are_numbered_and_cells_with_commas_or_line_breaks_stay_on_one_csv_row() -> None:
    table = TableState(name="t", columns=["a", "b"], rows=[["x", "y"], ["c,d", 'say "hi"\nthen']])
    assert render_table(0, table).split("【表格内容】\n")[1].split("【")[0] == (
        'rowIndex,0:a,1:b\n0,x,y\n1,"c,d","say ""hi"" then"\n'
    )


def test_no_note_means_no_note_line_and_user_is_replaced() -> None:
    table = TableState(name="与<user>社交", columns=["对<user>关系"], rows=[["<user>的同学"]])
    text = render_tables([table], user_name="阿明")
    assert text == "* 0:与阿明社交\n【表格内容】\nrowIndex,0:对阿明关系\n0,阿明的同学\n【增删改触发条件】\n\n"


def test_no_tables_render_as_empty_text() -> None:
    assert render_tables([]) == ""


def test_plugin_defaults_are_six_complete_templates() -> None:
    assert [table["name"] for table in PLUGIN_DEFAULT_TABLES] == [
        "时空表格",
        "角色特征表格",
        "角色与<user>社交表格",
        "任务、命令或者约定表格",
        "重要事件历史表格",
        "重要物品表格",
    ]
    assert [len(table["columns"]) for table in PLUGIN_DEFAULT_TABLES] == [4, 8, 4, 4, 5, 4]
    assert [table["required"] for table in PLUGIN_DEFAULT_TABLES] == [True, True, True, False, True, False]
    for table in PLUGIN_DEFAULT_TABLES:
        assert set(table) == {"name", "columns", "note", "rules", "required", "maxRows"}
        assert set(table["rules"]) == {"init", "insert", "update", "delete"} and table["maxRows"] is None
        assert table["note"]


def test_plugin_defaults_copy_is_independent() -> None:
    copy = plugin_default_tables()
    copy[0]["columns"].append("x")
    assert PLUGIN_DEFAULT_TABLES[0]["columns"] == ["日期", "时间", "地点（当前描写）", "此地角色"]


def test_plugin_defaults_render_like_the_documented_prompt() -> None:
    tables = [TableState.from_dict(template) for template in PLUGIN_DEFAULT_TABLES]
    text = render_tables(tables)
    assert "* 3:任务、命令或者约定表格\n【说明】思考本轮是否应该执行任务/赴约\n【表格内容】\n" in text
    assert "* 1:角色特征表格\n" in text and text.count(EMPTY_TABLE_PLACEHOLDER) == 6
