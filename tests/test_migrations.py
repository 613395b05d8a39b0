"""Migrations keep every row: a database written at the previous layout migrates to the latest one intact.

Long-term memories and the Hinos models moved from the memories app to the apps `longterm` and `hinos`
(state only, tables kept: memories 0006, longterm 0001, hinos 0001). This test migrates the test database
back to that layout (memories 0005, no longterm, no hinos), writes rows through the historical models,
migrates to the latest migrations (whatever later ones exist: the graph's leaf nodes) and reads every row
back through the current models. Old-layout models are reached through the historical state only.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.hinos.models import HinosClaim
from memories.longterm.models import EmbeddingIndex, LongTermMemory, LongTermMemoryVersion, Task, TaskCheckpoint
from memories.models import Conversation, Product, Turn

pytestmark = pytest.mark.django_db(transaction=True)

PREVIOUS_LAYOUT = [("memories", "0005_memory_cas_function"), ("longterm", None), ("hinos", None)]
MOVED = {
    "longterm": [
        "embeddingindex",
        "longtermmemory",
        "longtermmemoryversion",
        "admissionrefusal",
        "task",
        "taskcheckpoint",
        "taskreport",
    ],
    "hinos": ["hinosclaim", "failedhinoscommit"],
}
AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def previous_layout():
    """The historical app registry at the previous layout; the database is migrated to the latest afterwards."""
    try:
        # The state migrate() returns holds every app as the database now has it (contenttypes included).
        yield MigrationExecutor(connection).migrate(PREVIOUS_LAYOUT).apps
    finally:
        migrate_to_latest()
        ContentType.objects.clear_cache()


def stored_values(obj) -> Counter:
    """The values of a row's concrete columns (names aside: a later migration may rename a column)."""
    fields = obj._meta.concrete_fields
    return Counter(json.dumps(getattr(obj, f.attname), sort_keys=True, default=str) for f in fields)


def write_previous_layout(apps) -> dict[str, object]:
    """One row of each kind, written as the previous release wrote them (all in the memories app)."""

    def model(name: str):
        return apps.get_model("memories", name)

    product = model("Product").objects.create(name="before the split")
    scenario = model("Scenario").objects.create(product=product, slug="gate", name="Gate", memory_runtime="hinos")
    conversation = model("Conversation").objects.create(product=product, user_id="u1", conversation_id="c1", rounds=1)
    turn = model("Turn").objects.create(
        product=product,
        conversation=conversation,
        user_id="u1",
        conversation_key="c1",
        scenario=scenario,
        scenario_slug="gate",
        scenario_version=1,
        runtime="hinos",
        round=1,
        status="committed",
        user_message="我答应明天归还铜钥匙",
        assistant_message="守卫点头，记下了约定",
        prompt="p",
        runtime_state={"claimId": "claim-1"},
        committed_at=AT,
    )
    index = model("EmbeddingIndex").objects.create(
        provider="local",
        model="fast-use",
        dimension=512,
        preprocessing="none",
        identity_key="local:fast-use:512:none",
        backend="sqlite-exact",
        status="active",
        activated_at=AT,
    )
    content = {"language": "zh", "detail": "brief", "text": "用户喜欢简短的中文回答"}
    memory = model("LongTermMemory").objects.create(
        product=product,
        user_id="u1",
        kind="preference",
        content=content,
        evidence="以后请用简短的中文回答我",
        source="以后请用简短的中文回答我，谢谢。",
        version=2,
        search_text="简短 中文 回答",
        embedding_index=index,
    )
    version = model("LongTermMemoryVersion").objects.create(
        product=product,
        user_id="u1",
        memory_id=memory.memory_id,
        version=2,
        action="updated",
        kind="preference",
        content=content,
        evidence=memory.evidence,
        operation_id="op-1",
        actor_type="api_key",
        actor="key:abc",
    )
    task = model("Task").objects.create(product=product, user_id="u1", task_id="t1", input={"p": 1})
    checkpoint = model("TaskCheckpoint").objects.create(
        task=task, stage="collect", data={"done": 1}, fingerprint="f" * 64, operation_id="op-2"
    )
    claim = model("HinosClaim").objects.create(
        claim_id="claim-1",
        product=product,
        conversation=conversation,
        user_id="u1",
        conversation_key="c1",
        scenario=scenario,
        scenario_slug="gate",
        memory="用户答应明天归还铜钥匙",
        turn=1,
        state_through_round=0,
        status="committed",
        commit_digest="d" * 64,
        awaiting=["diaries"],
        committed_turn=turn,
        committed_at=AT,
    )
    return {
        "product": product,
        "conversation": conversation,
        "turn": turn,
        "index": index,
        "memory": memory,
        "version": version,
        "task": task,
        "checkpoint": checkpoint,
        "claim": claim,
    }


def label_moved_content_types_as_before(apps) -> dict[int, tuple[str, str]]:
    """Content types as the previous layout had them (memories.*); returns pk → the label each must get."""
    content_type = apps.get_model("contenttypes", "ContentType")
    expected = {}
    for app_label, models in MOVED.items():
        for name in models:
            content_type.objects.filter(app_label="memories", model=name).delete()
            row, _ = content_type.objects.get_or_create(app_label=app_label, model=name)
            content_type.objects.filter(pk=row.pk).update(app_label="memories")
            expected[row.pk] = (app_label, name)
    return expected


def test_rows_written_at_the_previous_layout_survive_the_migrations(previous_layout):
    apps = previous_layout
    old = write_previous_layout(apps)
    before = {name: stored_values(type(row).objects.get(pk=row.pk)) for name, row in old.items()}
    content_types = label_moved_content_types_as_before(apps)

    migrate_to_latest()
    ContentType.objects.clear_cache()

    current = {
        "product": Product,
        "conversation": Conversation,
        "turn": Turn,
        "index": EmbeddingIndex,
        "memory": LongTermMemory,
        "version": LongTermMemoryVersion,
        "task": Task,
        "checkpoint": TaskCheckpoint,
        "claim": HinosClaim,
    }
    for name, model in current.items():
        after = stored_values(model.objects.get(pk=old[name].pk))
        assert before[name] - after == Counter(), f"{name}: values lost in the migration"

    memory = LongTermMemory.objects.select_related("product", "embedding_index").get()
    assert (memory.memory_id, memory.version, memory.kind) == (old["memory"].memory_id, 2, "preference")
    assert memory.content["text"] == "用户喜欢简短的中文回答" and memory.product.name == "before the split"
    assert memory.embedding_index.identity_key == "local:fast-use:512:none"
    assert list(LongTermMemoryVersion.objects.values_list("memory_id", "version", "action")) == [
        (memory.memory_id, 2, "updated")
    ]
    checkpoint = TaskCheckpoint.objects.select_related("task").get()
    assert (checkpoint.task.task_id, checkpoint.stage, checkpoint.data) == ("t1", "collect", {"done": 1})
    claim = HinosClaim.objects.select_related("committed_turn", "conversation_row").get()
    assert (claim.claim_id, claim.status, claim.awaiting) == ("claim-1", "committed", ["diaries"])
    assert claim.committed_turn.pk == old["turn"].pk and claim.conversation_row.pk == old["conversation"].pk
    assert claim.conversation_id == "c1"  # the product's id, under the name every model uses
    turn = Turn.objects.get()
    assert (turn.user_message, turn.round, turn.status) == ("我答应明天归还铜钥匙", 1, "committed")
    assert turn.runtime_state == {"claimId": "claim-1"}
    assert Conversation.objects.get().turns.get().pk == turn.pk  # the turn still belongs to its conversation

    for pk, label in content_types.items():  # admin permissions and log entries follow their models
        assert ContentType.objects.filter(pk=pk).values_list("app_label", "model").get() == label
    assert ContentType.objects.get_for_model(LongTermMemory).pk in content_types
    assert ContentType.objects.get_for_model(HinosClaim).pk in content_types


def test_kinds_that_exist_keep_the_statement_policy_and_the_migration_reverses():
    """longterm 0006 adds `evidence_policy` ("statement" for every existing kind); unapplied, the column goes."""
    from memories.longterm.models import MemoryKind

    before, after = [("longterm", "0005_turn_rollback")], [("longterm", "0006_kind_evidence_policy")]
    try:
        apps = MigrationExecutor(connection).migrate(before).apps
        product = apps.get_model("memories", "Product").objects.create(name="before the policy")
        apps.get_model("longterm", "MemoryKind").objects.create(
            product=product, name="diet", content_schema={"type": "object"}
        )
        MigrationExecutor(connection).migrate(after)
        assert MemoryKind.objects.values_list("name", "evidence_policy").get() == ("diet", "statement")
        MigrationExecutor(connection).migrate(before)
        with connection.cursor() as cursor:
            columns = [c.name for c in connection.introspection.get_table_description(cursor, "longterm_memorykind")]
        assert "evidence_policy" not in columns and "default_ttl_days" in columns
    finally:
        migrate_to_latest()
