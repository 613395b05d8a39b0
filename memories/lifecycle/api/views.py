"""Erasure endpoints: DELETE /v1/users/{u}, DELETE /v1/users/{u}/conversations/{c}, GET /v1/erasures/{id}."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import conversation_address, user_address
from memoryhub.timefmt import iso

from ..models import Erasure
from ..services.erasure import erasure_get, erasure_start


class ErasureStartedSerializer(serializers.Serializer):
    erasureId = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])


class ErasureSerializer(ErasureStartedSerializer):
    scope = serializers.ChoiceField(choices=["user", "conversation"])
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="removed per kind, when done")
    requestedBy = serializers.CharField()
    requestedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True)


def erasure_to_dict(erasure: Erasure) -> dict:
    return {
        "erasureId": erasure.pk,
        "status": erasure.status,
        "scope": erasure.scope,
        "counts": erasure.counts,
        "requestedBy": erasure.requested_by,
        "requestedAt": iso(erasure.requested_at),
        "finishedAt": iso(erasure.finished_at) if erasure.finished_at else None,
    }


def _started(erasure: Erasure) -> Response:
    return Response({"erasureId": erasure.pk, "status": erasure.status}, status=202)


class UserErasureView(APIView):
    @extend_schema(
        request=None,
        responses={202: ErasureStartedSerializer},
        operation_id="users_erase",
        description="Erase everything memoryhub keeps about this user, in every app (docs/data-lifecycle.md). "
        "Answers 202 at once; GET /v1/erasures/{id} follows the job. Requests for the user answer 409 "
        "erasure_in_progress until it is done.",
    )
    def delete(self, request, user_id: str):
        address = user_address(request, user_id)
        erasure = erasure_start(product=address.product, user_id=address.user_id, requested_by=str(request.user.actor))
        return _started(erasure)


class ConversationErasureView(APIView):
    @extend_schema(
        request=None,
        responses={202: ErasureStartedSerializer},
        operation_id="conversations_erase",
        description="Erase one conversation of a user (its documents, turns, messages, events, diaries, tables, "
        "state, …); user-level data such as long-term memories stays.",
    )
    def delete(self, request, user_id: str, conversation_id: str):
        address = conversation_address(request, user_id, conversation_id)
        erasure = erasure_start(
            product=address.product,
            user_id=address.user_id,
            conversation_id=address.conversation_id,
            requested_by=str(request.user.actor),
        )
        return _started(erasure)


class ErasureDetailView(APIView):
    @extend_schema(
        responses=ErasureSerializer,
        operation_id="erasures_get",
        description="An erasure's status and, when done, the counts per kind. Another product's id is 404.",
    )
    def get(self, request, erasure_id: str):
        return Response(erasure_to_dict(erasure_get(product=request.user.product, erasure_id=erasure_id)))
