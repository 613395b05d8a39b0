from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.models import IssuedToolToken
from memories.services.tools import (
    tool_call,
    tool_token_mint,
    tool_token_revoke,
    tool_tokens_revoke_all,
    tools_available,
)
from memoryhub.api.authentication import IsProductOrToolClient, IsToolClient
from memoryhub.api.common import conversation_address, optional_body, validated
from memoryhub.timefmt import iso

from .authentication import ProductKeyAuthentication, ToolTokenAuthentication, ToolTokenOnlyAuthentication
from .serializers.responses import ToolCallResultSerializer, ToolListSerializer
from .serializers.turns import (
    ToolCallSerializer,
    ToolTokenMintedSerializer,
    ToolTokenSerializer,
    ToolTokensRevokedSerializer,
    ToolTokenStateSerializer,
)


def tool_token_to_dict(issued: IssuedToolToken) -> dict:
    return {
        "id": issued.pk,
        "userId": issued.user_id,
        "conversationId": issued.conversation_id,
        "scenarioId": issued.scenario_slug or None,
        "createdAt": iso(issued.created_at),
        "expiresAt": iso(issued.expires_at),
        "revokedAt": iso(issued.revoked_at),
    }


class ToolTokenView(APIView):
    @extend_schema(
        request=ToolTokenSerializer, responses={201: ToolTokenMintedSerializer}, operation_id="tool_tokens_create"
    )
    def post(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(ToolTokenSerializer, optional_body(request))
        minted = tool_token_mint(
            address=address,
            api_key=request.auth,  # the token works only while this key does
            scenario_slug=data.get("scenarioId"),
            ttl_seconds=data.get("ttlSeconds"),
            subscription_category=data.get("subscriptionCategory"),
        )
        return Response({"id": minted.id, "token": minted.token, "expiresAt": iso(minted.expires_at)}, status=201)


class ToolTokenRevokeView(APIView):
    @extend_schema(request=None, responses=ToolTokenStateSerializer, operation_id="tool_tokens_revoke")
    def post(self, request, token_id: str):
        issued = tool_token_revoke(product=request.user.product, token_id=token_id)
        return Response(tool_token_to_dict(issued))


class ToolTokenRevokeAllView(APIView):
    @extend_schema(request=None, responses=ToolTokensRevokedSerializer, operation_id="tool_tokens_revoke_all")
    def post(self, request):
        return Response({"revoked": tool_tokens_revoke_all(product=request.user.product)})


class ToolListView(APIView):
    authentication_classes = [ToolTokenAuthentication, ProductKeyAuthentication]
    permission_classes = [IsProductOrToolClient]

    @extend_schema(responses=ToolListSerializer, operation_id="tools_list")
    def get(self, request):
        token = request.user.claims.get("token")
        return Response({"tools": tools_available(product=request.user.product, token=token)})


class ToolCallView(APIView):
    authentication_classes = [ToolTokenOnlyAuthentication]
    permission_classes = [IsToolClient]

    @extend_schema(request=ToolCallSerializer, responses=ToolCallResultSerializer, operation_id="tools_call")
    def post(self, request):
        data = validated(ToolCallSerializer, request.data)
        result = tool_call(
            product=request.user.product,
            token=request.user.claims["token"],
            name=data["name"],
            arguments=data["arguments"],
        )
        # The seed's execute(…).details: inside it, exactly get_memory's / update_memory's result (docs/contract.md).
        return Response({"details": result})
