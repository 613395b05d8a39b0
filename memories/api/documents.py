from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.authentication import confirm_key
from memories.selectors.documents import memory_document_get, memory_revisions_page
from memories.services.documents import (
    CheckedReplacement,
    json_memory_scope,
    memory_document_check,
    memory_document_write,
)
from memories.services.products import KeyChanged
from memoryhub import working_set
from memoryhub.api.common import conversation_address, validated
from memoryhub.api.pagination import page_params
from memoryhub.errors import DomainError

from .idempotency import HEADER, Answer, idempotent_response
from .serializers.documents import (
    MemoryReadSerializer,
    MemoryRevisionPageSerializer,
    MemoryRevisionSerializer,
    MemoryWriteResultSerializer,
    MemoryWriteSerializer,
)

IDEMPOTENCY_HEADER = OpenApiParameter(
    HEADER, str, OpenApiParameter.HEADER, description="Repeat-safe retries: same key + same body → same result."
)


class MemoryDocumentView(APIView):
    """The conversation's JSON memory document (M1–M8)."""

    key_checked_by_write = ("PUT",)  # memories/api/authentication.py: a known key is checked by the write itself

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
        snapshot = request.user.key_snapshot
        if snapshot is None:
            return self._replace(request, user_id, conversation_id)
        if HEADER in request.headers:  # a replayed answer comes from the run-once store, not from the write
            self._confirm(request, snapshot)
            return self._replace(request, user_id, conversation_id)
        try:
            return self._replace(request, user_id, conversation_id, key=snapshot)
        except Exception as refused:
            if not self._confirm(request, snapshot) and not isinstance(refused, KeyChanged):
                raise  # the key and its product are as they were: the answer stands
            return self._replace(request, user_id, conversation_id)

    @staticmethod
    def _confirm(request, snapshot) -> bool:
        """Look the key up (401 if it is gone); True if it or its product changed: then start over with them."""
        fresh = confirm_key(request)
        changed = (fresh.key_version, fresh.product_version) != (snapshot.key_version, snapshot.product_version)
        if changed:
            request.memory_put, request.working_set_invalidated = None, ()
        return changed

    def _replace(self, request, user_id: str, conversation_id: str, key=None):
        checked = getattr(request, "memory_put", None)  # what working_set_writes found valid, not checked twice
        if checked is None:
            address = conversation_address(request, user_id, conversation_id)
            checked = self._check(address, validated(MemoryWriteSerializer, request.data))

        def perform() -> Answer:
            return Answer(200, {"revision": memory_document_write(checked, actor=request.user.actor, key=key)})

        with working_set.invalidated_ahead(getattr(request, "working_set_invalidated", ())):
            return idempotent_response(request, checked.address.product, "memory.replace", perform)

    @staticmethod
    def _check(address, data: dict) -> CheckedReplacement:
        return memory_document_check(address=address, expected_revision=data["expectedRevision"], memory=data["memory"])

    def working_set_writes(self, request) -> list[working_set.Scope]:
        """The entry a valid PUT replaces: its tombstone rides in the rate limiter's round trip
        (memoryhub/api/throttling.py), so the write does not pay a cache round trip of its own.

        Only for a body that passes every check the write makes before it is attempted, so that a refused
        write keeps the cached value; anything else is left to `put`, which refuses it as usual.
        """
        if request.method != "PUT":
            return []
        try:
            address = conversation_address(request, self.kwargs["user_id"], self.kwargs["conversation_id"])
            data = validated(MemoryWriteSerializer, request.data)  # a body that is not JSON is refused here
            request.memory_put = self._check(address, data)
        except (DomainError, ValidationError):
            return []
        return [json_memory_scope(address)]


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
