"""Generated messages count correctly: "1 round", "2 rounds"."""

from __future__ import annotations

from diaries.planning import DiaryPolicy, DiaryState, plan_diary
from memoryhub.wording import count


def test_count_says_one_in_the_singular():
    assert [count(n, "round") for n in (0, 1, 2)] == ["0 rounds", "1 round", "2 rounds"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"


def test_the_diary_skip_reason_says_1_round():
    policy = DiaryPolicy(min_rounds=20, free_rounds_per_diary=10)
    assert plan_diary(DiaryState(21, 20, 0), policy).reason == "1 round since last diary < 10"
    assert plan_diary(DiaryState(22, 20, 0), policy).reason == "2 rounds since last diary < 10"


def test_a_full_table_of_one_row_says_1_row():
    from tables.applying import TableState, apply_calls
    from tables.parsing import parse_table_edits

    table = TableState(name="时空", columns=["地点"], rows=[["灯塔"]], max_rows=1)
    result = apply_calls([table], parse_table_edits("<tableEdit>insertRow(0, {0: '楼梯'})</tableEdit>").calls)
    assert [s["reason"] for s in result.skipped] == ["table 0 is full (max 1 row); row not inserted"]


def test_purging_one_idempotency_key_says_1_record(monkeypatch):
    import io

    from django.core.management import call_command

    monkeypatch.setattr("memories.management.commands.purge_idempotency_keys.idempotency_keys_purge", lambda: 1)
    out = io.StringIO()
    call_command("purge_idempotency_keys", stdout=out)
    assert out.getvalue().strip() == "deleted 1 record"
