"""Mixed quotes in `<tableEdit>` values: a string ends at a quote of its own kind (docs/tables.md, "Quotes").

A value opened with an ASCII quote may hold curly quotes and full-width punctuation, and one opened with a
curly quote may hold ASCII quotes; before, such a value ended at the inner quote and the whole call was lost.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tables.applying import TableState, apply_calls
from tables.parsing import parse_table_edits
from tables.rendering import render_tables


def block(body: str) -> str:
    return f"<tableEdit>\n<!--\n{body}\n-->\n</tableEdit>"


def values_of(body: str) -> list[dict[int, str]]:
    result = parse_table_edits(block(body))
    assert result.skipped == (), result.skipped
    return [call.values for call in result.calls]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            'insertRow(0, {"0": "守卫说“明天见”，转身离开", "1": "北门"})',
            {0: "守卫说“明天见”，转身离开", 1: "北门"},
            id="ascii-quoted-value-holds-curly-quotes-and-a-full-width-comma",
        ),
        pytest.param(
            'insertRow(0, {0: "他说“好”", 1: "x"})',
            {0: "他说“好”", 1: "x"},
            id="curly-quote-right-before-the-ascii-closer",
        ),
        pytest.param(
            'insertRow(0, {“0”: “他说"走吧", 然后离开”, “1”: “门口”})',
            {0: '他说"走吧", 然后离开', 1: "门口"},
            id="curly-quoted-value-holds-ascii-quotes-and-a-comma",
        ),
        pytest.param(
            "insertRow(0, {0: '‘钥匙’, 她说：“在我这”', 1: 'y'})",
            {0: "‘钥匙’, 她说：“在我这”", 1: "y"},
            id="single-quoted-value-holds-curly-single-and-double-quotes",
        ),
        pytest.param(
            "insertRow(0, {0: ‘it's mine’, 1: 'z'})",
            {0: "it's mine", 1: "z"},
            id="curly-single-quoted-value-holds-an-apostrophe",
        ),
        pytest.param(
            'updateRow(1, 0, {"2": "（暂停）：“等等，”他说，“还有一件事”"})',
            {2: "（暂停）：“等等，”他说，“还有一件事”"},
            id="full-width-colon-parenthesis-and-comma-after-inner-quotes",
        ),
    ],
)
def test_a_value_ends_at_a_quote_of_its_own_kind(body: str, expected: dict[int, str]) -> None:
    assert values_of(body) == [expected]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param('insertRow(0, {0: “abc", 1: “def"})', {0: "abc", 1: "def"}, id="curly-open-ascii-close"),
        pytest.param('insertRow(0, {0: "abc”, 1: "def"})', {0: "abc", 1: "def"}, id="ascii-open-curly-close"),
        pytest.param("insertRow(0, {0: “abc“, 1: “def“})", {0: "abc", 1: "def"}, id="curly-open-twice"),
        pytest.param("insertRow(0, {0: 'abc’})", {0: "abc"}, id="single-open-curly-single-close"),
    ],
)
def test_mismatched_closing_quotes_are_still_read(body: str, expected: dict[int, str]) -> None:
    """Models close `“…` with `"` and `"…` with `”`: with no closer of the opener's kind, the other kind closes."""
    assert values_of(body) == [expected]


def test_the_example_no_longer_drops_the_call_or_the_next_one() -> None:
    body = 'insertRow(0, {"0": "守卫说“明天见”，转身离开"})\ndeleteRow(1, 0)'
    result = parse_table_edits(block(body))
    assert [(c.op, c.values) for c in result.calls] == [("insert", {0: "守卫说“明天见”，转身离开"}), ("delete", {})]


# --- the property: any cell text, written with the plugin's quoting, comes back unchanged -------------------------

# The characters that trip readers: quotes of every kind, separators, colons, braces, brackets, escapes.
TRICKY = "\"'“”‘’＂「」,，:：;；{}()（）[]\\/ \t\n\u3000-#0123"
CELL_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from(TRICKY) | st.sampled_from("ab守卫说明天见"), max_size=30),
    st.text(st.characters(exclude_characters="\x00"), max_size=30),  # NUL is dropped (test_unstorable_cells.py)
).filter(lambda text: not re.search(r"<\s*/?\s*(tableEdit|think)", text, re.IGNORECASE))
COLUMNS = ["日期", "人物", "事件", "地点"]


def plugin_call(op: str, values: dict[int, str]) -> str:
    """A call as the plugin writes one: the dictionary is `JSON.stringify` of {"col": "text"}."""
    data = json.dumps({str(k): v for k, v in values.items()}, ensure_ascii=False)
    return f"insertRow(0, {data})" if op == "insert" else f"updateRow(0, 0, {data})"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(["insert", "update"]),
    values=st.dictionaries(st.integers(0, len(COLUMNS) - 1), CELL_TEXT, min_size=1, max_size=len(COLUMNS)),
)
def test_plugin_quoted_cell_text_survives_parse_apply_render(op: str, values: dict[int, str]) -> None:
    table = TableState(name="事件表", columns=COLUMNS, rows=[["旧"] * len(COLUMNS)])
    result = parse_table_edits(block(plugin_call(op, values)))
    assert result.skipped == () and len(result.calls) == 1
    assert result.calls[0].values == values

    applied = apply_calls([table], result.calls)
    assert applied.skipped == []
    row = ["旧"] * len(COLUMNS) if op == "update" else [""] * len(COLUMNS)
    for column, text in values.items():
        row[column] = text
    expected_rows = [row] if op == "update" else [["旧"] * len(COLUMNS), row]
    assert applied.tables[0].rows == expected_rows
    typed_in = TableState(name="事件表", columns=COLUMNS, rows=expected_rows)
    assert render_tables(applied.tables) == render_tables([typed_in])
