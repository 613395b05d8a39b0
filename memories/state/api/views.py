"""Conversation state over HTTP: submit a candidate, read a projection, list the revisions."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.services.runonce import request_fingerprint
from memories.state.models import ConversationStateRevision
from memories.state.selectors import state_revisions_page, state_view
from memories.state.services import state_candidate_submit
from memoryhub.api.common import conversation_address
from memoryhub.api.pagination import page_params
from memoryhub.timefmt import iso

PAGE = [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)]


class RecordChangeSerializer(serializers.Serializer):
    category = serializers.CharField(help_text="A category the scenario's state section declares.")
    key = serializers.CharField(max_length=200)
    value = serializers.JSONField(help_text="Any JSON value of at most 8 KiB as compact JSON.")


class RecordKeySerializer(serializers.Serializer):
    category = serializers.CharField()
    key = serializers.CharField(max_length=200)


class StateCandidateSerializer(serializers.Serializer):
    """The candidate's shape for the schema; the service validates it (422 invalid_state_candidate, details.path)."""

    scenarioId = serializers.CharField(help_text="The scenario whose state section declares the categories.")
    baseRevision = serializers.IntegerField(min_value=0, help_text="The revision you read (0 before the first write).")
    text = serializers.CharField(required=False, allow_blank=True, help_text="Replaces the text; omitted: kept.")
    upsert = RecordChangeSerializer(many=True, required=False)
    delete = RecordKeySerializer(many=True, required=False)
    operationId = serializers.CharField(required=False, help_text="Repeat-safe retries: the first result is replayed.")
    turnId = serializers.IntegerField(
        required=False,
        help_text="The turn whose reply this candidate comes from: superseding that turn rolls the commit back "
        "(docs/roleplay.md); a superseded turn is 409 turn_superseded.",
    )


class RecordSerializer(serializers.Serializer):
    category = serializers.CharField()
    key = serializers.CharField()
    value = serializers.JSONField()
    updatedRound = serializers.IntegerField()


class StateSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    text = serializers.CharField(allow_blank=True)
    records = RecordSerializer(many=True)


class RevisionSerializer(StateSerializer):
    changes = serializers.JSONField()
    scenarioId = serializers.CharField(allow_null=True)
    round = serializers.IntegerField()
    actor = serializers.CharField(allow_null=True)
    operationId = serializers.CharField(allow_null=True)
    cause = serializers.ChoiceField(["write", "rollback", "reapply"])
    turnId = serializers.IntegerField(allow_null=True)
    restoredFrom = serializers.IntegerField(allow_null=True)
    createdAt = serializers.DateTimeField()


class RevisionPageSerializer(serializers.Serializer):
    results = RevisionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class CommittedSerializer(serializers.Serializer):
    revision = serializers.IntegerField()


def revision_to_dict(row: ConversationStateRevision) -> dict:
    return {
        "revision": row.revision,
        "text": row.text,
        "records": row.records,
        "changes": row.changes,
        "scenarioId": row.scenario_slug or None,
        "round": row.round,
        "actor": row.actor or None,
        "operationId": row.operation_id or None,
        "cause": row.cause,
        "turnId": row.turn_id,
        "restoredFrom": row.restored_from,
        "createdAt": iso(row.created_at),
    }


class StateCandidateView(APIView):
    @extend_schema(
        request=StateCandidateSerializer,
        responses={
            201: CommittedSerializer,
            404: OpenApiResponse(description="no such scenario"),
            409: OpenApiResponse(description="revision_conflict: details.currentRevision"),
            422: OpenApiResponse(description="invalid_state_candidate: details.path names the failing field"),
        },
        examples=[
            OpenApiExample(
                "upsert a relationship",
                value={
                    "scenarioId": "tavern",
                    "baseRevision": 0,
                    "text": "The innkeeper hides something.",
                    "upsert": [{"category": "relationships", "key": "innkeeper", "value": "wary"}],
                    "operationId": "op-1",
                },
                request_only=True,
            )
        ],
        operation_id="state_candidates_submit",
    )
    def post(self, request, user_id: str, conversation_id: str):
        """Validate, version-check and commit a state candidate → {"revision": n + 1}."""
        address = conversation_address(request, user_id, conversation_id)
        outcome = state_candidate_submit(
            address=address,
            body=request.data,
            actor=request.user.actor,
            request_hash=request_fingerprint(request.method, request.path, request.data),
        )
        return Response(
            {"revision": outcome.revision},
            status=201,
            headers={"Operation-Replayed": "true"} if outcome.replayed else None,
        )


class StateView(APIView):
    @extend_schema(
        responses=StateSerializer,
        parameters=[
            OpenApiParameter("view", OpenApiTypes.STR, enum=["actor", "background"], description="default background"),
            OpenApiParameter("scenario", OpenApiTypes.STR, description="required for view=actor"),
        ],
        operation_id="state_get",
    )
    def get(self, request, user_id: str, conversation_id: str):
        """A projection of the state: `actor` (actor categories only, no text) or `background` (everything)."""
        address = conversation_address(request, user_id, conversation_id)
        return Response(
            state_view(
                address,
                view=request.query_params.get("view", "background"),
                scenario_slug=request.query_params.get("scenario"),
            )
        )


class StateRevisionListView(APIView):
    @extend_schema(responses=RevisionPageSerializer, parameters=PAGE, operation_id="state_revisions")
    def get(self, request, user_id: str, conversation_id: str):
        """Every committed revision, newest first, with what it changed and who committed it."""
        cursor, limit = page_params(request)
        rows, next_cursor = state_revisions_page(
            conversation_address(request, user_id, conversation_id), cursor=cursor, limit=limit
        )
        return Response({"results": [revision_to_dict(row) for row in rows], "next": next_cursor})
