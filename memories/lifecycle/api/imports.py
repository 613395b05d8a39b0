"""Imports: POST /v1/users/{u}/imports (an export file, application/gzip), GET /v1/imports/{id}."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import user_address
from memoryhub.errors import PayloadTooLarge
from memoryhub.timefmt import iso

from ..models import Import
from ..services.imports import import_get, import_start


class GzipParser(BaseParser):
    """The file as bytes, read no further than IMPORT_MAX_UPLOAD_BYTES (413 import_too_large past it)."""

    media_type = "application/gzip"

    def parse(self, stream, media_type=None, parser_context=None) -> bytes:
        if stream is None:
            return b""
        limit = settings.IMPORT_MAX_UPLOAD_BYTES
        content = stream.read(limit + 1)
        if len(content) > limit:
            raise PayloadTooLarge(
                f"the uploaded file is larger than {limit} bytes",
                details={"maxUploadBytes": limit},
                code="import_too_large",
            )
        return content


class OctetStreamParser(GzipParser):
    media_type = "application/octet-stream"


class ImportStartedSerializer(serializers.Serializer):
    importId = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])


class ImportSerializer(ImportStartedSerializer):
    report = serializers.DictField(help_text="imported and skipped records per kind, unknown kinds, reasons")
    requestedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True)


def import_to_dict(job: Import) -> dict:
    return {
        "importId": job.pk,
        "status": job.status,
        "report": job.report,
        "requestedAt": iso(job.requested_at),
        "finishedAt": iso(job.finished_at),
    }


class UserImportView(APIView):
    parser_classes = [GzipParser, OctetStreamParser]

    @extend_schema(
        request={"application/gzip": OpenApiTypes.BINARY, "application/octet-stream": OpenApiTypes.BINARY},
        responses={202: ImportStartedSerializer},
        operation_id="users_import",
        description="Restore an export file (from this or another product) into this user: only the user-data "
        "kinds of docs/data-lifecycle.md are restored (every other kind is reported in unknownKinds), ids "
        "re-mapped, every value checked as the API checks it (a record that fails is skipped and reported). "
        "400 invalid_export when the body is not an export file; 413 import_too_large past IMPORT_MAX_UPLOAD_BYTES "
        "(the gzip file), IMPORT_MAX_BYTES (decompressed), IMPORT_MAX_LINE_BYTES or IMPORT_MAX_RECORDS.",
    )
    def post(self, request, user_id: str):
        address = user_address(request, user_id)
        content = request.data if isinstance(request.data, bytes) else b""
        job = import_start(
            product=address.product, user_id=address.user_id, content=content, requested_by=str(request.user.actor)
        )
        return Response({"importId": job.pk, "status": job.status}, status=202)


class ImportDetailView(APIView):
    @extend_schema(
        responses=ImportSerializer,
        operation_id="imports_get",
        description="An import's status and report. Another product's id is 404.",
    )
    def get(self, request, import_id: str):
        return Response(import_to_dict(import_get(product=request.user.product, import_id=import_id)))
