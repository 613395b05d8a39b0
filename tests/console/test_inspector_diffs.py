"""memories/console/diffs.py and the inspector's span rendering: pure functions, no database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memories.console.diffs import json_diff, line_diff, table_diff
from memories.console.inspector import render_segments
from memoryhub.runtimes.rendering import render_template, rendered_length

COLUMNS = ["日期", "时间", "地点"]


def test_a_changed_cell_keeps_its_old_text_and_the_other_cells_are_unchanged():
    diff = table_diff(COLUMNS, [["5-01", "夜", "灯塔"]], [["5-01", "深夜", "灯塔"]])
    [row] = diff.rows
    assert row.kind == "changed" and row.index == 0
    assert [(c.text, c.before) for c in row.cells] == [("5-01", None), ("深夜", "夜"), ("灯塔", None)]
    assert diff.counts() == {"added": 0, "removed": 0, "changed": 1}


def test_inserted_and_deleted_rows_are_added_and_removed_with_their_indexes():
    old = [["a", "1", "x"], ["b", "2", "y"], ["c", "3", "z"]]
    new = [["a", "1", "x"], ["c", "3", "z"], ["d", "4", "w"]]
    diff = table_diff(COLUMNS, old, new)
    assert [(r.kind, r.index, r.old_index) for r in diff.rows] == [
        ("same", 0, 0),
        ("removed", None, 1),
        ("same", 1, 2),
        ("added", 2, None),
    ]


def test_short_rows_are_padded_to_the_columns_and_an_empty_old_version_adds_every_row():
    diff = table_diff(COLUMNS, [], [["a"]])
    assert [c.text for c in diff.rows[0].cells] == ["a", "", ""] and diff.rows[0].kind == "added"
    assert not table_diff(COLUMNS, [["a"]], [["a", ""]]).changed


def test_a_line_diff_numbers_both_sides():
    lines = line_diff("a\nb\nc", "a\nB\nc")
    assert [(x.kind, x.text, x.old_number, x.new_number) for x in lines] == [
        ("same", "a", 1, 1),
        ("removed", "b", 2, None),
        ("added", "B", None, 2),
        ("same", "c", 3, 3),
    ]


def test_a_json_diff_is_independent_of_key_order_and_keeps_non_ascii():
    assert all(line.kind == "same" for line in json_diff({"b": 1, "a": "港"}, {"a": "港", "b": 1}))
    changed = [line for line in json_diff({"a": "港"}, {"a": "湾"}) if line.kind != "same"]
    assert [(x.kind, x.text.strip()) for x in changed] == [("removed", '"a": "港"'), ("added", '"a": "湾"')]


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("Memory: {{jsonMemory}}\nUser: {{userMessage}}", {"jsonMemory": "{}", "userMessage": "hi"}),
        ("{{ a }}{{a}}-{{b}}", {"a": "x", "b": ""}),  # spaces, repeats, an empty value
        ("{{unknown}} stays empty", {}),
        ("{{a}} then {{b}}", {"a": "{{b}}", "b": "B"}),  # recalled text is never re-read
        ("no placeholders at all", {"a": "x"}),
        ("{{a}}", {"a": "多字节 ✓"}),
    ],
)
def test_segments_render_exactly_what_the_renderer_renders(template, values):
    segments = render_segments(template, values)
    rendered = render_template(template, values, max_chars=10**9)
    assert "".join(s.text for s in segments) == rendered
    for segment in segments:
        assert rendered[segment.start : segment.end] == segment.text
        if segment.variable:
            assert segment.text == values.get(segment.variable, "")


NAMES = st.sampled_from(["a", "b", "userMessage", "memoryTable"])
PIECES = st.one_of(
    st.text(alphabet="{} ab\n港", max_size=8),  # literal text, including stray braces
    NAMES.map(lambda n: "{{" + n + "}}"),
    NAMES.map(lambda n: "{{ " + n + " }}"),
)


@settings(max_examples=300, deadline=None)
@given(
    template=st.lists(PIECES, max_size=8).map("".join),
    values=st.dictionaries(NAMES, st.text(alphabet="{} ab\n港<>&", max_size=8), max_size=4),
)
def test_segments_always_reproduce_the_renderer_and_place_each_value_at_its_offsets(template, values):
    segments = render_segments(template, values)
    rendered = render_template(template, values, max_chars=10**9)
    assert rendered_length(template, values) == len(rendered)  # the size limit's count, before building
    assert "".join(s.text for s in segments) == rendered
    assert all(rendered[s.start : s.end] == s.text for s in segments)
    assert [s.start for s in segments] == sorted(s.start for s in segments)
