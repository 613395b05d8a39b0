"""Long-term memories, search and task checkpoints over HTTP: thin views around one service or selector each."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.longterm.selectors import kind_get, kinds_page, memory_get, memory_list_page, memory_search, task_get
from memories.longterm.services.checkpoints import (
    CheckpointOutcome,
    ReportOutcome,
    checkpoint_commit,
    task_report_publish,
)
from memories.longterm.services.kinds import kind_create, kind_delete, kind_update
from memories.longterm.services.memories import (
    MemoryOutcome,
    Proposal,
    UserAddress,
    memory_create,
    memory_delete,
    memory_update,
)
from memories.services.runonce import RunOnce, request_fingerprint
from memoryhub.api.common import user_address, validated
from memoryhub.api.pagination import page_params
from memoryhub.errors import InvalidRequest, NotFound
from memoryhub.identifiers import validate_identifier

from . import serializers as s

PAGE = [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)]


def operation_of(request, scope: UserAddress, data: dict, action: str) -> RunOnce | None:
    if not data.get("operationId"):
        return None
    return RunOnce.operation(
        scope.product,
        scope.user_id,
        data["operationId"],
        action,
        request_fingerprint(request.method, request.path, request.data),
    )


def proposal_of(data: dict) -> Proposal:
    return Proposal(
        content=data["content"],
        evidence=data["evidence"],
        source=data["source"],
        consent=data["consent"],
        expires_at=data.get("expiresAt"),
        set_expiry="expiresAt" in data,
    )


def respond(outcome: MemoryOutcome | CheckpointOutcome | ReportOutcome, body: dict) -> Response:
    """201 for what this request (or the operation it replays) created, 200 otherwise."""
    return Response(
        body,
        status=201 if outcome.created else 200,
        headers={"Operation-Replayed": "true"} if outcome.replayed else None,
    )


def known_memory_id(memory_id: str) -> str:
    if len(memory_id) > 40:  # longer than any id we issue: not found, without touching the database
        raise NotFound(f"no memory {memory_id[:40]!r}… for this user")
    return memory_id


def optional_version(request) -> int | None:
    raw = request.query_params.get("expectedVersion")
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 15:  # isdigit() alone admits "³", which int() refuses
        raise InvalidRequest("expectedVersion must be a positive integer", details={"field": "expectedVersion"})
    return int(raw)


class MemoryListView(APIView):
    """Create a long-term memory (admission rules apply) or list a user's memories, newest first."""

    @extend_schema(
        request=s.MemoryCreateSerializer, responses={201: s.MemorySerializer}, operation_id="memories_create"
    )
    def post(self, request, user_id: str):
        scope = user_address(request, user_id)
        data = validated(s.MemoryCreateSerializer, request.data)
        outcome = memory_create(
            scope=scope,
            kind=data["kind"],
            proposal=proposal_of(data),
            actor=request.user.actor,
            operation=operation_of(request, scope, data, "memory.create"),
            turn_id=data.get("turnId"),
        )
        return respond(outcome, s.memory_to_dict(outcome.memory))

    @extend_schema(
        responses=s.MemoryPageSerializer,
        parameters=[
            *PAGE,
            OpenApiParameter("kind", str),
            OpenApiParameter(
                "include",
                str,
                enum=["superseded"],
                description="`superseded`: list superseded and rolled-back memories too (history); "
                "expired ones never appear.",
            ),
        ],
        operation_id="memories_list",
    )
    def get(self, request, user_id: str):
        cursor, limit = page_params(request)
        include = request.query_params.get("include")
        if include not in (None, "", "superseded"):
            raise InvalidRequest("include must be 'superseded'", details={"field": "include"})
        rows, next_cursor = memory_list_page(
            user_address(request, user_id),
            kind=request.query_params.get("kind"),
            cursor=cursor,
            limit=limit,
            include_superseded=include == "superseded",
        )
        return Response({"results": [s.memory_to_dict(row) for row in rows], "next": next_cursor})


class MemoryDetailView(APIView):
    """One memory: read, compare-and-set update (expectedVersion), delete."""

    @extend_schema(responses=s.MemorySerializer, operation_id="memories_get")
    def get(self, request, user_id: str, memory_id: str):
        return Response(s.memory_to_dict(memory_get(user_address(request, user_id), known_memory_id(memory_id))))

    @extend_schema(request=s.MemoryUpdateSerializer, responses=s.MemorySerializer, operation_id="memories_update")
    def patch(self, request, user_id: str, memory_id: str):
        scope = user_address(request, user_id)
        data = validated(s.MemoryUpdateSerializer, request.data)
        outcome = memory_update(
            scope=scope,
            memory_id=known_memory_id(memory_id),
            expected_version=data["expectedVersion"],
            proposal=proposal_of(data),
            actor=request.user.actor,
            operation=operation_of(request, scope, data, "memory.update"),
        )
        return respond(outcome, s.memory_to_dict(outcome.memory))

    @extend_schema(
        parameters=[OpenApiParameter("expectedVersion", int)], responses={204: None}, operation_id="memories_delete"
    )
    def delete(self, request, user_id: str, memory_id: str):
        memory_delete(
            scope=user_address(request, user_id),
            memory_id=known_memory_id(memory_id),
            actor=request.user.actor,
            expected_version=optional_version(request),
        )
        return Response(status=204)


class MemorySearchView(APIView):
    """Keyword, semantic or hybrid search over the user's searchable memories; the mode is echoed."""

    @extend_schema(request=s.SearchSerializer, responses=s.SearchPageSerializer, operation_id="memories_search")
    def post(self, request, user_id: str):
        scope = user_address(request, user_id)
        data = validated(s.SearchSerializer, request.data)
        page = memory_search(
            scope,
            mode=data["mode"],
            query=data["query"],
            limit=data["limit"],
            cursor=data.get("cursor"),
            min_score=data.get("minScore"),
        )
        body = {
            "mode": page.mode,
            "query": data["query"],
            "next": page.next,
            "results": [
                {**s.memory_to_dict(row), "score": round(score, 6), "why": why}
                for (row, score), why in zip(page.results, page.why or [{}] * len(page.results))
            ],
        }
        if page.embedding_identity:
            body["embeddingIdentity"] = page.embedding_identity
        return Response(body)


def known_kind_name(name: str) -> str:
    if len(name) > 64:
        raise NotFound(f"no memory kind {name[:64]!r}…")
    return name


class KindListView(APIView):
    """Define a memory kind for the authenticated product, or list its kinds (the built-in `preference` aside)."""

    @extend_schema(
        request=s.KindCreateSerializer, responses={201: s.KindSerializer}, operation_id="memory_kinds_create"
    )
    def post(self, request):
        data = validated(s.KindCreateSerializer, request.data)
        kind = kind_create(product=request.user.product, data=data)
        return Response(s.kind_to_dict(kind), status=201)

    @extend_schema(
        responses=s.KindListSerializer,
        parameters=PAGE,
        operation_id="memory_kinds_list",
        description="The product's own kinds in name order, keyset-paginated (docs/contract.md, Lists and paging).",
    )
    def get(self, request):
        cursor, limit = page_params(request)
        rows, next_cursor = kinds_page(request.user.product, cursor=cursor, limit=limit)
        return Response({"results": [s.kind_to_dict(kind) for kind in rows], "next": next_cursor})


class KindDetailView(APIView):
    """One memory kind of the product: read, change, delete (409 `kind_in_use` unless ?cascade=true)."""

    @extend_schema(responses=s.KindSerializer, operation_id="memory_kinds_get")
    def get(self, request, name: str):
        return Response(s.kind_to_dict(kind_get(request.user.product, known_kind_name(name))))

    @extend_schema(request=s.KindUpdateSerializer, responses=s.KindSerializer, operation_id="memory_kinds_update")
    def patch(self, request, name: str):
        changes = validated(s.KindUpdateSerializer, request.data)
        kind = kind_update(product=request.user.product, name=known_kind_name(name), changes=changes)
        return Response(s.kind_to_dict(kind))

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "cascade", bool, description="true: delete the kind's memories too (with vectors and history)."
            )
        ],
        responses={204: None},
        operation_id="memory_kinds_delete",
    )
    def delete(self, request, name: str):
        cascade = request.query_params.get("cascade", "false")
        if cascade not in ("true", "false"):
            raise InvalidRequest("cascade must be true or false", details={"field": "cascade"})
        kind_delete(product=request.user.product, name=known_kind_name(name), cascade=cascade == "true")
        return Response(status=204)


class TaskView(APIView):
    """A task with its committed stages in commit order and its report: what a resuming client needs."""

    @extend_schema(responses=s.TaskSerializer, operation_id="tasks_get")
    def get(self, request, user_id: str, task_id: str):
        task = task_get(user_address(request, user_id), validate_identifier(task_id, "taskId"))
        return Response(s.task_to_dict(task))


class CheckpointView(APIView):
    """Commit one stage of a task, once."""

    @extend_schema(
        request=s.CheckpointSerializer,
        responses={201: s.CheckpointResultSerializer, 200: s.CheckpointResultSerializer},
        operation_id="tasks_checkpoint",
    )
    def put(self, request, user_id: str, task_id: str, stage: str):
        scope = user_address(request, user_id)
        task_id, stage = validate_identifier(task_id, "taskId"), validate_identifier(stage, "stage")
        data = validated(s.CheckpointSerializer, request.data)
        outcome = checkpoint_commit(
            scope=scope,
            task_id=task_id,
            stage=stage,
            data=data["data"],
            task_input=data.get("input"),
            operation=operation_of(request, scope, data, "task.checkpoint"),
        )
        return respond(outcome, s.checkpoint_result(outcome.checkpoint))


class ReportView(APIView):
    """Publish a task's final report atomically, once."""

    @extend_schema(
        request=s.ReportSerializer,
        responses={201: s.ReportResultSerializer, 200: s.ReportResultSerializer},
        operation_id="tasks_report",
    )
    def put(self, request, user_id: str, task_id: str):
        scope = user_address(request, user_id)
        task_id = validate_identifier(task_id, "taskId")
        data = validated(s.ReportSerializer, request.data)
        outcome = task_report_publish(
            scope=scope,
            task_id=task_id,
            data=data["data"],
            operation=operation_of(request, scope, data, "task.report"),
        )
        return respond(outcome, s.report_result(outcome.report))
