"""The table services: instantiation, compare-and-set replace, and applying a committed turn's reply."""

from __future__ import annotations

import pytest

from memoryhub.errors import RevisionConflict
from tables.models import MemoryTable, MemoryTableVersion, TableEditRecord
from tables.services import WriteCause, table_replace, tables_ensure
from tables.turn_edits import turn_table_edits_apply
from tests.factories import TABLE_TEMPLATES, TableScenarioFactory, TurnFactory

from .faults import concurrent_write_when_asked, request_concurrent_writes
from .support import address, edit, events

pytestmark = pytest.mark.django_db

INSERT_SCENE = 'insertRow(0, {0: "2024-05-01", 1: "夜", 2: "旧灯塔", 3: "艾琳"})'
INSERT_ITEM = "insertRow(1, {“0”：“艾琳”，“1”：“一盏 铜制 风灯”，“2”：“风灯”，“3”：“母亲的遗物, 不能丢”})"


def rows(product, name="时空表格", conversation_id="c1"):
    return MemoryTable.objects.get(product=product, conversation_id=conversation_id, name=name).rows


def table(product, name="时空表格"):
    return MemoryTable.objects.get(product=product, user_id="u1", conversation_id="c1", name=name)


def between_read_and_write(fault_injection, handler) -> None:
    fault_injection.register(fault_injection.TABLE_EDITS_BETWEEN_READ_AND_WRITE, handler)


# --- instantiation -------------------------------------------------------------------------------


def test_first_use_creates_every_template_table_empty_at_version_1_with_history(alice):
    created = tables_ensure(address(alice.product), TABLE_TEMPLATES)
    assert [(t.name, t.position, t.version, t.rows) for t in created] == [
        ("时空表格", 0, 1, []),
        ("重要物品表格", 1, 1, []),
    ]
    assert list(MemoryTableVersion.objects.filter(table=created[0]).values_list("version", "cause")) == [(1, "created")]
    assert [t.pk for t in tables_ensure(address(alice.product), TABLE_TEMPLATES)] == [t.pk for t in created]


def test_a_template_added_later_is_instantiated_and_existing_rows_are_kept(alice):
    first = tables_ensure(address(alice.product), TABLE_TEMPLATES[:1])[0]
    table_replace(table=first, expected_version=1, rows=[["d", "t", "p", "c"]], cause=WriteCause("api_key", "k"))
    both = tables_ensure(address(alice.product), TABLE_TEMPLATES)
    assert [t.name for t in both] == ["时空表格", "重要物品表格"]
    assert both[0].rows == [["d", "t", "p", "c"]] and both[0].version == 2


# --- compare-and-set ----------------------------------------------------------------------------


def test_replace_bumps_the_version_and_records_who(alice):
    t = tables_ensure(address(alice.product), TABLE_TEMPLATES)[0]
    outcome = table_replace(
        table=t, expected_version=1, rows=[["a", "b", "c", "d"]], cause=WriteCause("operator", "ops")
    )
    assert (outcome.version, outcome.changed) == (2, True)
    history = MemoryTableVersion.objects.get(table=t, version=2)
    assert (history.rows, history.cause, history.actor) == ([["a", "b", "c", "d"]], "operator", "ops")


def test_replace_with_equal_rows_writes_nothing_and_keeps_the_version(alice):
    t = tables_ensure(address(alice.product), TABLE_TEMPLATES)[0]
    table_replace(table=t, expected_version=1, rows=[["a", "b", "c", "d"]], cause=WriteCause("operator", "ops"))
    outcome = table_replace(
        table=t, expected_version=2, rows=[["a", "b", "c", "d"]], cause=WriteCause("operator", "ops")
    )
    assert (outcome.version, outcome.changed) == (2, False)
    assert MemoryTableVersion.objects.filter(table=t).count() == 2


def test_stale_version_is_a_conflict_and_changes_nothing(alice):
    t = tables_ensure(address(alice.product), TABLE_TEMPLATES)[0]
    table_replace(table=t, expected_version=1, rows=[["a", "b", "c", "d"]], cause=WriteCause("operator", "ops"))
    with pytest.raises(RevisionConflict) as caught:
        table_replace(table=t, expected_version=1, rows=[["x", "", "", ""]], cause=WriteCause("operator", "ops"))
    assert caught.value.details == {"currentRevision": 2, "currentVersion": 2}
    assert rows(alice.product) == [["a", "b", "c", "d"]]


# --- a committed turn's reply -------------------------------------------------------------------


def test_an_insert_replaces_the_table_and_emits_table_updated(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn = TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE))
    record = turn_table_edits_apply(turn_pk=turn.pk)
    assert record.outcome == "updated" and record.attempts == 1
    assert rows(alice.product) == [["2024-05-01", "夜", "旧灯塔", "艾琳"]]
    assert table(alice.product).version == 2 and table(alice.product, "重要物品表格").version == 1
    history = MemoryTableVersion.objects.get(table=table(alice.product), version=2)
    assert (history.cause, history.turn_id) == ("turn", turn.pk)
    [event] = events(alice.product, "table.updated")
    assert event.turn_id == turn.pk
    assert event.details["applied"][0] | {"source": None} == {
        "op": "insert",
        "tableIndex": 0,
        "tableName": "时空表格",
        "rowIndex": 0,
        "block": 0,
        "source": None,
        "values": {"0": "2024-05-01", "1": "夜", "2": "旧灯塔", "3": "艾琳"},
        "changed": True,
    }
    assert event.details["skipped"] == []
    assert event.details["tables"] == [
        {"id": table(alice.product).pk, "index": 0, "name": "时空表格", "fromVersion": 1, "version": 2}
    ]


def test_sloppy_model_output_keeps_whitespace_and_commas(alice):
    turn = TurnFactory(scenario=TableScenarioFactory(product=alice.product), assistant_message=edit(INSERT_ITEM))
    turn_table_edits_apply(turn_pk=turn.pk)
    assert rows(alice.product, "重要物品表格") == [["艾琳", "一盏 铜制 风灯", "风灯", "母亲的遗物, 不能丢"]]


def test_a_reply_without_edits_keeps_the_version_and_emits_table_unchanged(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk)
    record = turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message="她只是笑了笑。").pk)
    assert record.outcome == "unchanged"
    assert table(alice.product).version == 2
    assert MemoryTableVersion.objects.filter(table=table(alice.product)).count() == 2
    [event] = events(alice.product, "table.unchanged")
    assert event.details["applied"] == [] and event.details["tables"] == []


def test_an_update_to_the_same_values_is_unchanged(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk)
    same = edit('updateRow(0, 0, {"2": "旧灯塔"})')
    assert (
        turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=same).pk).outcome == "unchanged"
    )
    assert table(alice.product).version == 2


def test_every_skipped_call_comes_back_with_its_reason(alice):
    scenario = TableScenarioFactory(product=alice.product)
    reply = (
        edit(
            INSERT_SCENE,
            'updateRow(0, 3, {"1": "晨"})',  # no such row
            "deleteRow(7, 0)",  # no such table
            'insertRow(1, {"0": "艾琳", "9": "x"})',  # column 9 skipped, the rest applies
            "deleteRow(角色表, 2)",  # not a number: that call only
        )
        + '\n<tableEdit>insertRow(0, {0: "truncated"})'
    )
    record = turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=reply).pk)
    assert record.outcome == "updated" and record.unclosed_block
    reasons = [s["reason"] for s in record.skipped]
    assert len(reasons) == 5 and all(reasons)
    assert any("row 3 does not exist" in r for r in reasons)
    assert any("table 7 does not exist" in r for r in reasons)
    assert any("column 9 does not exist" in r for r in reasons)
    assert any("not a number" in r for r in reasons)
    assert any("never closed" in r for r in reasons)
    assert rows(alice.product, "重要物品表格") == [["艾琳", "", "", ""]]
    assert rows(alice.product) == [["2024-05-01", "夜", "旧灯塔", "艾琳"]]
    assert events(alice.product, "table.updated")[0].details["skipped"] == record.skipped


def test_edits_of_several_tables_are_written_together(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk)
    reply = edit('updateRow(0, 0, {1: "黎明"})', INSERT_ITEM)
    record = turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=reply).pk)
    assert [(t["name"], t["version"]) for t in record.tables] == [("时空表格", 3), ("重要物品表格", 2)]
    assert rows(alice.product)[0][1] == "黎明"


def test_a_redelivered_task_applies_nothing_twice(alice):
    turn = TurnFactory(scenario=TableScenarioFactory(product=alice.product), assistant_message=edit(INSERT_SCENE))
    first = turn_table_edits_apply(turn_pk=turn.pk)
    again = turn_table_edits_apply(turn_pk=turn.pk)
    assert again.pk == first.pk
    assert len(rows(alice.product)) == 1 and table(alice.product).version == 2
    assert len(events(alice.product, "table.updated")) == 1


def test_nothing_happens_without_templates_or_before_commit(alice):
    scenario = TableScenarioFactory(product=alice.product)
    scenario.sections = {}
    scenario.save()
    assert (
        turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk) is None
    )
    prepared = TurnFactory(
        scenario=TableScenarioFactory(product=alice.product, slug="other"), assistant_message=edit(INSERT_SCENE)
    )
    prepared.status = "completed"
    prepared.save()
    assert turn_table_edits_apply(turn_pk=prepared.pk) is None
    assert turn_table_edits_apply(turn_pk=999_999) is None
    assert not MemoryTable.objects.exists() and not TableEditRecord.objects.exists()


def test_other_conversations_and_users_are_untouched(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message="…", conversation_id="c2").pk)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message="…", user_id="u2").pk)
    assert rows(alice.product, conversation_id="c2") == []
    assert MemoryTable.objects.get(user_id="u2", name="时空表格").rows == []


# --- replaced and regenerated replies ---------------------------------------------------------


def test_a_replacing_reply_is_applied_to_the_tables_as_before_its_round(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk)
    first = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(1, {0: "艾琳", 2: "风灯"})'))
    turn_table_edits_apply(turn_pk=first.pk)
    second = TurnFactory(
        scenario=scenario, assistant_message=edit('insertRow(1, {0: "艾琳", 2: "钥匙"})'), replaces=first
    )
    record = turn_table_edits_apply(turn_pk=second.pk)
    assert rows(alice.product, "重要物品表格") == [["艾琳", "", "钥匙", ""]]
    assert record.base_versions == {str(table(alice.product).pk): 2, str(table(alice.product, "重要物品表格").pk): 1}
    assert rows(alice.product) == [["2024-05-01", "夜", "旧灯塔", "艾琳"]]  # the earlier round stays
    assert events(alice.product, "table.updated")[-1].details["replacedTurnId"] == first.pk


def test_a_replacing_reply_without_edits_restores_the_tables(alice):
    scenario = TableScenarioFactory(product=alice.product)
    first = TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE))
    turn_table_edits_apply(turn_pk=first.pk)
    record = turn_table_edits_apply(
        turn_pk=TurnFactory(scenario=scenario, assistant_message="没有表格。", replaces=first).pk
    )
    assert record.outcome == "updated"
    assert rows(alice.product) == [] and table(alice.product).version == 3
    assert list(MemoryTableVersion.objects.filter(table=table(alice.product)).values_list("version", flat=True)) == [
        3,
        2,
        1,
    ]


def test_a_chain_of_regenerations_keeps_only_the_last_reply(alice):
    scenario = TableScenarioFactory(product=alice.product)
    first = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "一"})'))
    turn_table_edits_apply(turn_pk=first.pk)
    second = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "二"})'), replaces=first)
    turn_table_edits_apply(turn_pk=second.pk)
    third = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "三"})'), replaces=second)
    turn_table_edits_apply(turn_pk=third.pk)
    assert rows(alice.product) == [["三", "", "", ""]]


def test_a_replaced_reply_processed_late_applies_nothing(alice):
    scenario = TableScenarioFactory(product=alice.product)
    first = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "旧"})'))
    second = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "新"})'), replaces=first)
    turn_table_edits_apply(turn_pk=second.pk)  # the replacement's task ran first
    late = turn_table_edits_apply(turn_pk=first.pk)
    assert late.outcome == "superseded" and late.applied == []
    assert "replaced" in late.skipped[0]["reason"]
    assert rows(alice.product) == [["新", "", "", ""]]


# --- conflicts ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_conflict_is_re_read_and_re_applied_once(alice, fault_injection):
    scenario = TableScenarioFactory(product=alice.product)
    tables_ensure(address(alice.product), TABLE_TEMPLATES)
    request_concurrent_writes(address(alice.product), 1)
    between_read_and_write(fault_injection, concurrent_write_when_asked)
    record = turn_table_edits_apply(turn_pk=TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE)).pk)
    assert (record.outcome, record.attempts) == ("updated", 2)
    # the concurrent write is kept and the reply is applied on top of it
    assert rows(alice.product) == [["fault-injection-1", "", "", ""], ["2024-05-01", "夜", "旧灯塔", "艾琳"]]
    assert table(alice.product).version == 3


@pytest.mark.django_db(transaction=True)
def test_a_second_conflict_is_reported_and_writes_nothing(alice, fault_injection):
    scenario = TableScenarioFactory(product=alice.product)
    tables_ensure(address(alice.product), TABLE_TEMPLATES)
    request_concurrent_writes(address(alice.product), 5)
    seen = []
    between_read_and_write(fault_injection, lambda turn, attempt: seen.append(attempt))
    between_read_and_write(fault_injection, concurrent_write_when_asked)
    turn = TurnFactory(scenario=scenario, assistant_message=edit(INSERT_SCENE))
    record = turn_table_edits_apply(turn_pk=turn.pk)
    assert seen == [1, 2]  # re-read at most once
    assert (record.outcome, record.attempts, record.applied) == ("conflict", 2, [])
    assert rows(alice.product) == [["fault-injection-1", "", "", ""], ["fault-injection-2", "", "", ""]]
    [event] = events(alice.product, "table.conflict")
    assert event.details["tables"][0] | {"id": None} == {
        "id": None,
        "index": 0,
        "name": "时空表格",
        "expectedVersion": 2,
        "currentVersion": 3,
    }
    assert event.details["skipped"][0]["reason"].startswith("not applied: the table changed")
    assert not events(alice.product, "table.updated")
    assert turn_table_edits_apply(turn_pk=turn.pk).pk == record.pk and seen == [1, 2]  # redelivery: no third try


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_on_one_version_exactly_one_wins(alice):
    import threading

    from django.db import connections

    t = tables_ensure(address(alice.product), TABLE_TEMPLATES)[0]
    barrier, outcomes = threading.Barrier(8), []

    def writer(n: int) -> None:
        try:
            barrier.wait()
            table_replace(table=t, expected_version=1, rows=[[str(n), "", "", ""]], cause=WriteCause("api_key", str(n)))
            outcomes.append("won")
        except RevisionConflict:
            outcomes.append("conflict")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict"] * 7 + ["won"]
    t.refresh_from_db()
    assert t.version == 2 and MemoryTableVersion.objects.filter(table=t).count() == 2
