"""Request and response shapes of long-term memories, search and task checkpoints (camelCase).

The serializer classes describe the shapes (validation and the OpenAPI schema); the `*_to_dict`
functions build the answers from what services and selectors return (models and dataclasses).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.longterm.kinds import EVIDENCE_POLICIES, LIMITS
from memories.longterm.models import LongTermMemory, MemoryKind, TaskCheckpoint, TaskReport
from memories.longterm.selectors import TaskState
from memories.services.runonce import OPERATION_ID
from memories.validation import MAX_MEMORY_BYTES, MAX_MEMORY_DEPTH, compact_json, json_depth
from memoryhub.api.fields import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from memoryhub.api.openapi import whole_patch_body
from memoryhub.timefmt import iso

MAX_JSON_BYTES = MAX_MEMORY_BYTES  # a task's JSON is bounded as a memory document is (the import checks the same)
MAX_JSON_DEPTH = MAX_MEMORY_DEPTH


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
    content = BoundedObjectField(
        help_text='For kind "preference": {"language", "detail", "text"}; for a product kind: its contentSchema.'
    )
    evidence = StrictCharField(max_length=2000, help_text="A verbatim quote of `source` that states the memory.")
    source = StrictCharField(max_length=20_000, help_text="What the user wrote.")
    consent = StrictBooleanField(help_text="Set by the product backend (the trusted controller), never by a model.")
    operationId = OperationIdField(required=False, help_text="Repeat-safe retries: same id + same body → same result.")
    expiresAt = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the memory leaves every read (then it is deleted); default: the kind's defaultTtlDays. "
        "On PATCH, absent keeps the current expiry and null removes it.",
    )


class MemoryCreateSerializer(ProposalFields):
    kind = StrictCharField(max_length=64)
    turnId = StrictIntegerField(
        required=False,
        min_value=1,
        help_text="The conversation turn this memory comes from: superseding that turn (a regenerated, edited or "
        "deleted reply, a swipe) rolls the memory back; a select brings it back (docs/roleplay.md). "
        "Not a turn of this user: 422 unknown_turn; a superseded turn: 409 turn_superseded.",
    )


@whole_patch_body("PatchedMemoryUpdateRequest")  # the view validates it whole
class MemoryUpdateSerializer(ProposalFields):
    expectedVersion = StrictIntegerField(min_value=1)


class SearchSerializer(StrictSerializer):
    query = StrictCharField(max_length=1000)
    mode = serializers.ChoiceField(
        choices=["keyword", "semantic", "hybrid"],
        help_text="Required: no silent default. hybrid fuses the keyword and semantic rankings (docs/recall.md).",
    )
    limit = StrictIntegerField(min_value=1, max_value=50, required=False, default=10)
    minScore = StrictFloatField(
        min_value=-1.0,
        max_value=1.0,
        required=False,
        help_text=(
            "Floor on the semantic cosine (semantic and hybrid); hybrid defaults to SEARCH_MIN_SCORE, unset the "
            "floor measured for the configured embedder (0.15 for the bundled default, 0.18 for e5-minilm)."
        ),
    )
    cursor = StrictCharField(
        required=False,
        allow_null=True,
        max_length=200,
        help_text=(
            "The previous page's `next`: a position in the ranking, computed again for every page, so a memory "
            "written or removed meanwhile can repeat or skip a hit (docs/contract.md#lists-and-paging)."
        ),
    )


# ---------------------------------------------------------------------------------------------
# Memory kinds
# ---------------------------------------------------------------------------------------------


@extend_schema_field({"type": "string", "enum": list(EVIDENCE_POLICIES)})
class EvidencePolicyField(StrictCharField):
    """A string here; an unknown value is refused by the kind rules (400 `invalid_request`, `details.field`)."""


EVIDENCE_POLICY_HELP = (
    'How the evidence of this kind\'s memories is judged. "statement" (default): the statement rules made for '
    "preferences also apply (a guess, a one-off request, chit-chat, the past, someone else's words are refused). "
    '"quote": only consent, evidence quoted verbatim from the source and no secret, for facts drawn from a '
    "conversation (a past event, a third-person sentence). statedFields apply under both. May be changed by "
    "PATCH; a change judges later writes only."
)


class KindFields(StrictSerializer):
    description = StrictCharField(max_length=2000, required=False, allow_blank=True)
    contentSchema = BoundedObjectField(
        help_text='JSON Schema (2020-12) of `content`, `"type": "object"`; a property with '
        '`"x-single-valued": true` has one current answer per user (a contradicting new memory supersedes). '
        "Patterns run on RE2 (no backreferences or lookaround); $ref only '#' or '#/…', never looping; a refused "
        "schema is 400 naming its JSON pointer (docs/contract.md, User-supplied JSON Schemas)."
    )
    statedFields = serializers.ListField(
        child=StrictCharField(max_length=64),
        max_length=50,
        required=False,
        help_text="Content fields whose values must appear in the evidence (Unicode width and case folded).",
    )
    searchable = StrictBooleanField(
        required=False, help_text="Embedded and keyword-indexed (fixed at creation); default false."
    )
    textField = StrictCharField(
        max_length=64, required=False, allow_blank=True, help_text="The content field embedded and recalled."
    )
    maxPerUser = StrictIntegerField(
        min_value=LIMITS["maxPerUser"][0], max_value=LIMITS["maxPerUser"][1], required=False, allow_null=True
    )
    defaultTtlDays = StrictIntegerField(
        min_value=LIMITS["defaultTtlDays"][0], max_value=LIMITS["defaultTtlDays"][1], required=False, allow_null=True
    )
    evidencePolicy = EvidencePolicyField(required=False, help_text=EVIDENCE_POLICY_HELP)


class KindCreateSerializer(KindFields):
    name = StrictCharField(max_length=64, help_text="a-z, 0-9 and _, starting with a letter; unique per product.")


class KindUpdateSerializer(KindFields):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["contentSchema"].required = False


class KindSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    contentSchema = serializers.JSONField()
    statedFields = serializers.ListField(child=serializers.CharField())
    singleValuedFields = serializers.ListField(child=serializers.CharField(), read_only=True)
    searchable = serializers.BooleanField()
    textField = serializers.CharField()
    maxPerUser = serializers.IntegerField(allow_null=True)
    defaultTtlDays = serializers.IntegerField(allow_null=True)
    evidencePolicy = EvidencePolicyField(help_text=EVIDENCE_POLICY_HELP)
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class KindListSerializer(serializers.Serializer):
    results = KindSerializer(many=True)
    next = serializers.CharField(allow_null=True)


def kind_to_dict(kind: MemoryKind) -> dict:
    return {
        "name": kind.name,
        "description": kind.description,
        "contentSchema": kind.content_schema,
        "statedFields": list(kind.stated_fields or []),
        "singleValuedFields": kind.single_valued_fields,
        "searchable": kind.searchable,
        "textField": kind.text_field,
        "maxPerUser": kind.max_per_user,
        "defaultTtlDays": kind.default_ttl_days,
        "evidencePolicy": kind.evidence_policy,
        "createdAt": iso(kind.created_at),
        "updatedAt": iso(kind.updated_at),
    }


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
    expiresAt = serializers.DateTimeField(allow_null=True)
    supersededBy = serializers.CharField(allow_null=True, help_text="The id of the memory that replaced this one.")
    supersededAt = serializers.DateTimeField(allow_null=True)
    turnId = serializers.IntegerField(allow_null=True, help_text="The turn it was written for (`turnId`), if any.")
    rolledBackAt = serializers.DateTimeField(
        allow_null=True, help_text="Its turn was superseded: kept as history, no longer searched, recalled or listed."
    )
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class MemoryPageSerializer(serializers.Serializer):
    results = MemorySerializer(many=True)
    next = serializers.CharField(allow_null=True)


class SearchResultSerializer(MemorySerializer):
    score = serializers.FloatField(help_text="keyword: relevance; semantic: cosine; hybrid: the fused RRF score.")
    why = serializers.DictField(
        help_text="Each signal's {rank, score} (null when it did not return the hit); hybrid adds `fused`."
    )


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
        "expiresAt": iso(memory.expires_at) if memory.expires_at else None,
        "supersededBy": memory.superseded_by or None,
        "supersededAt": iso(memory.superseded_at) if memory.superseded_at else None,
        "turnId": memory.turn_id,
        "rolledBackAt": iso(memory.rolled_back_at) if memory.rolled_back_at else None,
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
