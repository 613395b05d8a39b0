"""Turn.conversation_id is the product's conversation id (as on every model); the FK to its row is conversation_row.

The rename (memories migration `*_turn_conversation_id`) keeps every turn with its conversation: rows written
before it are read back after it with the same link, the same client id, and the same index.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.models import Conversation, Turn
from memories.services.turns import turn_get
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import NotFound
from tables.models import TableEditRecord

RENAME = "turn_conversation_id"


def rename_migration(executor: MigrationExecutor) -> tuple[str, str]:
    [node] = [key for key in executor.loader.graph.nodes if key[0] == "memories" and key[1].endswith(RENAME)]
    return node


@pytest.fixture
def before_the_rename():
    """The historical models just before the rename; the database is migrated to the latest afterwards."""
    executor = MigrationExecutor(connection)
    rename = executor.loader.get_migration(*rename_migration(executor))
    [previous] = [dependency for dependency in rename.dependencies if dependency[0] == "memories"]
    try:
        executor.migrate([previous])
        executor.loader.build_graph()  # the applied set changed
        yield executor.loader.project_state(list(executor.loader.applied_migrations)).apps  # every app, as applied
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def write_turn(apps, product, conversation_id: str, *, round: int):
    conversation = apps.get_model("memories", "Conversation").objects.create(
        product=product, user_id="u1", conversation_id=conversation_id, rounds=round
    )
    turn = apps.get_model("memories", "Turn").objects.create(
        product=product,
        conversation=conversation,
        user_id="u1",
        conversation_key=conversation_id,
        scenario_slug="gate",
        scenario_version=1,
        runtime="personalization",
        round=round,
        status="committed",
        user_message=f"message in {conversation_id}",
        assistant_message="reply",
        prompt="p",
    )
    return conversation, turn


@pytest.mark.django_db(transaction=True)
def test_a_turn_written_before_the_rename_keeps_its_conversation(before_the_rename):
    apps = before_the_rename
    product = apps.get_model("memories", "Product").objects.create(name="before the rename")
    gate, gate_turn = write_turn(apps, product, "gate-talk", round=1)
    market, market_turn = write_turn(apps, product, "market-talk", round=2)
    apps.get_model("tables", "TableEditRecord").objects.create(
        product=product, user_id="u1", conversation_id="gate-talk", turn=gate_turn, round=1, outcome="unchanged"
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    turn = Turn.objects.select_related("conversation_row").get(pk=gate_turn.pk)
    assert (turn.conversation_id, turn.conversation_row_id, turn.round) == ("gate-talk", gate.pk, 1)
    assert turn.conversation_row.conversation_id == "gate-talk"
    assert list(Conversation.objects.get(pk=market.pk).turns.values_list("pk", flat=True)) == [market_turn.pk]
    assert TableEditRecord.objects.get().turn.conversation_id == "gate-talk"  # FKs to the turn still resolve
    address = ConversationAddress(turn.product, "u1", "gate-talk")
    assert turn_get(address=address, turn_id=turn.pk).user_message == "message in gate-talk"
    with pytest.raises(NotFound):  # the client's id still scopes the turn to its conversation
        turn_get(address=ConversationAddress(turn.product, "u1", "market-talk"), turn_id=turn.pk)
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Turn._meta.db_table)
    assert constraints["turn_conversation_idx"]["columns"] == ["product_id", "user_id", "conversation_id", "id"]


def test_a_prepared_turn_links_its_conversation_row_and_the_products_conversation_id(alice):
    alice.post("/v1/scenarios", {"id": "gate", "name": "Gate", "template": "{{userMessage}}"})
    body = alice.post("/v1/users/u1/conversations/c1/turns", {"scenarioId": "gate", "userMessage": "hi"}).json()
    assert "conversationId" not in body and "conversation" not in body  # the API output is unchanged
    turn = Turn.objects.get(pk=body["turnId"])
    conversation = Conversation.objects.get(product=alice.product, user_id="u1", conversation_id="c1")
    assert (turn.conversation_id, turn.conversation_row_id) == ("c1", conversation.pk)


def test_the_conversation_admin_links_to_its_turns_only(alice, client):
    client.force_login(User.objects.create_superuser("ops", "ops@example.com", "pw"))  # login() has no request
    alice.post("/v1/scenarios", {"id": "gate", "name": "Gate", "template": "{{userMessage}}"})
    turns = {
        conv: alice.post(
            f"/v1/users/u1/conversations/{conv}/turns", {"scenarioId": "gate", "userMessage": "hi"}
        ).json()["turnId"]
        for conv in ("c1", "c2")
    }
    conversation = Conversation.objects.get(conversation_id="c1")
    listing = client.get("/admin/memories/conversation/").content.decode()
    link = f"/admin/memories/turn/?conversation_row__id__exact={conversation.pk}"
    assert link in listing
    page = client.get(link).content.decode()
    assert f"/admin/memories/turn/{turns['c1']}/change/" in page
    assert f"/admin/memories/turn/{turns['c2']}/change/" not in page
