"""History search, its index status and message import over HTTP: thin views around one service or selector."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.history.selectors import HistoryFilters, history_search, history_status
from memories.history.services.imports import ImportedMessage, history_import
from memoryhub.api.common import conversation_address, user_address, validated

from . import serializers as s

INVALID = OpenApiResponse(description="invalid_request: a malformed body (details.fields names each field)")


class HistorySearchView(APIView):
    """Search every message of every conversation of the user (hybrid by default), best first, with `why`."""

    @extend_schema(
        request=s.HistorySearchSerializer,
        responses={
            200: s.HistorySearchResultSerializer,
            400: INVALID,
            503: OpenApiResponse(
                description="the embedder (hybrid, semantic) is down (details.service) or does not match the "
                "active index (embedding_index_mismatch)"
            ),
        },
        operation_id="history_search",
    )
    def post(self, request, user_id: str):
        scope = user_address(request, user_id)
        data = validated(s.HistorySearchSerializer, request.data)
        filters = HistoryFilters(
            conversations=tuple(data.get("conversations") or ()),
            after=data.get("after"),
            before=data.get("before"),
            roles=tuple(data.get("roles") or ()),
        )
        hits = history_search(
            scope,
            query=data["query"],
            mode=data["mode"],
            limit=data["limit"],
            filters=filters,
            min_score=data.get("minScore"),
        )
        return Response({"results": [s.hit_to_dict(hit) for hit in hits]})


class HistoryStatusView(APIView):
    """How many of the user's messages are indexed, and how many still wait for their vector."""

    @extend_schema(responses=s.HistoryStatusSerializer, operation_id="history_status")
    def get(self, request, user_id: str):
        return Response(history_status(user_address(request, user_id)))


class MessageImportView(APIView):
    """Store a conversation's past messages with their original times; idempotent by clientId."""

    @extend_schema(
        request=s.MessageImportSerializer,
        responses={
            201: s.MessageImportResultSerializer,
            200: s.MessageImportResultSerializer,
            400: INVALID,
            422: OpenApiResponse(
                description="client_id_conflict: a clientId imported before with another role, name, content or "
                "time, or twice in the request; nothing is stored"
            ),
        },
        operation_id="messages_import",
    )
    def post(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(s.MessageImportSerializer, request.data)
        messages = [
            ImportedMessage(
                client_id=item["clientId"],
                role=item["role"],
                content=item["content"],
                created_at=item["createdAt"],
                name=item.get("name", ""),
            )
            for item in data["messages"]
        ]
        outcome = history_import(address, messages)
        body = {"imported": len(outcome.created), "existing": outcome.existing, "rounds": outcome.rounds}
        return Response(body, status=201 if outcome.created else 200)
