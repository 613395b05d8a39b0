"""GET /v1/users/{u}/conversations/{c}/diaries — the conversation's diary entries, newest first by default."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import conversation_address
from memoryhub.api.pagination import page_params
from memoryhub.errors import InvalidRequest

from .selectors import diary_entries_page

ORDERS = {"newest": True, "oldest": False}  # value: newest_first


class DiaryEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    roundFrom = serializers.IntegerField(source="round_from")
    roundTo = serializers.IntegerField(source="round_to")
    kind = serializers.ChoiceField(choices=["summary_only", "summary_and_diary"])
    summary = serializers.CharField()
    diary = serializers.CharField(source="body", allow_null=True, help_text="null for summary_only entries")
    summarizer = serializers.CharField()
    subscriptionCategory = serializers.CharField(source="subscription_category")
    agentRef = serializers.CharField(source="agent_ref")
    createdAt = serializers.DateTimeField(source="created_at")


class DiaryEntryPageSerializer(serializers.Serializer):
    results = DiaryEntrySerializer(many=True)
    next = serializers.CharField(allow_null=True)


def _newest_first(request) -> bool:
    order = request.query_params.get("order", "newest")
    if order not in ORDERS:
        raise InvalidRequest("order must be 'newest' or 'oldest'", details={"field": "order"})
    return ORDERS[order]


class DiaryListView(APIView):
    """Diary entries of a conversation (docs/diaries.md), newest first unless `order=oldest`; keyset-paginated."""

    @extend_schema(
        responses=DiaryEntryPageSerializer,
        parameters=[
            OpenApiParameter("cursor", str),
            OpenApiParameter("limit", int),
            OpenApiParameter("order", str, enum=list(ORDERS), description="newest (default) or oldest first"),
        ],
        operation_id="diaries_list",
    )
    def get(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        cursor, limit = page_params(request)
        rows, next_cursor = diary_entries_page(
            product=address.product,
            user_id=address.user_id,
            conversation_id=address.conversation_id,
            cursor=cursor,
            limit=limit,
            newest_first=_newest_first(request),
        )
        return Response({"results": DiaryEntrySerializer(rows, many=True).data, "next": next_cursor})
