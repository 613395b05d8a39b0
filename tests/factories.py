"""Model factories (factory-boy): rows as the product's own code paths would leave them.

Tests that go through the API use the `alice` / `bob` fixtures (a product with a real key); tests that
need rows before or beside the pipeline build them here, e.g.

    scenario = TableScenarioFactory(product=alice.product)
    turn = TurnFactory(scenario=scenario, assistant_message=reply)   # committed, at the next round
"""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth.models import User
from django.utils import timezone
from factory.django import DjangoModelFactory

from diaries.models import DiaryEntry
from memories.models import Conversation, Event, MemorySource, Product, Scenario, Turn
from tables.validation import validate_tables_section

# Two of the SillyTavern plugin's tables, as a scenario's "tables" section gives them.
TABLE_TEMPLATES = [
    {
        "name": "时空表格",
        "columns": ["日期", "时间", "地点（当前描写）", "此地角色"],
        "note": "记录时空信息的表格，应保持在一行",
        "rules": {
            "init": "本轮需要记录当前时间、地点、人物信息，使用insertRow函数",
            "update": "当描写的场景，时间，人物变更时",
            "delete": "此表大于一行时应删除多余行",
        },
        "required": True,
    },
    {
        "name": "重要物品表格",
        "columns": ["拥有人", "物品描述", "物品名", "重要原因"],
        "note": "对某人很贵重或有特殊纪念意义的物品",
        "rules": {"insert": "当某人获得了贵重或有特殊意义的物品时"},
    },
]
TABLE_SOURCES = [("tables", "table-agent", "memoryTable")]
DIARY_AGENT_REF = "diary-orchestrator"
DIARY_SOURCES = [("diary", DIARY_AGENT_REF, "compassMemory")]


class SuperuserFactory(DjangoModelFactory):
    """An operator who can use the admin; log in with `password`."""

    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = "op"
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.com")
    password = factory.django.Password("pw")
    is_staff = True
    is_superuser = True


class ProductFactory(DjangoModelFactory):
    """A product without keys (API tests use the `alice` / `bob` fixtures, whose key the product service issued)."""

    class Meta:
        model = Product

    name = factory.Sequence(lambda n: f"product-{n}")


Sources = list[tuple[str, str, str]]


def _add_sources(scenario: Scenario, sources: Sources) -> None:
    for position, (source_id, agent_ref, variable) in enumerate(sources):
        MemorySourceFactory(
            scenario=scenario, position=position, source_id=source_id, agent_ref=agent_ref, variable=variable
        )


class ScenarioFactory(DjangoModelFactory):
    """A scenario; `sources` lists its memory sources as (id, agentRef, variable) in prompt order."""

    class Meta:
        model = Scenario
        skip_postgeneration_save = True

    product = factory.SubFactory(ProductFactory)
    slug = "rp"
    name = factory.SelfAttribute("slug")
    memory_runtime = "axon_go"
    template = "{{userMessage}}"
    sections = factory.LazyFunction(dict)

    @factory.post_generation
    def sources(self, create: bool, extracted: Sources | None, **_: Any) -> None:
        _add_sources(self, extracted or ())


class MemorySourceFactory(DjangoModelFactory):
    class Meta:
        model = MemorySource

    scenario = factory.SubFactory(ScenarioFactory)
    source_id = factory.Sequence(lambda n: f"source-{n}")
    agent_ref = "agent"
    variable = "jsonMemory"


class TableScenarioFactory(ScenarioFactory):
    """A scenario with table templates (`tables`: a section value, TABLE_TEMPLATES by default; `webhook`: the
    after-step) and the memoryTable source, validated as the scenario API stores them."""

    class Params:
        tables = None
        webhook = None

    template = "{{memoryTable}}\nUser: {{userMessage}}"
    sections = factory.LazyAttribute(
        lambda o: {
            "tables": validate_tables_section(TABLE_TEMPLATES if o.tables is None else o.tables),
            **({"tableWebhook": o.webhook} if o.webhook is not None else {}),
        }
    )

    @factory.post_generation
    def sources(self, create: bool, extracted: Sources | None, **_: Any) -> None:
        _add_sources(self, TABLE_SOURCES if extracted is None else extracted)


class DiaryScenarioFactory(ScenarioFactory):
    """A scenario with an optional diary policy (`diary`) and the compassMemory source (DIARY_SOURCES)."""

    class Params:
        diary = None

    template = "Diary:\n{{compassMemory}}\nUser: {{userMessage}}"
    sections = factory.LazyAttribute(lambda o: {"diary": o.diary} if o.diary is not None else {})

    @factory.post_generation
    def sources(self, create: bool, extracted: Sources | None, **_: Any) -> None:
        _add_sources(self, DIARY_SOURCES if extracted is None else extracted)


class ConversationFactory(DjangoModelFactory):
    class Meta:
        model = Conversation
        django_get_or_create = ("product", "user_id", "conversation_id")

    product = factory.SubFactory(ProductFactory)
    user_id = "u1"
    conversation_id = "c1"


def _next_round(turn: Any) -> int:
    if turn.replaces is not None:
        return turn.replaces.round
    return Conversation.objects.filter(pk=turn.conversation_row.pk).values_list("rounds", flat=True).get() + 1


class TurnFactory(DjangoModelFactory):
    """A committed turn as the pipeline leaves it: at its conversation's next round, which it completes.

    `replaces=turn` regenerates that turn's round instead: the replaced turn becomes superseded.
    """

    class Meta:
        model = Turn

    scenario = factory.SubFactory(ScenarioFactory)
    product = factory.SelfAttribute("scenario.product")
    user_id = "u1"
    conversation_id = "c1"
    conversation_row = factory.SubFactory(
        ConversationFactory,
        product=factory.SelfAttribute("..product"),
        user_id=factory.SelfAttribute("..user_id"),
        conversation_id=factory.SelfAttribute("..conversation_id"),
    )
    scenario_slug = factory.SelfAttribute("scenario.slug")
    scenario_version = factory.SelfAttribute("scenario.version")
    runtime = factory.SelfAttribute("scenario.memory_runtime")
    replaces = None
    round = factory.LazyAttribute(_next_round)
    status = "committed"
    user_message = factory.LazyAttribute(lambda o: f"Round {o.round}: the lighthouse keeper asks about the storm.")
    assistant_message = factory.LazyAttribute(lambda o: f"Round {o.round}: the storm broke the lighthouse lamp again.")
    prompt = ""
    completed_at = factory.LazyFunction(timezone.now)
    committed_at = factory.LazyFunction(timezone.now)

    @classmethod
    def _create(cls, model_class: type[Turn], *args: Any, **kwargs: Any) -> Turn:
        turn = super()._create(model_class, *args, **kwargs)
        if turn.replaces is not None:
            Turn.objects.filter(pk=turn.replaces.pk).update(status="superseded")
        Conversation.objects.filter(pk=turn.conversation_row.pk, rounds__lt=turn.round).update(rounds=turn.round)
        return turn


class EventFactory(DjangoModelFactory):
    """An event of a conversation; with `turn=`, of that turn's conversation."""

    class Meta:
        model = Event

    turn = None
    product = factory.LazyAttribute(lambda o: o.turn.product if o.turn else ProductFactory())
    user_id = factory.LazyAttribute(lambda o: o.turn.user_id if o.turn else "u1")
    conversation_id = factory.LazyAttribute(lambda o: o.turn.conversation_id if o.turn else "c1")
    type = "turn.completed"
    details = factory.LazyFunction(dict)


class DiaryEntryFactory(DjangoModelFactory):
    """A stored summary of rounds round_from..round_to (summary only unless `body` is given)."""

    class Meta:
        model = DiaryEntry

    product = factory.SubFactory(ProductFactory)
    user_id = "u1"
    conversation_id = "c1"
    agent_ref = "diary-main"
    round_from = 1
    round_to = factory.SelfAttribute("round_from")
    kind = factory.LazyAttribute(lambda o: "summary_only" if o.body is None else "summary_and_diary")
    summary = factory.LazyAttribute(lambda o: f"Rounds {o.round_from}-{o.round_to}.")
    body = None
    summarizer = "test"
