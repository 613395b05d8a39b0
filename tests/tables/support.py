"""Rows the table tests need: scenarios with table templates and committed turns (as the pipeline leaves them)."""
from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from memories.models import Conversation, Event, MemorySource, Product, Scenario, Turn
from memoryhub.addresses import ConversationAddress
from tables.validation import validate_tables_section

TEMPLATES = [
    {"name": "时空表格", "columns": ["日期", "时间", "地点（当前描写）", "此地角色"], "note": "记录时空信息的表格，应保持在一行",
     "rules": {"init": "本轮需要记录当前时间、地点、人物信息，使用insertRow函数", "update": "当描写的场景，时间，人物变更时",
               "delete": "此表大于一行时应删除多余行"}, "required": True},
    {"name": "重要物品表格", "columns": ["拥有人", "物品描述", "物品名", "重要原因"], "note": "对某人很贵重或有特殊纪念意义的物品",
     "rules": {"insert": "当某人获得了贵重或有特殊意义的物品时"}},
]


def make_scenario(
    product: Product, *, slug: str = "rp", tables: object = None, webhook: dict | None = None,
    runtime: str = "axon_go",
) -> Scenario:
    sections: dict = {"tables": validate_tables_section(TEMPLATES if tables is None else tables)}
    if webhook is not None:
        sections["tableWebhook"] = webhook
    scenario = Scenario.objects.create(
        product=product, slug=slug, name=slug, memory_runtime=runtime,
        template="{{memoryTable}}\nUser: {{userMessage}}", sections=sections,
    )
    MemorySource.objects.create(scenario=scenario, source_id="tables", agent_ref="table-agent", variable="memoryTable")
    return scenario


def commit_turn(
    product: Product, scenario: Scenario, reply: str, *, user_id: str = "u1", conversation_id: str = "c1",
    replaces: Turn | None = None,
) -> Turn:
    """A committed turn at the conversation's next round (or the replaced turn's round), as the pipeline leaves it."""
    conversation, _ = Conversation.objects.get_or_create(product=product, user_id=user_id, conversation_id=conversation_id)
    if replaces is None:
        Conversation.objects.filter(pk=conversation.pk).update(rounds=F("rounds") + 1)
        conversation.refresh_from_db()
        number = conversation.rounds
    else:
        Turn.objects.filter(pk=replaces.pk).update(status="superseded")
        number = replaces.round
    return Turn.objects.create(
        product=product, conversation=conversation, user_id=user_id, conversation_key=conversation_id,
        scenario=scenario, scenario_slug=scenario.slug, scenario_version=scenario.version,
        runtime=scenario.memory_runtime, round=number, status="committed", user_message=f"round {number}",
        assistant_message=reply, prompt="", replaces=replaces, completed_at=timezone.now(), committed_at=timezone.now(),
    )


def address(product: Product, user_id: str = "u1", conversation_id: str = "c1") -> ConversationAddress:
    return ConversationAddress(product, user_id, conversation_id)


def events(product: Product, type: str | None = None, conversation_id: str = "c1") -> list[Event]:
    rows = Event.objects.filter(product=product, conversation_id=conversation_id)
    if type:
        rows = rows.filter(type=type)
    return list(rows.order_by("id"))


def edit(*calls: str) -> str:
    """A reply with prose around one `<tableEdit>` block wrapped in an HTML comment, as models write it."""
    body = "\n".join(calls)
    return f"她推开门，雨还在下。\n<tableEdit>\n<!--\n{body}\n-->\n</tableEdit>"
