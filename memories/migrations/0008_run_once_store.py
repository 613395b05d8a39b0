"""One run-once store: Idempotency-Key records and operationId records become RunOnceRecord rows.

Every old row is carried over with its key, fingerprint and creation time (the purge goes by it):
- an IdempotencyRecord keeps its stored HTTP answer as the result {"status", "body"} (the API edge
  replays it as it was);
- a MemoryOperation's stored response body becomes the service result the services replay: the
  written memory, checkpoint or report with `created` (the answer was 201), so a retry after the
  migration answers exactly what the first request answered.
Migration 0009 then drops the two old tables.
"""

import itertools

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

BATCH = 1000


def _zulu(value: str) -> str:
    """Times as the API wrote them: ISO 8601 in UTC with a Z suffix."""
    return value[:-6] + "Z" if value.endswith("+00:00") else value


def operation_result(action: str, status: int, body: dict, product_id: str, user_id: str) -> dict:
    """An old operation's response body as the result its service now stores."""
    created = status == 201
    if action in ("memory.create", "memory.update"):
        memory = {
            "product_id": product_id,
            "user_id": user_id,
            "memory_id": body["id"],
            "kind": body["kind"],
            "content": body["content"],
            "evidence": body["evidence"],
            "source": body["source"],
            "version": body["version"],
            "created_at": body["createdAt"],
            "updated_at": body["updatedAt"],
        }
        return {"created": created, "memory": memory}
    task = {"product_id": product_id, "user_id": user_id, "task_id": body.get("taskId")}
    if action == "task.checkpoint":
        checkpoint = {"stage": body["stage"], "data": body["data"], "committed_at": body["committedAt"]}
        return {"created": created, "task": task, "checkpoint": checkpoint}
    if action == "task.report":
        report = {"report": body["report"]["data"], "published_at": body["report"]["publishedAt"]}
        return {"created": created, "task": task, "report": report}
    return {"created": created, "status": status, "body": body}  # no other action was ever written


def operation_response(action: str, result: dict) -> tuple[int, dict]:
    """The inverse of operation_result: (status, response body) as MemoryOperation stored them."""
    status = 201 if result.get("created") else 200
    if "memory" in result:
        m = result["memory"]
        return status, {
            "id": m["memory_id"],
            "key": f"{m['product_id']}:{m['user_id']}:memory:{m['memory_id']}",
            "kind": m["kind"],
            "content": m["content"],
            "evidence": m["evidence"],
            "source": m["source"],
            "version": m["version"],
            "createdAt": _zulu(m["created_at"]),
            "updatedAt": _zulu(m["updated_at"]),
        }
    task = result.get("task") or {}
    task_key = f"{task.get('product_id')}:{task.get('user_id')}:task:{task.get('task_id')}"
    if "checkpoint" in result:
        c = result["checkpoint"]
        return status, {
            "taskId": task["task_id"],
            "stage": c["stage"],
            "key": f"{task_key}:{c['stage']}",
            "data": c["data"],
            "committedAt": _zulu(c["committed_at"]),
        }
    if "report" in result:
        r = result["report"]
        return status, {
            "taskId": task["task_id"],
            "report": {"data": r["report"], "publishedAt": _zulu(r["published_at"])},
        }
    return result.get("status", status), result.get("body", {})


def forward(apps, schema_editor):
    record = apps.get_model("memories", "RunOnceRecord")
    idempotency = apps.get_model("memories", "IdempotencyRecord")
    operation = apps.get_model("memories", "MemoryOperation")
    keys = (
        record(
            product_id=r.product_id,
            kind="idempotency-key",
            key=r.key,
            user_id="",
            action="memory.replace",
            fingerprint=r.request_hash,
            result={"status": r.status_code, "body": r.response},
            created_at=r.created_at,
        )
        for r in idempotency.objects.order_by("pk").iterator(chunk_size=BATCH)
    )
    operations = (
        record(
            product_id=o.product_id,
            kind="operation",
            key=o.operation_id,
            user_id=o.user_id,
            action=o.action,
            fingerprint=o.fingerprint,
            created_at=o.created_at,
            result=operation_result(o.action, o.status_code, o.response, o.product_id, o.user_id),
        )
        for o in operation.objects.order_by("pk").iterator(chunk_size=BATCH)
    )
    rows = itertools.chain(keys, operations)
    while batch := list(itertools.islice(rows, BATCH)):
        record.objects.bulk_create(batch)


def backward(apps, schema_editor):
    record = apps.get_model("memories", "RunOnceRecord")
    idempotency = apps.get_model("memories", "IdempotencyRecord")
    operation = apps.get_model("memories", "MemoryOperation")
    for r in record.objects.order_by("pk").iterator(chunk_size=BATCH):
        if r.kind == "idempotency-key":
            old = idempotency.objects.create(
                product_id=r.product_id,
                key=r.key,
                request_hash=r.fingerprint,
                status_code=r.result["status"],
                response=r.result["body"],
            )
        else:
            status, body = operation_response(r.action, r.result)
            old = operation.objects.create(
                product_id=r.product_id,
                operation_id=r.key,
                user_id=r.user_id,
                action=r.action,
                fingerprint=r.fingerprint,
                status_code=status,
                response=body,
            )
        type(old).objects.filter(pk=old.pk).update(created_at=r.created_at)  # auto_now_add set "now"


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0007_turn_conversation_id"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunOnceRecord",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "kind",
                    models.CharField(
                        choices=[("idempotency-key", "Idempotency-Key header"), ("operation", "operationId")],
                        max_length=32,
                    ),
                ),
                ("key", models.CharField(help_text="The Idempotency-Key or the operationId.", max_length=255)),
                (
                    "user_id",
                    models.CharField(blank=True, help_text="Empty for Idempotency-Key records.", max_length=128),
                ),
                (
                    "action",
                    models.CharField(
                        help_text="memory.replace, memory.create, memory.update, task.checkpoint, task.report",
                        max_length=32,
                    ),
                ),
                ("fingerprint", models.CharField(help_text="SHA-256 of the canonical request.", max_length=64)),
                (
                    "result",
                    models.JSONField(
                        help_text="What a replay answers: the HTTP response for an Idempotency-Key, the service's result for an operationId."
                    ),
                ),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ("product", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="memories.product")),
            ],
            options={
                "verbose_name": "run-once record",
                "constraints": [models.UniqueConstraint(fields=("product", "kind", "key"), name="run_once_key_unique")],
            },
        ),
        migrations.RunPython(forward, backward),
    ]
