"""Request and response shapes of long-term memories, search and task checkpoints (camelCase).

The serializer classes describe the shapes (validation and the OpenAPI schema); the `*_to_dict`
functions build the answers from what services and selectors return (models and dataclasses).
"""

from __future__ import annotations

from rest_framework import serializers

from memories.longterm.models import LongTermMemory, TaskCheckpoint, TaskReport
from memories.longterm.selectors import TaskState
from memories.services.runonce import OPERATION_ID
from memories.validation import compact_json, json_depth
from memoryhub.api.fields import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from memoryhub.timefmt import iso

MAX_JSON_BYTES = 65_536
MAX_JSON_DEPTH = 32


class BoundedObjectField(JSONObjectField):
    """A JSON object of bounded size and nesting, like a memory document (M4)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if json_depth(value) > MAX_JSON_DEPTH:
            raise serializers.ValidationError(f"nested deeper than {MAX_JSON_DEPTH} levels")
        if len(compact_json(value).encode()) > MAX_JSON_BYTES:
            raise serializers.ValidationError(f"larger than {MAX_JSON_BYTES} bytes as compact JSON")
        return value


class OperationIdField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=128, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not OPERATION_ID.fullmatch(value):
            raise serializers.ValidationError("must be 1-128 characters of A-Za-z0-9_.:@-")
        return value


class ProposalFields(StrictSerializer):
    content = BoundedObjectField(help_text='For kind "preference": {"language", "detail", "text"}.')
    evidence = StrictCharField(max_length=2000, help_text="A verbatim quote of `source` that states the memory.")
    source = StrictCharField(max_length=20_000, help_text="What the user wrote.")
    consent = StrictBooleanField(help_text="Set by the product backend (the trusted controller), never by a model.")
    operationId = OperationIdField(required=False, help_text="Repeat-safe retries: same id + same body → same result.")


class MemoryCreateSerializer(ProposalFields):
    kind = StrictCharField(max_length=64)


class MemoryUpdateSerializer(ProposalFields):
    expectedVersion = StrictIntegerField(min_value=1)


class SearchSerializer(StrictSerializer):
    query = StrictCharField(max_length=1000)
    mode = serializers.ChoiceField(choices=["keyword", "semantic"], help_text="Required: no silent default.")
    limit = StrictIntegerField(min_value=1, max_value=50, required=False, default=10)
    cursor = StrictCharField(required=False, allow_null=True, max_length=200)


class CheckpointSerializer(StrictSerializer):
    data = BoundedObjectField()
    input = BoundedObjectField(required=False, help_text="Required on a task's first checkpoint; fixed afterwards.")
    operationId = OperationIdField()


class ReportSerializer(StrictSerializer):
    data = BoundedObjectField()
    operationId = OperationIdField(required=False)


class MemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    key = serializers.CharField(help_text="<product>:<user>:memory:<id>")
    kind = serializers.CharField()
    content = serializers.JSONField()
    evidence = serializers.CharField()
    source = serializers.CharField()
    version = serializers.IntegerField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class MemoryPageSerializer(serializers.Serializer):
    results = MemorySerializer(many=True)
    next = serializers.CharField(allow_null=True)


class SearchResultSerializer(MemorySerializer):
    score = serializers.FloatField()


class SearchPageSerializer(serializers.Serializer):
    mode = serializers.CharField()
    query = serializers.CharField()
    results = SearchResultSerializer(many=True)
    next = serializers.CharField(allow_null=True)
    embeddingIdentity = serializers.CharField(required=False)


class StageSerializer(serializers.Serializer):
    stage = serializers.CharField()
    key = serializers.CharField()
    data = serializers.JSONField()
    committedAt = serializers.DateTimeField()


class CheckpointResultSerializer(StageSerializer):
    taskId = serializers.CharField()


class ReportBodySerializer(serializers.Serializer):
    data = serializers.JSONField()
    publishedAt = serializers.DateTimeField()


class ReportResultSerializer(serializers.Serializer):
    taskId = serializers.CharField()
    report = ReportBodySerializer()


class TaskSerializer(serializers.Serializer):
    taskId = serializers.CharField()
    key = serializers.CharField()
    input = serializers.JSONField(allow_null=True)
    stages = StageSerializer(many=True)
    report = ReportBodySerializer(allow_null=True)


# ---------------------------------------------------------------------------------------------
# Answers
# ---------------------------------------------------------------------------------------------


def memory_to_dict(memory: LongTermMemory) -> dict:
    return {
        "id": memory.memory_id,
        "key": memory.key,
        "kind": memory.kind,
        "content": memory.content,
        "evidence": memory.evidence,
        "source": memory.source,
        "version": memory.version,
        "createdAt": iso(memory.created_at),
        "updatedAt": iso(memory.updated_at),
    }


def checkpoint_to_dict(checkpoint: TaskCheckpoint) -> dict:
    return {
        "stage": checkpoint.stage,
        "key": checkpoint.key,
        "data": checkpoint.data,
        "committedAt": iso(checkpoint.committed_at),
    }


def report_to_dict(report: TaskReport) -> dict:
    return {"data": report.report, "publishedAt": iso(report.published_at)}


def checkpoint_result(checkpoint: TaskCheckpoint) -> dict:
    return {"taskId": checkpoint.task.task_id, **checkpoint_to_dict(checkpoint)}


def report_result(report: TaskReport) -> dict:
    return {"taskId": report.task.task_id, "report": report_to_dict(report)}


def task_to_dict(task: TaskState) -> dict:
    return {
        "taskId": task.task_id,
        "key": task.key,
        "input": task.input,
        "stages": [checkpoint_to_dict(c) for c in task.checkpoints],
        "report": report_to_dict(task.report) if task.report else None,
    }
