"""Row locks that never wait for foreign-key checks (PostgreSQL): the cause of bench/load.py's stray 503s.

Every INSERT of a row with a foreign key makes PostgreSQL lock the referenced rows FOR KEY SHARE (Django's
constraints are DEFERRABLE INITIALLY DEFERRED, so at the commit). A transaction that locked such a parent row
FOR UPDATE — a turn, its conversation, or the product through `select_related("product")` — blocked those
checks, and under load the waits closed into deadlocks (docs/performance.md, "Under load"): a prepare's turn
INSERT waited for its conversation, a task's `SELECT turn JOIN product FOR UPDATE` waited for that INSERT's
lock on the product, and another transaction's COMMIT waited for the task's turn. PostgreSQL aborted one, and
the request answered 503. The locks are now FOR NO KEY UPDATE of the row itself, which KEY SHARE does not
conflict with. Here another connection holds exactly the locks a pending foreign-key check holds (`SELECT 1
… FOR KEY SHARE`, what PostgreSQL's RI trigger runs) and each locking path must go through at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from memories.models import Conversation, Turn
from memories.services.memory_write import memory_write_finish
from memories.tasks import turn_background_done_record
from tables.turn_edits import turn_table_edits_apply
from tests.support.processes import database_url
from tests.support.registry import only_commit_hooks

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "locks",
    "name": "locks",
    "memorySources": [{"id": "t", "agentRef": "table-agent", "variable": "memoryTable"}],
    "template": "{{memoryTable}}\n{{userMessage}}",
    "tables": [{"name": "物品", "columns": ["拥有人", "物品名"], "required": False}],
}
EDIT = '好的。\n<tableEdit>\n<!--\ninsertRow(0, {"0": "艾琳", "1": "风灯"})\n-->\n</tableEdit>'


@pytest.fixture
def lock_timeout() -> Iterator[None]:
    """A lock wait fails after 2 s instead of hanging the test (the default waits forever)."""
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")
    yield
    with connection.cursor() as cursor:
        cursor.execute("RESET lock_timeout")


@pytest.fixture
def key_share() -> Iterator[Callable[[str, object], None]]:
    """Another connection holding FOR KEY SHARE on rows, as an insert's pending foreign-key checks do."""
    other = psycopg.connect(database_url(connection.settings_dict))

    def hold(table: str, pk: object) -> None:
        other.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR KEY SHARE", [pk])

    yield hold
    other.rollback()
    other.close()


def prepared(alice) -> Turn:
    # No commit hooks: nothing is scheduled, so a session's Celery worker cannot take locks of its own (the
    # tests call the background services themselves).
    only_commit_hooks({})
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    response = alice.post(f"{CONV}/turns", {"scenarioId": "locks", "userMessage": "继续"})
    assert response.status_code == 201, response.json()
    return Turn.objects.get(pk=response.json()["turnId"])


def hold_parents(hold, turn: Turn) -> None:
    hold("memories_product", turn.product_id)
    hold("memories_conversation", turn.conversation_row_id)
    hold("memories_turn", turn.pk)


def test_a_plain_for_update_with_the_product_joined_waits_for_key_share(alice, lock_timeout, key_share):
    """The control: the lock the background tasks used to take does wait for a pending foreign-key check."""
    turn = prepared(alice)
    key_share("memories_product", turn.product_id)
    with pytest.raises(OperationalError, match="lock timeout"), transaction.atomic():
        Turn.objects.select_for_update().select_related("product").filter(pk=turn.pk).first()


def test_complete_goes_through_pending_foreign_key_checks(alice, lock_timeout, key_share):
    turn = prepared(alice)
    hold_parents(key_share, turn)
    response = alice.post(f"{CONV}/turns/{turn.pk}/complete", {"assistantMessage": EDIT})
    assert response.status_code == 200, response.json()
    assert Conversation.objects.get(pk=turn.conversation_row_id).rounds == 1


def test_background_work_goes_through_pending_foreign_key_checks(alice, lock_timeout, key_share):
    turn = prepared(alice)
    assert alice.post(f"{CONV}/turns/{turn.pk}/complete", {"assistantMessage": EDIT}).status_code == 200
    Turn.objects.filter(pk=turn.pk).update(memory_write={"status": "pending", "work": {"locks": "pending"}})
    hold_parents(key_share, turn)

    record = turn_table_edits_apply(turn_pk=turn.pk)  # locks the conversation
    assert record is not None
    assert memory_write_finish(turn_pk=turn.pk, work="locks") == {"status": "done", "work": {"locks": "done"}}
    assert turn_background_done_record(turn_pk=turn.pk)  # locks the turn
    assert turn.events.filter(type="turn.background_done").count() == 1
