"""The tables API: read a conversation's tables, edit one with compare-and-set, list its versions (TB, §3)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.addresses import ConversationAddress
from memoryhub.api.common import conversation_address, validated
from memoryhub.api.fields import StrictIntegerField, StrictSerializer
from memoryhub.api.pagination import page_params
from memoryhub.timefmt import iso
from tables.models import MemoryTable, MemoryTableVersion
from tables.rendering import render_tables
from tables.selectors import table_get, table_versions_page, tables_list
from tables.services import table_edit_manually, table_state


class TableEditSerializer(StrictSerializer):
    expectedVersion = StrictIntegerField(help_text="The version you read; a different stored version is 409.")
    rows = serializers.JSONField(help_text="The complete new rows: a list of rows, one string per column each.")


class TableSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField(help_text="The table's place in the scenario's list (the rendered index).")
    name = serializers.CharField()
    columns = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField(allow_blank=True)
    rules = serializers.DictField(help_text="Trigger texts: init, insert, update, delete.")
    required = serializers.BooleanField()
    maxRows = serializers.IntegerField(allow_null=True)
    rows = serializers.ListField(child=serializers.ListField(child=serializers.CharField(allow_blank=True)))
    version = serializers.IntegerField()
    updatedAt = serializers.DateTimeField()


class TableListSerializer(serializers.Serializer):
    tables = TableSerializer(many=True)
    memoryTable = serializers.CharField(allow_blank=True, help_text="The tables rendered for the template.")
    version = serializers.IntegerField(help_text="The sum of the tables' versions: changes whenever one does.")


class TableEditedSerializer(TableSerializer):
    changed = serializers.BooleanField(help_text="false when the rows sent were the stored rows (no new version)")


class TableVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    rows = serializers.ListField(child=serializers.ListField(child=serializers.CharField(allow_blank=True)))
    cause = serializers.CharField()
    actor = serializers.CharField(allow_null=True)
    turnId = serializers.IntegerField(allow_null=True)
    createdAt = serializers.DateTimeField()


class TableVersionPageSerializer(serializers.Serializer):
    results = TableVersionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


def table_address(request, user_id: str, conversation_id: str) -> ConversationAddress:
    address = conversation_address(request, user_id, conversation_id)
    return ConversationAddress(address.product, address.user_id, address.conversation_id)


def table_to_dict(table: MemoryTable, index: int | None = None) -> dict[str, Any]:
    return {
        "id": table.pk,
        "index": table.position if index is None else index,
        "name": table.name,
        "columns": table.columns,
        "note": table.note,
        "rules": table.rules,
        "required": table.required,
        "maxRows": table.max_rows,
        "rows": table.rows,
        "version": table.version,
        "updatedAt": iso(table.updated_at),
    }


def version_to_dict(row: MemoryTableVersion) -> dict[str, Any]:
    return {
        "version": row.version,
        "rows": row.rows,
        "cause": row.cause,
        "actor": row.actor or None,
        "turnId": row.turn_id,
        "createdAt": iso(row.created_at),
    }


class TableListView(APIView):
    """The conversation's tables and their rendered `memoryTable` text ({"tables": []} before first use)."""

    @extend_schema(responses=TableListSerializer, operation_id="tables_list")
    def get(self, request, user_id: str, conversation_id: str):
        tables = tables_list(table_address(request, user_id, conversation_id))
        return Response(
            {
                "tables": [table_to_dict(table, index) for index, table in enumerate(tables)],
                "memoryTable": render_tables([table_state(table) for table in tables]) if tables else "",
                "version": sum(table.version for table in tables),
            }
        )


class TableDetailView(APIView):
    """One table; PUT replaces its rows iff `expectedVersion` is the stored version (409 otherwise)."""

    @extend_schema(responses=TableSerializer, operation_id="table_get")
    def get(self, request, user_id: str, conversation_id: str, table_id: int):
        return Response(table_to_dict(table_get(table_address(request, user_id, conversation_id), table_id)))

    @extend_schema(request=TableEditSerializer, responses=TableEditedSerializer, operation_id="table_replace")
    def put(self, request, user_id: str, conversation_id: str, table_id: int):
        table = table_get(table_address(request, user_id, conversation_id), table_id)
        data = validated(TableEditSerializer, request.data)
        outcome = table_edit_manually(
            table=table, expected_version=data["expectedVersion"], rows=data["rows"], actor=request.user.actor
        )
        table.refresh_from_db()
        return Response(table_to_dict(table) | {"changed": outcome.changed})


class TableVersionListView(APIView):
    """Every committed version of a table, newest first, with what caused it."""

    @extend_schema(
        responses=TableVersionPageSerializer,
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        operation_id="table_versions",
    )
    def get(self, request, user_id: str, conversation_id: str, table_id: int):
        table = table_get(table_address(request, user_id, conversation_id), table_id)
        cursor, limit = page_params(request)
        rows, next_cursor = table_versions_page(table, cursor=cursor, limit=limit)
        return Response({"results": [version_to_dict(row) for row in rows], "next": next_cursor})
