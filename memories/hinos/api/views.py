"""The Hinos protocol served by memoryhub (docs/hinos.md): snake_case bodies, product key required.

The `x-flow-conversation-id` header names the conversation; it never authenticates — the product
comes from the API key alone. Wire format: docs/hinos.md.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.hinos.services.server import PrepareRequest, hinos_commit, hinos_prepare
from memoryhub.api.common import validated
from memoryhub.api.fields import IdentifierField, StrictCharField, StrictSerializer
from memoryhub.errors import InvalidRequest
from memoryhub.identifiers import validate_identifier

CONVERSATION_HEADER = "x-flow-conversation-id"
MAX_TEXT = 200_000
HEADER_PARAMETER = OpenApiParameter(CONVERSATION_HEADER, str, OpenApiParameter.HEADER)


class HinosMessageSerializer(StrictSerializer):
    role = serializers.ChoiceField(["user", "assistant"])
    content = StrictCharField(max_length=MAX_TEXT, allow_blank=True, trim_whitespace=False)


class HinosPrepareSerializer(StrictSerializer):
    user_id = IdentifierField()
    request_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=128)
    scenario_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    model_config_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    prompt_id = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    system = StrictCharField(required=False, allow_blank=True, trim_whitespace=False, max_length=MAX_TEXT)
    messages = HinosMessageSerializer(many=True, allow_empty=False, max_length=10_000)

    def validate_messages(self, messages: list[dict]) -> list[dict]:
        if messages[-1]["role"] != "user":
            raise serializers.ValidationError("the last message must be the current user message (role 'user')")
        return messages


class HinosCommitSerializer(StrictSerializer):
    claim_id = StrictCharField(max_length=64)
    user = StrictCharField(max_length=MAX_TEXT, allow_blank=True, trim_whitespace=False)
    assistant = StrictCharField(max_length=MAX_TEXT, allow_blank=True, trim_whitespace=False)


def conversation_header(request, *, required: bool) -> str | None:
    value = request.headers.get(CONVERSATION_HEADER)
    if value is None:
        if required:
            raise InvalidRequest(
                f"the {CONVERSATION_HEADER} header is required", details={"header": CONVERSATION_HEADER}
            )
        return None
    return validate_identifier(value, CONVERSATION_HEADER)


class HinosPreparedSerializer(serializers.Serializer):
    claim_id = serializers.CharField(help_text="Names this prepare; commit sends it back.")
    memory = serializers.CharField(allow_blank=True, help_text='"## <title>\\n<text>" blocks; "" when nothing.')
    turn = serializers.IntegerField()
    state_through_round = serializers.IntegerField()
    sources = serializers.ListField(child=serializers.DictField(), help_text="What each memory source answered.")


class HinosCommittedSerializer(serializers.Serializer):
    committed = serializers.BooleanField()
    claim_id = serializers.CharField()
    turn = serializers.IntegerField()
    replayed = serializers.BooleanField(help_text="true when this claim was committed before: nothing new is written")


class HinosPrepareView(APIView):
    @extend_schema(
        request=HinosPrepareSerializer,
        responses=HinosPreparedSerializer,
        parameters=[HEADER_PARAMETER],
        operation_id="hinos_memory_prepare",
    )
    def post(self, request):
        conversation_id = conversation_header(request, required=True)
        data = validated(HinosPrepareSerializer, request.data)
        claim = hinos_prepare(
            product=request.user.product,
            request=PrepareRequest(
                user_id=data["user_id"],
                conversation_id=conversation_id,
                messages=[dict(m) for m in data["messages"]],
                system=data.get("system", ""),
                request_id=data.get("request_id") or (request.headers.get("x-request-id") or "")[:128],
                scenario_id=data.get("scenario_id") or None,
                model_config_id=data.get("model_config_id"),
                prompt_id=data.get("prompt_id"),
            ),
        )
        return Response(
            {
                "claim_id": claim.claim_id,
                "memory": claim.memory,
                "turn": claim.turn,
                "state_through_round": claim.state_through_round,
                "sources": claim.sources,
            }
        )


class HinosCommitView(APIView):
    @extend_schema(
        request=HinosCommitSerializer,
        responses=HinosCommittedSerializer,
        parameters=[HEADER_PARAMETER],
        operation_id="hinos_memory_commit",
    )
    def post(self, request):
        conversation_id = conversation_header(request, required=False)
        data = validated(HinosCommitSerializer, request.data)
        result = hinos_commit(
            product=request.user.product,
            claim_id=data["claim_id"],
            user=data["user"],
            assistant=data["assistant"],
            conversation_id=conversation_id,
        )
        turn = result.claim.committed_turn
        return Response(
            {
                "committed": True,
                "claim_id": result.claim.claim_id,
                "turn": turn.round if turn else result.claim.turn,
                "replayed": result.replayed,
            }
        )
