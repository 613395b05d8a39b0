"""/v1/webhooks: a product's endpoints, their secret rotation, deliveries and redelivery (docs/webhooks.md)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import optional_body, validated
from memoryhub.api.pagination import page_params
from memoryhub.timefmt import iso

from ..models import WebhookDelivery, WebhookEndpoint
from ..selectors import deliveries_page, delivery_get, endpoint_get, endpoints_page
from ..services.deliveries import delivery_redeliver
from ..services.endpoints import (
    DEFAULT_OVERLAP_SECONDS,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_update,
    overlap_ends,
)
from .serializers import (
    DeliveryPageSerializer,
    DeliverySerializer,
    WebhookPageSerializer,
    WebhookRotateSerializer,
    WebhookSerializer,
    WebhookWithSecretSerializer,
    WebhookWriteSerializer,
)

PAGE = [OpenApiParameter("cursor", str), OpenApiParameter("limit", int)]
REFUSED = OpenApiResponse(description="webhook_target_refused: the host resolves to a non-public address")
REFUSED_OR_FULL = OpenApiResponse(
    description="webhook_target_refused: the host resolves to a non-public address; webhook_limit_reached: the "
    "product has WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT endpoints already (details.limit)"
)


def endpoint_to_dict(endpoint: WebhookEndpoint) -> dict:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "description": endpoint.description,
        "events": endpoint.events,
        "enabled": endpoint.enabled,
        "previousSecretExpiresAt": iso(overlap_ends(endpoint, timezone.now())),
        "createdAt": iso(endpoint.created_at),
        "updatedAt": iso(endpoint.updated_at),
    }


def delivery_to_dict(delivery: WebhookDelivery) -> dict:
    return {
        "id": delivery.pk,
        "messageId": delivery.message_id,
        "type": delivery.message.type,
        "status": delivery.status,
        "attempts": [
            {
                "number": a.number,
                "trigger": a.trigger,
                "outcome": a.outcome,
                "statusCode": a.status_code,
                "latencyMs": a.latency_ms,
                "responseExcerpt": a.response_excerpt,
                "error": a.error,
                "at": iso(a.created_at),
            }
            for a in delivery.attempt_log.all()
        ],
        "nextAttemptAt": iso(delivery.next_attempt_at) if delivery.status == "pending" else None,
        "deliveredAt": iso(delivery.delivered_at),
        "payload": delivery.message.payload,
        "createdAt": iso(delivery.created_at),
    }


class WebhookListView(APIView):
    @extend_schema(responses=WebhookPageSerializer, parameters=PAGE, operation_id="webhooks_list")
    def get(self, request):
        cursor, limit = page_params(request)
        rows, next_cursor = endpoints_page(product=request.user.product, cursor=cursor, limit=limit)
        return Response({"results": [endpoint_to_dict(e) for e in rows], "next": next_cursor})

    @extend_schema(
        request=WebhookWriteSerializer,
        responses={201: WebhookWithSecretSerializer, 422: REFUSED_OR_FULL},
        operation_id="webhooks_create",
        description="Register an endpoint. The answer carries its signing secret (whsec_…): store it, it is "
        "never shown again (rotate it to get a new one). Events are delivered after the write that raised them "
        "has answered, never inside it.",
    )
    def post(self, request):
        data = validated(WebhookWriteSerializer, request.data)
        endpoint = endpoint_create(product=request.user.product, **data)
        return Response({**endpoint_to_dict(endpoint), "secret": endpoint.secret}, status=201)


class WebhookDetailView(APIView):
    @extend_schema(responses=WebhookSerializer, operation_id="webhooks_get")
    def get(self, request, endpoint_id: int):
        return Response(endpoint_to_dict(endpoint_get(product=request.user.product, endpoint_id=endpoint_id)))

    @extend_schema(
        request=WebhookWriteSerializer(partial=True),
        responses={200: WebhookSerializer, 422: REFUSED},
        operation_id="webhooks_patch",
        description="Change url, events, enabled or description; the fields not sent stay as they are.",
    )
    def patch(self, request, endpoint_id: int):
        serializer = WebhookWriteSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        endpoint = endpoint_update(
            product=request.user.product, endpoint_id=endpoint_id, changes=serializer.validated_data
        )
        return Response(endpoint_to_dict(endpoint))

    @extend_schema(responses={204: None}, operation_id="webhooks_delete")
    def delete(self, request, endpoint_id: int):
        endpoint_delete(product=request.user.product, endpoint_id=endpoint_id)
        return Response(status=204)


class WebhookRotateSecretView(APIView):
    @extend_schema(
        request=WebhookRotateSerializer,
        responses=WebhookWithSecretSerializer,
        operation_id="webhooks_rotate_secret",
        description="A new secret, shown in this answer only. During the overlap (overlapSeconds, default one "
        "day) every delivery carries two signatures in webhook-signature, one per secret.",
    )
    def post(self, request, endpoint_id: int):
        data = validated(WebhookRotateSerializer, optional_body(request))
        endpoint = endpoint_rotate_secret(
            product=request.user.product,
            endpoint_id=endpoint_id,
            overlap_seconds=data.get("overlapSeconds", DEFAULT_OVERLAP_SECONDS),
        )
        return Response({**endpoint_to_dict(endpoint), "secret": endpoint.secret})


class WebhookDeliveryListView(APIView):
    @extend_schema(
        responses=DeliveryPageSerializer,
        parameters=PAGE,
        operation_id="webhooks_deliveries",
        description="The endpoint's deliveries, newest first, each with every attempt (status, latency, excerpt).",
    )
    def get(self, request, endpoint_id: int):
        cursor, limit = page_params(request)
        rows, next_cursor = deliveries_page(
            product=request.user.product, endpoint_id=endpoint_id, cursor=cursor, limit=limit
        )
        return Response({"results": [delivery_to_dict(d) for d in rows], "next": next_cursor})


class WebhookRedeliverView(APIView):
    @extend_schema(
        request=None,
        responses={202: DeliverySerializer},
        operation_id="webhooks_redeliver",
        description="Send the delivery again now (same webhook-id, a fresh timestamp and signature).",
    )
    def post(self, request, endpoint_id: int, delivery_id: int):
        delivery = delivery_get(product=request.user.product, endpoint_id=endpoint_id, delivery_id=delivery_id)
        delivery_redeliver(delivery=delivery)
        fresh = delivery_get(product=request.user.product, endpoint_id=endpoint_id, delivery_id=delivery_id)
        return Response(delivery_to_dict(fresh), status=202)
