"""Story snapshots over HTTP: read the snapshot, list its versions, settle a confirmed reply."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.services.runonce import OPERATION_ID, request_fingerprint
from memories.story.models import StoryVersion
from memories.story.selectors import story_get, story_versions_page
from memories.story.services import Settlement, story_settle
from memories.validation import compact_json, json_depth
from memoryhub.api.common import conversation_address, validated
from memoryhub.api.fields import JSONObjectField, StrictCharField, StrictIntegerField, StrictSerializer
from memoryhub.api.pagination import page_params
from memoryhub.timefmt import iso

PAGE = [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)]
MAX_VALUE_BYTES = 8192
MAX_NARRATIVE_BYTES = 16_384
MAX_DEPTH = 16


def _bounded(value: object, limit: int) -> None:
    if json_depth(value) > MAX_DEPTH:
        raise serializers.ValidationError(f"nested deeper than {MAX_DEPTH} levels")
    if len(compact_json(value).encode()) > limit:
        raise serializers.ValidationError(f"larger than {limit} bytes as compact JSON")


class FactsField(JSONObjectField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if len(value) > 200:
            raise serializers.ValidationError("at most 200 facts per settlement")
        for key, item in value.items():
            if not key.strip() or len(key) > 200:
                raise serializers.ValidationError("fact keys are non-empty strings of at most 200 characters")
            _bounded(item, MAX_VALUE_BYTES)
        return value


class NarrativeField(JSONObjectField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        _bounded(value, MAX_NARRATIVE_BYTES)
        return value


class OperationIdField(StrictCharField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not OPERATION_ID.fullmatch(value):
            raise serializers.ValidationError("must be 1-128 characters of A-Za-z0-9_.:@-")
        return value


class NewEventSerializer(StrictSerializer):
    text = StrictCharField(max_length=2000, help_text="What happened, in the story's words.")


class SettlementSerializer(StrictSerializer):
    expectedVersion = StrictIntegerField(help_text="The version you read (0 before the first settlement).")
    anchorMessageId = StrictIntegerField(
        min_value=1, help_text="The confirmed assistant message this settlement follows (see GET …/messages)."
    )
    setFacts = FactsField(required=False, help_text="World facts to set: {key: any JSON (≤ 8 KiB)}.")
    unsetFacts = serializers.ListField(child=StrictCharField(max_length=200), required=False, max_length=200)
    appendEvents = NewEventSerializer(many=True, required=False, max_length=50)
    narrative = NarrativeField(required=False, help_text="Replaces the narrative state; omitted: kept.")
    operationId = OperationIdField(required=False, help_text="Repeat-safe retries: the first result is replayed.")

    def validate(self, attrs):
        both = set(attrs.get("setFacts", {})) & set(attrs.get("unsetFacts", []))
        if both:
            raise serializers.ValidationError({"unsetFacts": f"also in setFacts: {', '.join(sorted(both))}"})
        return attrs


class StoryEventSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField()
    round = serializers.IntegerField()
    messageId = serializers.IntegerField()


class StorySerializer(serializers.Serializer):
    version = serializers.IntegerField()
    anchorMessageId = serializers.IntegerField(allow_null=True)
    worldFacts = serializers.JSONField()
    events = StoryEventSerializer(many=True)
    narrative = serializers.JSONField()


class StoryVersionSerializer(StorySerializer):
    cause = serializers.ChoiceField(choices=["settlement", "rollback"])
    changes = serializers.JSONField()
    restoredFrom = serializers.IntegerField(allow_null=True)
    rolledBack = serializers.BooleanField()
    actor = serializers.CharField(allow_null=True)
    operationId = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()


class StoryVersionPageSerializer(serializers.Serializer):
    results = StoryVersionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


def version_to_dict(row: StoryVersion) -> dict:
    return {
        "version": row.version,
        "anchorMessageId": row.anchor_message_id,
        "worldFacts": row.world_facts,
        "events": row.events,
        "narrative": row.narrative,
        "cause": row.cause,
        "changes": row.changes,
        "restoredFrom": row.restored_from,
        "rolledBack": row.rolled_back,
        "actor": row.actor or None,
        "operationId": row.operation_id or None,
        "createdAt": iso(row.created_at),
    }


class StoryView(APIView):
    @extend_schema(responses=StorySerializer, operation_id="story_get")
    def get(self, request, user_id: str, conversation_id: str):
        """The current snapshot (version 0, empty, when never settled)."""
        return Response(story_get(conversation_address(request, user_id, conversation_id)))


class StoryVersionListView(APIView):
    @extend_schema(responses=StoryVersionPageSerializer, parameters=PAGE, operation_id="story_versions")
    def get(self, request, user_id: str, conversation_id: str):
        """Every version, newest first: settlements and rollbacks; `rolledBack` marks versions a rollback discarded."""
        cursor, limit = page_params(request)
        rows, next_cursor = story_versions_page(
            conversation_address(request, user_id, conversation_id), cursor=cursor, limit=limit
        )
        return Response({"results": [version_to_dict(row) for row in rows], "next": next_cursor})


class StorySettlementView(APIView):
    @extend_schema(
        request=SettlementSerializer,
        responses={
            201: StorySerializer,
            409: OpenApiResponse(
                description="revision_conflict (details.currentVersion) or anchor_conflict (details.reason: "
                "not_in_conversation, not_assistant, superseded, uncommitted, not_later)"
            ),
        },
        examples=[
            OpenApiExample(
                "settle a reply",
                value={
                    "expectedVersion": 0,
                    "anchorMessageId": 2,
                    "setFacts": {"weather": "storm"},
                    "appendEvents": [{"text": "The lamp broke."}],
                    "narrative": {"act": 1},
                    "operationId": "settle-1",
                },
                request_only=True,
            )
        ],
        operation_id="story_settle",
    )
    def post(self, request, user_id: str, conversation_id: str):
        """Settle the story on a confirmed reply: version + 1, events carry the anchor."""
        address = conversation_address(request, user_id, conversation_id)
        data = validated(SettlementSerializer, request.data)
        outcome = story_settle(
            address=address,
            settlement=Settlement(
                expected_version=data["expectedVersion"],
                anchor_message_id=data["anchorMessageId"],
                set_facts=data.get("setFacts", {}),
                unset_facts=tuple(data.get("unsetFacts", [])),
                append_events=tuple(event["text"] for event in data.get("appendEvents", [])),
                narrative=data.get("narrative"),
                operation_id=data.get("operationId"),
            ),
            actor=request.user.actor,
            request_hash=request_fingerprint(request.method, request.path, request.data),
        )
        return Response(outcome.story, status=201, headers={"Operation-Replayed": "true"} if outcome.replayed else None)
