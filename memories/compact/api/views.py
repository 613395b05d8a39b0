"""GET /v1/users/{u}/conversations/{c}/compactions — the conversation's compactions, newest first."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import conversation_address
from memoryhub.api.pagination import page_params
from memoryhub.errors import NotFound

from ..selectors import compactions_page, conversation_exists


class CompactionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    version = serializers.IntegerField(help_text="The conversation's compaction version it was saved at.")
    previousId = serializers.IntegerField(source="previous_id", allow_null=True, help_text="The compaction extended.")
    summary = serializers.CharField()
    fromMessageId = serializers.IntegerField(source="from_message_id", help_text="The first message covered.")
    throughMessageId = serializers.IntegerField(source="through_message_id", help_text="The last message covered.")
    messageCount = serializers.IntegerField(source="message_count", help_text="Non-superseded messages covered.")
    roundFrom = serializers.IntegerField(source="from_round")
    roundTo = serializers.IntegerField(source="through_round")
    trigger = serializers.ChoiceField(choices=["threshold", "checkpoint", "inline", "rebuild"])
    turnId = serializers.IntegerField(source="turn_id", allow_null=True, help_text="The commit that scheduled it.")
    summarizer = serializers.CharField()
    budgetChars = serializers.IntegerField(source="budget_chars")
    historyChars = serializers.IntegerField(source="history_chars", help_text="The history's length right after it.")
    invalidated = serializers.BooleanField()
    invalidatedAt = serializers.DateTimeField(source="invalidated_at", allow_null=True)
    invalidatedByTurnId = serializers.IntegerField(source="invalidated_by_turn_id", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")


class CompactionPageSerializer(serializers.Serializer):
    results = CompactionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class CompactionListView(APIView):
    """Compactions of a conversation, newest first, invalidated ones included; keyset-paginated."""

    @extend_schema(
        responses=CompactionPageSerializer,
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        operation_id="compactions_list",
        description="The compact-history summaries of a conversation (docs/compact.md). 404 for a conversation "
        "this product does not have.",
    )
    def get(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        cursor, limit = page_params(request)
        if not conversation_exists(address):
            raise NotFound(f"no conversation {conversation_id!r} of user {user_id!r}")
        rows, next_cursor = compactions_page(address, cursor=cursor, limit=limit)
        return Response({"results": CompactionSerializer(rows, many=True).data, "next": next_cursor})
