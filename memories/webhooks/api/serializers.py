"""Request shapes (validated here, decided in services) and response shapes (for the OpenAPI schema)."""

from __future__ import annotations

from rest_framework import serializers

from memoryhub.api.fields import StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer
from memoryhub.events import EVENT_TYPES

EVENTS_HELP = f'event types to receive, or ["*"] for all: {", ".join(EVENT_TYPES)}'


class WebhookWriteSerializer(StrictSerializer):
    url = StrictCharField(max_length=2000, help_text="http(s) URL; its host must resolve to public addresses")
    events = serializers.ListField(child=StrictCharField(max_length=64), min_length=1, help_text=EVENTS_HELP)
    enabled = StrictBooleanField(required=False, default=True)
    description = StrictCharField(max_length=500, required=False, allow_blank=True, default="")


class WebhookRotateSerializer(StrictSerializer):
    overlapSeconds = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=7 * 24 * 3600,
        help_text="how long the previous secret keeps signing too (default 86400; 0 drops it at once)",
    )


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    description = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()
    previousSecretExpiresAt = serializers.DateTimeField(
        allow_null=True, help_text="while set, deliveries carry a second signature made with the previous secret"
    )
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class WebhookWithSecretSerializer(WebhookSerializer):
    secret = serializers.CharField(help_text="whsec_… (Standard Webhooks); shown in this answer only")


class WebhookPageSerializer(serializers.Serializer):
    results = WebhookSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    trigger = serializers.ChoiceField(choices=["auto", "redeliver"])
    outcome = serializers.ChoiceField(choices=["success", "http_error", "timeout", "network_error", "refused"])
    statusCode = serializers.IntegerField(allow_null=True)
    latencyMs = serializers.IntegerField()
    responseExcerpt = serializers.CharField()
    error = serializers.CharField()
    at = serializers.DateTimeField()


class DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    messageId = serializers.CharField(help_text="the webhook-id header")
    type = serializers.CharField()
    # A plain string in the schema: a second "status" enum would rename the lifecycle's StatusEnum.
    status = serializers.CharField(help_text="pending, delivered or failed (gave up after the retry window)")
    attempts = AttemptSerializer(many=True)
    nextAttemptAt = serializers.DateTimeField(allow_null=True)
    deliveredAt = serializers.DateTimeField(allow_null=True)
    payload = serializers.JSONField(help_text="the body every attempt sent")
    createdAt = serializers.DateTimeField()


class DeliveryPageSerializer(serializers.Serializer):
    results = DeliverySerializer(many=True)
    next = serializers.CharField(allow_null=True)
