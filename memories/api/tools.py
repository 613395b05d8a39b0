from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.services.tools import tool_call, tool_token_mint, tools_available
from memoryhub.api.authentication import IsProductOrToolClient, IsToolClient
from memoryhub.api.common import conversation_address, validated
from memoryhub.timefmt import iso

from .authentication import ProductKeyAuthentication, ToolTokenAuthentication
from .serializers.turns import ToolCallSerializer, ToolTokenSerializer


class ToolTokenView(APIView):
    @extend_schema(request=ToolTokenSerializer, responses={201: dict}, operation_id="tool_tokens_create")
    def post(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(ToolTokenSerializer, request.data or {})
        token, expires_at = tool_token_mint(
            address=address,
            scenario_slug=data.get("scenarioId"),
            ttl_seconds=data.get("ttlSeconds"),
            subscription_category=data.get("subscriptionCategory"),
        )
        return Response({"token": token, "expiresAt": iso(expires_at)}, status=201)


class ToolListView(APIView):
    authentication_classes = [ToolTokenAuthentication, ProductKeyAuthentication]
    permission_classes = [IsProductOrToolClient]

    @extend_schema(responses=dict, operation_id="tools_list")
    def get(self, request):
        token = request.user.claims.get("token")
        return Response({"tools": tools_available(product=request.user.product, token=token)})


class ToolCallView(APIView):
    authentication_classes = [ToolTokenAuthentication]
    permission_classes = [IsToolClient]

    @extend_schema(request=ToolCallSerializer, responses=dict, operation_id="tools_call")
    def post(self, request):
        data = validated(ToolCallSerializer, request.data)
        details = tool_call(
            product=request.user.product,
            token=request.user.claims["token"],
            name=data["name"],
            arguments=data["arguments"],
        )
        return Response({"details": details})
