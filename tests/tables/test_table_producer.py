"""The memoryTable producer: every template table from the first prepare on, versions, the working set."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceConfig
from memoryhub.runtimes.registry import get_producer
from tables.models import MemoryTable
from tables.producers import produce_memory_table
from tables.services import WriteCause, table_replace
from tables.turn_edits import turn_table_edits_apply
from tests.factories import TableScenarioFactory, TurnFactory

from .support import edit

pytestmark = pytest.mark.django_db

SOURCE = SourceConfig("tables", "table-agent", "memoryTable")
EMPTY_TEXT = (
    "* 0:时空表格\n【说明】记录时空信息的表格，应保持在一行\n【表格内容】\n"
    "rowIndex,0:日期,1:时间,2:地点（当前描写）,3:此地角色\n（此表格当前为空）\n"
    "【增删改触发条件】\n插入：本轮需要记录当前时间、地点、人物信息，使用insertRow函数\n\n\n"
    "* 1:重要物品表格\n【说明】对某人很贵重或有特殊纪念意义的物品\n【表格内容】\n"
    "rowIndex,0:拥有人,1:物品描述,2:物品名,3:重要原因\n（此表格当前为空）\n"
    "【增删改触发条件】\n插入：当某人获得了贵重或有特殊意义的物品时\n\n"
)


def recall(product, scenario, *, round_number=1, user_id="u1", conversation_id="c1", replaces=None):
    return produce_memory_table(
        RecallRequest(
            address=ConversationAddress(product, user_id, conversation_id),
            source=SOURCE,
            scenario=scenario,
            round=round_number,
            replaces_turn_id=replaces,
        )
    )


def test_the_producer_is_registered_for_memory_table() -> None:
    assert get_producer("memoryTable") is produce_memory_table


def test_a_scenario_without_templates_is_empty(alice):
    scenario = TableScenarioFactory(product=alice.product)
    scenario.sections = {}
    result = recall(alice.product, scenario)
    assert (result.status, result.text) == ("empty", "")


def test_the_first_prepare_renders_every_template_table_with_placeholders(alice):
    result = recall(alice.product, TableScenarioFactory(product=alice.product))
    assert result.status == "ok"
    assert result.text == EMPTY_TEXT
    ids = list(MemoryTable.objects.order_by("position").values_list("pk", flat=True))
    assert result.details["versions"] == {str(ids[0]): 1, str(ids[1]): 1}
    assert result.version == 2  # the sum of the table versions
    assert [t["name"] for t in result.details["tables"]] == ["时空表格", "重要物品表格"]


def test_tables_follow_the_scenario_template_order(alice):
    scenario = TableScenarioFactory(product=alice.product)
    scenario.sections["tables"].reverse()
    assert recall(alice.product, scenario).text.startswith("* 0:重要物品表格\n")


def test_a_turn_write_invalidates_the_working_set_and_the_next_prompt_shows_the_row(alice):
    scenario = TableScenarioFactory(product=alice.product)
    recall(alice.product, scenario)  # first use creates the tables (a write: the entry is invalidated)
    cache.clear()  # as if the invalidation's short tombstone had expired
    assert recall(alice.product, scenario).cached is False
    assert recall(alice.product, scenario).cached is True
    turn_table_edits_apply(
        turn_pk=TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "五月", 2: "码头"})')).pk
    )
    after = recall(alice.product, scenario, round_number=2)
    assert after.cached is False and after.version == 3
    assert "rowIndex,0:日期,1:时间,2:地点（当前描写）,3:此地角色\n0,五月,,码头,\n" in after.text
    assert "更新：当描写的场景，时间，人物变更时" in after.text  # a filled required table shows its rules


def test_a_manual_write_invalidates_the_working_set(alice):
    scenario = TableScenarioFactory(product=alice.product)
    recall(alice.product, scenario)
    table = MemoryTable.objects.get(name="重要物品表格")
    table_replace(
        table=table, expected_version=1, rows=[["艾琳", "风灯", "灯", "遗物"]], cause=WriteCause("operator", "o")
    )
    assert "0,艾琳,风灯,灯,遗物\n" in recall(alice.product, scenario).text


def test_a_regenerated_round_is_prompted_with_the_tables_before_that_round(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(
        turn_pk=TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "第一轮"})')).pk
    )
    second = TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "第二轮"})'))
    turn_table_edits_apply(turn_pk=second.pk)
    again = recall(alice.product, scenario, round_number=2, replaces=second.pk)  # round 2 being regenerated
    assert "0,第一轮,,,\n" in again.text and "第二轮" not in again.text
    assert again.details["asBeforeRound"] is True and again.cached is False
    assert again.version == 3
    assert "第二轮" in recall(alice.product, scenario, round_number=3).text


def test_only_a_regeneration_is_rewound(alice):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(
        turn_pk=TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "第一轮"})')).pk
    )
    result = recall(alice.product, scenario, round_number=1)  # not a replacement: tables as they are now
    assert "第一轮" in result.text and "asBeforeRound" not in result.details


def test_tables_are_per_user_conversation_and_product(alice, bob):
    scenario = TableScenarioFactory(product=alice.product)
    turn_table_edits_apply(
        turn_pk=TurnFactory(scenario=scenario, assistant_message=edit('insertRow(0, {0: "alice"})')).pk
    )
    assert "alice" not in recall(alice.product, scenario, conversation_id="c2").text
    assert "alice" not in recall(alice.product, scenario, user_id="u2").text
    assert "alice" not in recall(bob.product, TableScenarioFactory(product=bob.product)).text
