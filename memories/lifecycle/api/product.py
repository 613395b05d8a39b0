"""GET/PATCH /v1/product: the calling product and its retention settings."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.errors import InvalidRequest
from memoryhub.timefmt import iso

from ..services.retention import FIELDS, MAX_LIMIT, retention_get, retention_to_dict, retention_update


class RetentionSerializer(serializers.Serializer):
    memoryRevisionsKeep = serializers.IntegerField(allow_null=True, min_value=1, max_value=MAX_LIMIT, required=False)
    memoryRevisionsDays = serializers.IntegerField(allow_null=True, min_value=1, max_value=MAX_LIMIT, required=False)
    eventsDays = serializers.IntegerField(allow_null=True, min_value=1, max_value=MAX_LIMIT, required=False)
    turnPromptsDays = serializers.IntegerField(allow_null=True, min_value=1, max_value=MAX_LIMIT, required=False)
    tableVersionsKeep = serializers.IntegerField(allow_null=True, min_value=1, max_value=MAX_LIMIT, required=False)
    stateVersionsKeep = serializers.IntegerField(allow_null=True, min_value=1, max_value=MAX_LIMIT, required=False)


class ProductSerializer(serializers.Serializer):
    productId = serializers.CharField()
    name = serializers.CharField()
    createdAt = serializers.DateTimeField()
    retention = RetentionSerializer(help_text="null: keep everything (the default)")


class ProductPatchSerializer(serializers.Serializer):
    retention = RetentionSerializer()


def product_to_dict(product) -> dict:
    return {
        "productId": product.pk,
        "name": product.name,
        "createdAt": iso(product.created_at),
        "retention": retention_to_dict(retention_get(product)),
    }


class ProductView(APIView):
    @extend_schema(
        responses=ProductSerializer,
        operation_id="product_get",
        description="The calling product and its retention settings (docs/data-lifecycle.md).",
    )
    def get(self, request):
        return Response(product_to_dict(request.user.product))

    @extend_schema(
        request=ProductPatchSerializer,
        responses=ProductSerializer,
        operation_id="product_update",
        description="Change retention settings: each a whole number from 1 to 1,000,000, or null to keep "
        "everything. Settings not named stay. A beat task prunes in batches and never deletes the current "
        "version of anything.",
    )
    def patch(self, request):
        body = request.data
        if not isinstance(body, dict) or set(body) - {"retention"} or not isinstance(body.get("retention"), dict):
            raise InvalidRequest('the body must be {"retention": {...}}', details={"field": "retention"})
        unknown = set(body["retention"]) - set(FIELDS)
        if unknown:
            name = sorted(unknown)[0]
            raise InvalidRequest(f"unknown retention setting {name!r}", details={"field": f"retention.{name}"})
        retention_update(product=request.user.product, changes=body["retention"])
        return Response(product_to_dict(request.user.product))
