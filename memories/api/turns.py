from __future__ import annotations

import json

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.selectors.turns import events_page, messages_page
from memories.services.turns import (
    TurnRequest,
    turn_accept,
    turn_complete,
    turn_get,
    turn_prepare,
    turn_prepare_scopes,
    witness_names,
)
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.api.common import conversation_address, validated
from memoryhub.api.pagination import page_params
from memoryhub.identifiers import ID_PATTERN
from memoryhub.timefmt import iso

from .serializers.responses import (
    CompletionSerializer,
    EventPageSerializer,
    MessagePageSerializer,
    TurnDetailSerializer,
    TurnSerializer,
)
from .serializers.turns import (
    EmptySerializer,
    TurnCompleteSerializer,
    TurnPrepareSerializer,
    completion_to_dict,
    turn_to_dict,
)

PAGE = [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)]


class TurnPrepareView(APIView):
    @extend_schema(
        request=TurnPrepareSerializer,
        responses={201: TurnSerializer},
        operation_id="turns_prepare",
        description="Recall every source and render the scenario's template. A rendered prompt over "
        "MEMORYHUB_PROMPT_MAX_CHARS (default 2,000,000 characters) is refused before it is built: "
        "413 prompt_too_large with details.characters and details.limit, and no turn is recorded.",
    )
    def post(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(TurnPrepareSerializer, request.data)
        with working_set.prefetched(getattr(request, "working_set_prefetch", None)):
            turn = turn_prepare(
                address=address,
                scopes=getattr(request, "turn_prepare_scopes", None),  # what the limiter fetched, not computed twice
                request=TurnRequest(
                    scenario_slug=data["scenarioId"],
                    user_message=data["userMessage"],
                    subscription_category=data.get("subscriptionCategory"),
                    request_id=data.get("requestId"),
                    replaces_turn_id=data.get("replacesTurnId"),
                    name=data.get("name"),
                    user_name=data.get("userName"),
                    present=witness_names(data.get("present", [])),
                ),
            )
        return Response(turn_to_dict(turn), status=201)

    def working_set_scopes(self, request) -> list:
        """The entries a prepare reads, fetched in the rate limiter's round trip (memoryhub/api/throttling.py).

        Only a hint: the raw body is peeked at without validating it (a bad body is refused by `post` as usual,
        and entries not fetched here are read by the prepare itself).
        """
        try:
            slug = json.loads(request._request.body).get("scenarioId")
            user_id, conversation_id = self.kwargs["user_id"], self.kwargs["conversation_id"]
        except Exception:
            return []
        if not isinstance(slug, str) or not ID_PATTERN.fullmatch(slug):
            return []  # not an id (a lone surrogate would not even make a cache key): `post` refuses it
        address = ConversationAddress(request.user.product, user_id, conversation_id)
        request.turn_prepare_scopes = (address, slug, turn_prepare_scopes(address, slug))
        return request.turn_prepare_scopes[2]


class TurnDetailView(APIView):
    @extend_schema(responses=TurnDetailSerializer, operation_id="turns_get")
    def get(self, request, user_id: str, conversation_id: str, turn_id: int):
        turn = turn_get(address=conversation_address(request, user_id, conversation_id), turn_id=turn_id)
        extra = {
            "runtimeState": turn.runtime_state,
            "replacesTurnId": turn.replaces_id,
            "rollback": turn.rollback or None,
        }
        return Response({**turn_to_dict(turn), **completion_to_dict(turn), **extra})


class TurnCompleteView(APIView):
    @extend_schema(request=TurnCompleteSerializer, responses=CompletionSerializer, operation_id="turns_complete")
    def post(self, request, user_id: str, conversation_id: str, turn_id: int):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(TurnCompleteSerializer, request.data)
        turn = turn_complete(address=address, turn_id=turn_id, assistant_message=data["assistantMessage"])
        return Response(completion_to_dict(turn))


class TurnAcceptView(APIView):
    @extend_schema(request=EmptySerializer, responses=CompletionSerializer, operation_id="turns_accept")
    def post(self, request, user_id: str, conversation_id: str, turn_id: int):
        address = conversation_address(request, user_id, conversation_id)
        validated(EmptySerializer, request.data or {})
        return Response(completion_to_dict(turn_accept(address=address, turn_id=turn_id)))


class MessageListView(APIView):
    @extend_schema(responses=MessagePageSerializer, parameters=PAGE, operation_id="messages_list")
    def get(self, request, user_id: str, conversation_id: str):
        cursor, limit = page_params(request)
        rows, next_cursor = messages_page(
            conversation_address(request, user_id, conversation_id), cursor=cursor, limit=limit
        )
        results = [
            {
                "id": m.pk,
                "turnId": m.turn_id,
                "round": m.round,
                "role": m.role,
                "content": m.content,
                "superseded": m.superseded,
                "deleted": m.deleted,
                "createdAt": iso(m.created_at),
                **({"name": m.name} if m.name else {}),  # witness scopes: only on messages that carry them
                **({"present": m.present} if m.present else {}),
            }
            for m in rows
        ]
        return Response({"results": results, "next": next_cursor})


class EventListView(APIView):
    @extend_schema(
        responses=EventPageSerializer, parameters=[*PAGE, OpenApiParameter("type", str)], operation_id="events_list"
    )
    def get(self, request, user_id: str, conversation_id: str):
        cursor, limit = page_params(request)
        rows, next_cursor = events_page(
            conversation_address(request, user_id, conversation_id),
            cursor=cursor,
            limit=limit,
            type=request.query_params.get("type"),
        )
        results = [
            {"id": e.pk, "type": e.type, "turnId": e.turn_id, "details": e.details, "createdAt": iso(e.created_at)}
            for e in rows
        ]
        return Response({"results": results, "next": next_cursor})
