from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.selectors.documents import memory_document_get, memory_revisions_page
from memories.services.documents import (
    CheckedReplacement,
    json_memory_scope,
    memory_document_check,
    memory_document_write,
)
from memories.services.products import KeyChanged
from memories.services.runonce import MAX_IDEMPOTENCY_KEY_LENGTH
from memoryhub import working_set
from memoryhub.api.common import conversation_address, validated
from memoryhub.api.pagination import page_params
from memoryhub.api.plan import EdgePlan, Planned, Planner
from memoryhub.api.views import PlannedView

from .idempotency import HEADER, Answer, idempotent_response
from .serializers.documents import (
    MemoryReadSerializer,
    MemoryRevisionPageSerializer,
    MemoryRevisionSerializer,
    MemoryWriteResultSerializer,
    MemoryWriteSerializer,
)

IDEMPOTENCY_HEADER = OpenApiParameter(
    HEADER,
    {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY_LENGTH},
    OpenApiParameter.HEADER,
    description="Repeat-safe retries: same key + same body → same result.",
)


def plan_memory_put(request, url: Mapping[str, Any]) -> Planned[CheckedReplacement]:
    """A memory PUT's body checked as the write checks it before it is attempted (so a refused write keeps the
    cached value), and the entry it replaces: its tombstone rides in the rate limiter's round trip
    (memoryhub/api/throttling.py), so the write does not pay a cache round trip of its own."""
    address = conversation_address(request, url["user_id"], url["conversation_id"])
    data = validated(MemoryWriteSerializer, request.data)  # a body that is not JSON is refused before it counts
    checked = memory_document_check(address=address, expected_revision=data["expectedRevision"], memory=data["memory"])
    return Planned(checked, tombstones=(json_memory_scope(address),))


class MemoryDocumentView(PlannedView):
    """The conversation's JSON memory document (M1–M8)."""

    # A known key's PUT is checked by the write itself (memories/api/authentication.py).
    planner = Planner(methods={"PUT": plan_memory_put}, key_checked_by_write=frozenset({"PUT"}))

    @extend_schema(responses=MemoryReadSerializer, operation_id="memory_get")
    def get(self, request, user_id: str, conversation_id: str):
        revision, memory = memory_document_get(conversation_address(request, user_id, conversation_id))
        return Response({"revision": revision, "memory": memory})

    @extend_schema(
        request=MemoryWriteSerializer,
        responses=MemoryWriteResultSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        operation_id="memory_replace",
    )
    def put(self, request, user_id: str, conversation_id: str):
        plan: EdgePlan[CheckedReplacement] = self.plan(request)
        snapshot = plan.client.key_snapshot if plan.client else None
        if snapshot is None:
            return self._replace(request, plan)
        if HEADER in request.headers:  # a replayed answer comes from the run-once store, not from the write
            self.confirm_key(request)
            return self._replace(request, plan)
        try:
            return self._replace(request, plan, key=snapshot)
        except Exception as refused:
            # Look the key up (401 if it is gone); unless it or its product changed, the answer stands. If
            # they did, the plan was made again for them (memoryhub/api/views.py): start over with it.
            if not self.confirm_key(request) and not isinstance(refused, KeyChanged):
                raise
            return self._replace(request, plan)

    @staticmethod
    def _replace(request, plan: EdgePlan[CheckedReplacement], key=None):
        checked = plan.validated()

        def perform() -> Answer:
            return Answer(200, {"revision": memory_document_write(checked, actor=request.user.actor, key=key)})

        with working_set.invalidated_ahead(plan.admission.invalidated):
            return idempotent_response(request, checked.address, "memory.replace", perform)


class MemoryRevisionListView(APIView):
    """Every committed revision, newest first (M9)."""

    @extend_schema(
        responses=MemoryRevisionPageSerializer,
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        operation_id="memory_revisions",
    )
    def get(self, request, user_id: str, conversation_id: str):
        cursor, limit = page_params(request)
        rows, next_cursor = memory_revisions_page(
            conversation_address(request, user_id, conversation_id), cursor=cursor, limit=limit
        )
        return Response({"results": MemoryRevisionSerializer(rows, many=True).data, "next": next_cursor})
