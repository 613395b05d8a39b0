"""Webhook endpoints of a product, the messages sent to them, one delivery per (message, endpoint), its attempts."""

from __future__ import annotations

import secrets

from django.db import models

from memories.models import Product

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
DELIVERY_STATUSES = [(PENDING, "pending"), (DELIVERED, "delivered"), (FAILED, "failed (gave up)")]


def new_message_id() -> str:
    # Standard Webhooks: the webhook-id header, the same for every attempt of one message.
    return f"msg_{secrets.token_hex(12)}"


class WebhookEndpoint(models.Model):
    """A URL of a product that receives the events it subscribed to, signed with its secret."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=500, blank=True)
    events = models.JSONField(default=list, help_text='event types, or ["*"] for every type')
    enabled = models.BooleanField(default=True)
    # Stored as sent (it signs every delivery); the API shows it once, when it is made.
    secret = models.CharField(max_length=100, editable=False)
    previous_secret = models.CharField(max_length=100, blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["product", "enabled"], name="webhooks_endpoint_product")]

    def __str__(self) -> str:
        return f"{self.id} {self.url}"


class WebhookMessage(models.Model):
    """One event as sent: the exact payload every endpoint receives (ids and small facts, no secrets)."""

    id = models.CharField(primary_key=True, max_length=40, default=new_message_id, editable=False)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="webhook_messages")
    # user_id: erasing a user (memories/lifecycle) removes the undelivered messages about them too.
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128, blank=True)
    type = models.CharField(max_length=64)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["product", "created_at"], name="webhooks_message_product")]

    def __str__(self) -> str:
        return f"{self.id} {self.type}"


class WebhookDelivery(models.Model):
    """One message to one endpoint: retried with backoff until delivered or WEBHOOK_RETRY_WINDOW_SECONDS pass."""

    message = models.ForeignKey(WebhookMessage, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=DELIVERY_STATUSES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # When the retry sweep sends it next. Claiming an attempt pushes it past that attempt's end (a lease), so
    # a worker lost mid-attempt is retried; `attempts` counts claimed attempts (the claim's compare-and-set).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        constraints = [models.UniqueConstraint(fields=["message", "endpoint"], name="webhooks_one_delivery")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhooks_delivery_due")]

    def __str__(self) -> str:
        return f"{self.message_id} → {self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery: what was answered (or why there was no answer), and how long it took."""

    SUCCESS, HTTP_ERROR, TIMEOUT = "success", "http_error", "timeout"
    NETWORK_ERROR, REFUSED = "network_error", "refused"
    OUTCOMES = [(o, o) for o in (SUCCESS, HTTP_ERROR, TIMEOUT, NETWORK_ERROR, REFUSED)]

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    trigger = models.CharField(max_length=16, default="auto", help_text="auto (first or retry) or redeliver")
    outcome = models.CharField(max_length=16, choices=OUTCOMES)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    response_excerpt = models.TextField(blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["delivery_id", "number"]

    def __str__(self) -> str:
        return f"attempt {self.number} of delivery {self.delivery_id}: {self.outcome}"
