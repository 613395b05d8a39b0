from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
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
from memoryhub.api.common import conversation_address, optional_body, validated
from memoryhub.api.fields import EmptyBodySerializer
from memoryhub.api.pagination import page_params
from memoryhub.api.plan import EdgePlan, Planned, Planner
from memoryhub.api.views import PlannedView
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
    TurnCompleteSerializer,
    TurnPrepareSerializer,
    completion_to_dict,
    turn_to_dict,
)

PAGE = [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)]
_TURN_ERRORS = {
    400: OpenApiResponse(description="invalid_request: a malformed body"),
    404: OpenApiResponse(description="not_found: no such turn in this conversation (of this product)"),
}
_SUPERSEDED = "turn_superseded: another reply of its round was made current before this one committed"


@dataclass(frozen=True)
class PrepareInput:
    """A prepare's validated input, and the entries it reads (predicted from the scenario as last seen)."""

    address: ConversationAddress
    request: TurnRequest
    scopes: tuple[ConversationAddress, str, list[working_set.Scope]]  # turn_prepare's `scopes`


def plan_turn_prepare(request, url: Mapping[str, Any]) -> Planned[PrepareInput]:
    """The prepare's address and body, validated, and the entries it reads: fetched in the rate limiter's round
    trip (memoryhub/api/throttling.py), so the prepare pays no cache round trip of its own on a warm store."""
    address = conversation_address(request, url["user_id"], url["conversation_id"])
    data = validated(TurnPrepareSerializer, request.data)
    turn_request = TurnRequest(
        scenario_slug=data["scenarioId"],
        user_message=data["userMessage"],
        subscription_category=data.get("subscriptionCategory"),
        request_id=data.get("requestId"),
        replaces_turn_id=data.get("replacesTurnId"),
        name=data.get("name"),
        user_name=data.get("userName"),
        present=witness_names(data.get("present", [])),
    )
    slug = turn_request.scenario_slug
    # A slug that is not an id names no scenario (and would not even make a cache key): the prepare refuses it.
    scopes = turn_prepare_scopes(address, slug, turn_request.user_message) if ID_PATTERN.fullmatch(slug) else []
    return Planned(PrepareInput(address, turn_request, (address, slug, scopes)), prefetch=tuple(scopes))


class TurnPrepareView(PlannedView):
    planner = Planner(methods={"POST": plan_turn_prepare})

    @extend_schema(
        request=TurnPrepareSerializer,
        responses={201: TurnSerializer},
        operation_id="turns_prepare",
        description="Recall every source and render the scenario's template. A rendered prompt over "
        "MEMORYHUB_PROMPT_MAX_CHARS (default 2,000,000 characters) is refused before it is built: "
        "413 prompt_too_large with details.characters and details.limit, and no turn is recorded.",
    )
    def post(self, request, user_id: str, conversation_id: str):
        plan: EdgePlan[PrepareInput] = self.plan(request)
        prepare = plan.validated()
        with working_set.prefetched(plan.admission.prefetched):
            turn = turn_prepare(address=prepare.address, request=prepare.request, scopes=prepare.scopes)
        return Response(turn_to_dict(turn), status=201)


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


_TURN_404 = OpenApiResponse(description="not_found: no such turn in this conversation (of this product)")


class TurnCompleteView(APIView):
    @extend_schema(
        request=TurnCompleteSerializer,
        responses={
            200: CompletionSerializer,
            **_TURN_ERRORS,
            409: OpenApiResponse(
                description="turn_already_completed: the turn holds another reply (details.status); turn_superseded: "
                "another reply of its round was made current before this one committed (details.turnId, details.status)"
            ),
        },
        operation_id="turns_complete",
    )
    def post(self, request, user_id: str, conversation_id: str, turn_id: int):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(TurnCompleteSerializer, request.data)
        turn = turn_complete(address=address, turn_id=turn_id, assistant_message=data["assistantMessage"])
        return Response(completion_to_dict(turn))


class TurnAcceptView(APIView):
    @extend_schema(
        request=EmptyBodySerializer,  # no body at all is read as {}
        responses={
            200: CompletionSerializer,
            **_TURN_ERRORS,
            409: OpenApiResponse(
                description=f"turn_not_acceptable: the turn is not completed (details.status); {_SUPERSEDED}"
            ),
        },
        operation_id="turns_accept",
        description='Commit a completed turn of a commitOn "accepted" scenario. A regeneration takes its round\'s '
        "place now: the round's current reply is superseded and its derived writes rolled back, then it commits.",
    )
    def post(self, request, user_id: str, conversation_id: str, turn_id: int):
        address = conversation_address(request, user_id, conversation_id)
        validated(EmptyBodySerializer, optional_body(request))
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
