"""Exports: POST /v1/users/{u}/exports, GET /v1/exports/{id}, GET /v1/exports/{id}/download."""

from __future__ import annotations

from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import user_address
from memoryhub.timefmt import iso

from ..models import DONE, Export
from ..services.export import export_file, export_get, export_start


class ExportStartedSerializer(serializers.Serializer):
    exportId = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])


class ExportSerializer(ExportStartedSerializer):
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="records per kind, when done")
    sizeBytes = serializers.IntegerField(allow_null=True)
    requestedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True)
    expiresAt = serializers.DateTimeField(allow_null=True, help_text="the file and this job are deleted then")
    downloadUrl = serializers.CharField(allow_null=True)


def export_to_dict(request, export: Export) -> dict:
    ready = export.status == DONE
    return {
        "exportId": export.pk,
        "status": export.status,
        "counts": export.counts,
        "sizeBytes": export.size_bytes,
        "requestedAt": iso(export.requested_at),
        "finishedAt": iso(export.finished_at),
        "expiresAt": iso(export.expires_at),
        "downloadUrl": request.build_absolute_uri(reverse("export-download", args=[export.pk])) if ready else None,
    }


class UserExportView(APIView):
    @extend_schema(
        request=None,
        responses={202: ExportStartedSerializer},
        operation_id="users_export",
        description="Export everything memoryhub keeps about this user as gzip JSON Lines (docs/data-lifecycle.md). "
        "Answers 202 at once; GET /v1/exports/{id} follows the job.",
    )
    def post(self, request, user_id: str):
        address = user_address(request, user_id)
        export = export_start(product=address.product, user_id=address.user_id, requested_by=str(request.user.actor))
        return Response({"exportId": export.pk, "status": export.status}, status=202)


class ExportDetailView(APIView):
    @extend_schema(
        responses=ExportSerializer,
        operation_id="exports_get",
        description="An export's status, counts per kind and, when done, its download URL. Another product's "
        "id, or an expired export, is 404.",
    )
    def get(self, request, export_id: str):
        return Response(export_to_dict(request, export_get(product=request.user.product, export_id=export_id)))


class ExportDownloadView(APIView):
    @extend_schema(
        responses={
            (200, "application/gzip"): OpenApiResponse(OpenApiTypes.BINARY, description="gzip JSON Lines"),
            409: OpenApiResponse(description="export_not_ready"),
        },
        operation_id="exports_download",
        description="The export file: a header line (format, formatVersion, product, user, exportedAt, counts), "
        "then one JSON object per record with kind, id, refs and data.",
    )
    def get(self, request, export_id: str):
        export, path = export_file(product=request.user.product, export_id=export_id)
        return FileResponse(
            path.open("rb"), as_attachment=True, filename=f"{export.pk}.jsonl.gz", content_type="application/gzip"
        )
