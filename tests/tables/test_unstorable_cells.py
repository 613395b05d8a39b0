"""A NUL a model writes into a `<tableEdit>` cell (`\\u0000`, or raw) is dropped from the cell; every call is
still applied. On PostgreSQL it failed the whole table job, with the database's SQL text as the reason."""

from __future__ import annotations

import pytest
from django.db import DataError

from tables.parsing import parse_table_edits
from tables.tasks import apply_table_edits
from tests.support.api import assert_envelope

from .support import edit
from .test_tables_pipeline import CONV, create_scenario, prepare

pytestmark = pytest.mark.django_db


def _complete(api, reply: str) -> int:
    create_scenario(api)
    turn = prepare(api, "rp", "hi")["turnId"]
    assert api.post(f"{CONV}/turns/{turn}/complete", {"assistantMessage": reply}).status_code == 200
    return turn


def _rows(api, name: str = "时空表格") -> list[list[str]]:
    table = next(t for t in api.get(f"{CONV}/tables").json()["tables"] if t["name"] == name)
    return table["rows"]


def test_a_nul_escape_in_a_cell_is_dropped_and_every_call_applied(alice):
    turn = _complete(alice, edit('insertRow(0, {0: "五月\\u0000一日", 2: "灯塔"})', 'insertRow(0, {0: "五月二日"})'))
    assert apply_table_edits(turn) == "updated"
    rows = _rows(alice)
    assert [row[0] for row in rows] == ["五月一日", "五月二日"] and rows[0][2] == "灯塔"
    assert alice.get(f"{CONV}/turns/{turn}").json()["memoryWrite"]["status"] == "done"


def test_a_nul_character_in_the_reply_refuses_the_reply_and_stores_nothing(alice):
    """The reply is the client's JSON body: a NUL character in it is 400 naming its path (docs/tables.md)."""
    create_scenario(alice)
    turn = prepare(alice, "rp", "hi")["turnId"]
    reply = edit('insertRow(0, {0: "五月\x00一日"})')
    refused = assert_envelope(alice.post(f"{CONV}/turns/{turn}/complete", {"assistantMessage": reply}), 400)
    assert (refused["code"], refused["details"]["path"]) == ("invalid_request", "/assistantMessage")
    assert alice.get(f"{CONV}/turns/{turn}").json()["status"] == "prepared"
    assert alice.get(f"{CONV}/messages").json()["results"] == []


def test_a_raw_nul_is_dropped_by_the_parser_too():
    # A reply cannot carry a raw NUL through the API (400) and PostgreSQL would not store one; the parser
    # still never hands one on.
    (call,) = parse_table_edits(edit('insertRow(0, {0: "五月\x00一日", 1: "\\u0000"})')).calls
    assert call.values == {0: "五月一日", 1: ""}


def test_a_database_error_fails_the_job_without_its_sql_text(alice, monkeypatch):
    turn = _complete(alice, edit('insertRow(0, {0: "五月一日"})'))

    def refuse(**_):
        raise DataError('invalid input syntax for type json\nCONTEXT:  UPDATE "tables_memorytable" SET rows = ...')

    monkeypatch.setattr("tables.tasks.turn_table_edits_apply", refuse)
    with pytest.raises(DataError):
        apply_table_edits(turn)
    write = alice.get(f"{CONV}/turns/{turn}").json()["memoryWrite"]
    assert write["status"] == "failed"
    assert "UPDATE" not in write["reason"] and "DataError" in write["reason"]
