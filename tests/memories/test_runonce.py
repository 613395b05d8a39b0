"""The run-once store: one table and one fingerprint for Idempotency-Key and operationId, and its data migration."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from memories.longterm.api.serializers import checkpoint_result, memory_to_dict, report_result
from memories.longterm.services import checkpoints, memories
from memories.models import RunOnceRecord
from memories.services import runonce
from memories.services.runonce import Codec, OperationIdReused, RunOnce
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import Conflict, IdempotencyKeyReused

JSON = Codec[dict](encode=lambda value: dict(value), decode=lambda stored: {**stored, "replayed": True})


def operation(product, key: str = "op-1", request: object = "body") -> RunOnce:
    return RunOnce.operation(product, "u1", key, "memory.create", runonce.request_fingerprint("POST", "/x", request))


def idempotency_key(product, key: str = "key-1", request: object = "body") -> RunOnce:
    address = ConversationAddress(product, "u1", "c1")
    return RunOnce.idempotency_key(address, key, "memory.replace", runonce.request_fingerprint("PUT", "/x", request))


def test_one_fingerprint_canonical_json_sha256():
    assert runonce.fingerprint({"b": 1, "a": "中"}) == runonce.fingerprint({"a": "中", "b": 1})
    canonical = json.dumps(["PUT", "/p", {"a": "中"}], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # The same hashes the earlier separate implementations stored, so migrated records still match.
    assert runonce.request_fingerprint("PUT", "/p", {"a": "中"}) == hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.django_db
def test_the_same_key_and_request_replays_without_running_again(alice):
    calls = []

    def perform() -> dict:
        calls.append(1)
        return {"n": len(calls)}

    for make in (operation, idempotency_key):
        calls.clear()
        assert runonce.run_once(make(alice.product), perform, JSON) == {"n": 1}
        assert runonce.run_once(make(alice.product), perform, JSON) == {"n": 1, "replayed": True}
        assert calls == [1]
    # Kinds are separate: an operationId and an Idempotency-Key may be the same string.
    assert runonce.run_once(operation(alice.product, "same"), lambda: {"op": 1}, JSON) == {"op": 1}
    assert runonce.run_once(idempotency_key(alice.product, "same"), lambda: {"key": 1}, JSON) == {"key": 1}
    assert RunOnceRecord.objects.count() == 4


@pytest.mark.django_db
def test_the_same_key_with_another_request_is_refused(alice, bob):
    runonce.run_once(operation(alice.product), lambda: {"n": 1}, JSON)
    runonce.run_once(idempotency_key(alice.product), lambda: {"n": 1}, JSON)
    with pytest.raises(OperationIdReused) as caught:
        runonce.run_once(operation(alice.product, request="other"), lambda: pytest.fail("must not run"), JSON)
    assert caught.value.code == "operation_id_reused"
    assert caught.value.details == {"operationId": "op-1", "action": "memory.create"}
    with pytest.raises(IdempotencyKeyReused) as caught:
        runonce.run_once(idempotency_key(alice.product, request="other"), lambda: pytest.fail("must not run"), JSON)
    assert caught.value.details == {"header": "Idempotency-Key"}
    # Keys are per product: bob's "op-1" is his own.
    assert runonce.run_once(operation(bob.product, request="other"), lambda: {"bob": 1}, JSON) == {"bob": 1}


@pytest.mark.django_db
def test_a_failed_write_stores_nothing_and_a_retry_runs(alice):
    def refuse() -> dict:
        raise Conflict("not now")

    with pytest.raises(Conflict):
        runonce.run_once(operation(alice.product), refuse, JSON)
    assert not RunOnceRecord.objects.exists()
    assert runonce.run_once(operation(alice.product), lambda: {"n": 1}, JSON) == {"n": 1}


@pytest.mark.django_db
def test_the_loser_of_a_race_rolls_back_and_answers_with_the_winners_result(alice):
    runonce.run_once(operation(alice.product), lambda: {"winner": True}, JSON)  # committed meanwhile

    def loser() -> dict:
        RunOnceRecord.objects.create(
            product=alice.product, kind="operation", key="side-effect", action="x", fingerprint="f", result={}
        )
        return {"winner": False}

    # commit() is the part after the replay check: its own record hits the unique constraint.
    assert runonce.commit(operation(alice.product), loser, JSON) == {"winner": True, "replayed": True}
    assert not RunOnceRecord.objects.filter(key="side-effect").exists()  # the loser's write rolled back


@pytest.mark.django_db
def test_no_key_runs_every_time(alice):
    assert runonce.run_once(None, lambda: {"n": 1}, JSON) == {"n": 1}
    assert runonce.run_once(None, lambda: {"n": 2}, JSON) == {"n": 2}
    assert not RunOnceRecord.objects.exists()


@pytest.mark.django_db
def test_the_purge_deletes_old_idempotency_keys_only(alice):
    for make, key in ((idempotency_key, "old-key"), (idempotency_key, "new-key"), (operation, "old-op")):
        runonce.run_once(make(alice.product, key), lambda: {}, JSON)
    RunOnceRecord.objects.exclude(key="new-key").update(created_at=timezone.now() - timedelta(days=30))
    out = io.StringIO()
    call_command("purge_idempotency_keys", stdout=out)
    assert out.getvalue().strip() == "deleted 1 record"
    assert sorted(RunOnceRecord.objects.values_list("key", flat=True)) == ["new-key", "old-op"]


@pytest.mark.django_db
def test_the_admin_lists_both_kinds_read_only(admin_client, alice):
    alice.put(
        "/v1/users/u1/conversations/c1/memory",
        {"expectedRevision": 0, "memory": {"a": 1}},
        HTTP_IDEMPOTENCY_KEY="key-admin",
    )
    runonce.run_once(operation(alice.product, "op-admin"), lambda: {"n": 1}, JSON)
    listing = admin_client.get("/admin/memories/runoncerecord/").content.decode()
    assert "key-admin" in listing and "op-admin" in listing
    assert "op-admin" not in admin_client.get("/admin/memories/runoncerecord/?kind=idempotency-key").content.decode()
    record = RunOnceRecord.objects.get(key="key-admin")
    assert (record.kind, record.action, record.result) == (
        "idempotency-key",
        "memory.replace",
        {"status": 200, "body": {"revision": 1}},
    )
    assert "revision" in admin_client.get(f"/admin/memories/runoncerecord/{record.pk}/change/").content.decode()
    assert admin_client.get("/admin/memories/runoncerecord/add/").status_code == 403


# ---------------------------------------------------------------------------------------------
# The data migration: IdempotencyRecord and MemoryOperation rows become RunOnceRecord rows
# ---------------------------------------------------------------------------------------------

RUN_ONCE_MIGRATION = "0008_run_once_store"
BEFORE = importlib.import_module(f"memories.migrations.{RUN_ONCE_MIGRATION}").Migration.dependencies
AT = datetime(2026, 11, 2, 9, 30, 15, 123456, tzinfo=UTC)


def migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor


@pytest.fixture
def old_layout():
    """The historical models just before the run-once store; the database ends at the latest migrations."""
    try:
        yield migrate(BEFORE).loader.project_state(BEFORE).apps
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def old_rows(apps) -> dict[str, object]:
    """One old row of each kind, with the bodies the API answered when they were written."""
    product = apps.get_model("memories", "Product").objects.create(name="before the store")
    p = product.pk
    memory = {
        "id": "mem_0123456789abcdef",
        "key": f"{p}:u1:memory:mem_0123456789abcdef",
        "kind": "preference",
        "content": {"language": "zh", "detail": "brief", "text": "用户喜欢简短的中文回答"},
        "evidence": "以后请用简短的中文回答我",
        "source": "以后请用简短的中文回答我，谢谢。",
        "version": 1,
        "createdAt": "2026-11-02T09:30:15.123456Z",
        "updatedAt": "2026-11-02T09:30:15.123456Z",
    }
    bodies = {
        "memory.create": (201, memory),
        "memory.update": (200, {**memory, "version": 2, "updatedAt": "2026-11-02T09:31:00Z"}),
        "task.checkpoint": (
            201,
            {
                "taskId": "t1",
                "stage": "collect",
                "key": f"{p}:u1:task:t1:collect",
                "data": {"done": 1},
                "committedAt": "2026-11-02T09:32:00.500000Z",
            },
        ),
        "task.report": (
            200,
            {"taskId": "t1", "report": {"data": {"ok": True}, "publishedAt": "2026-11-02T09:33:00.000001Z"}},
        ),
    }
    operation_model = apps.get_model("memories", "MemoryOperation")
    rows = {}
    for n, (action, (status, body)) in enumerate(bodies.items()):
        row = operation_model.objects.create(
            product=product,
            operation_id=f"op-{n}",
            user_id="u1",
            action=action,
            fingerprint=f"{n}" * 64,
            status_code=status,
            response=body,
        )
        rows[action] = row
    rows["idempotency"] = apps.get_model("memories", "IdempotencyRecord").objects.create(
        product=product, key="key-1", request_hash="k" * 64, status_code=200, response={"revision": 7}
    )
    for row in rows.values():
        type(row).objects.filter(pk=row.pk).update(created_at=AT)
    return rows


@pytest.mark.django_db(transaction=True)
def test_the_data_migration_carries_every_old_record_over_and_they_still_replay(old_layout):
    old = old_rows(old_layout)
    migrate_forward = MigrationExecutor(connection)
    migrate_forward.migrate(migrate_forward.loader.graph.leaf_nodes())

    assert RunOnceRecord.objects.count() == len(old)
    stored = RunOnceRecord.objects.get(kind="idempotency-key")
    assert (stored.key, stored.fingerprint, stored.action) == ("key-1", "k" * 64, "memory.replace")
    assert stored.result == {"status": 200, "body": {"revision": 7}} and stored.created_at == AT
    product = stored.product

    def replayed(action: str, codec):
        row = old[action]
        request = RunOnce.operation(product, "u1", row.operation_id, action, row.fingerprint)
        record = RunOnceRecord.objects.get(kind="operation", key=row.operation_id)
        assert (record.user_id, record.action, record.created_at) == ("u1", action, AT)
        outcome = runonce.replay(request, codec)
        assert outcome.replayed
        return outcome, row

    for action in ("memory.create", "memory.update"):
        outcome, row = replayed(action, memories.RESULT)
        # Answers stored before expiry, supersession and turn rollback existed replay with those fields empty.
        new_fields = {
            "expiresAt": None,
            "supersededBy": None,
            "supersededAt": None,
            "turnId": None,
            "rolledBackAt": None,
        }
        assert outcome.created == (row.status_code == 201)
        assert memory_to_dict(outcome.memory) == {**row.response, **new_fields}
    outcome, row = replayed("task.checkpoint", checkpoints.CHECKPOINT_RESULT)
    assert outcome.created and checkpoint_result(outcome.checkpoint) == row.response
    outcome, row = replayed("task.report", checkpoints.REPORT_RESULT)
    assert not outcome.created and report_result(outcome.report) == row.response

    # And back: the old tables get their rows again, as they were.
    apps = migrate(BEFORE).loader.project_state(BEFORE).apps
    operations = apps.get_model("memories", "MemoryOperation").objects
    for action in ("memory.create", "memory.update", "task.checkpoint", "task.report"):
        row = operations.get(operation_id=old[action].operation_id)
        assert (row.action, row.status_code, row.response, row.fingerprint, row.created_at) == (
            action,
            old[action].status_code,
            old[action].response,
            old[action].fingerprint,
            AT,
        )
    key = apps.get_model("memories", "IdempotencyRecord").objects.get()
    assert (key.key, key.request_hash, key.status_code, key.response, key.created_at) == (
        "key-1",
        "k" * 64,
        200,
        {"revision": 7},
        AT,
    )
