"""Operators' view of webhooks: endpoints (edited through the services), deliveries with attempts, "redeliver"."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from memoryhub.admin_base import ReadOnlyAdmin, ReadOnlyTabularInline, StorableJSONAdmin, log_actions, pre
from memoryhub.errors import DomainError

from . import targets
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .services.deliveries import delivery_redeliver
from .services.endpoints import (
    DEFAULT_OVERLAP_SECONDS,
    endpoint_create,
    endpoint_room_check,
    endpoint_rotate_secret,
    endpoint_update,
    validate_events,
)


class WebhookEndpointForm(forms.ModelForm):
    url = forms.CharField(max_length=2000, help_text="http(s) URL; its host must resolve to public addresses")

    class Meta:
        model = WebhookEndpoint
        fields = ["product", "url", "events", "enabled", "description"]

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        try:
            targets.check(url)
        except DomainError as exc:
            raise ValidationError(exc.message) from None
        return url

    def clean_events(self) -> list[str]:
        try:
            return validate_events(self.cleaned_data["events"])
        except DomainError as exc:
            raise ValidationError(exc.message) from None

    def clean(self) -> dict:
        cleaned = super().clean()
        product = cleaned.get("product")
        if self.instance.pk is None and product is not None:  # a new endpoint: is there room for it?
            try:
                endpoint_room_check(product)
            except DomainError as exc:
                raise ValidationError(exc.message) from None
        return cleaned


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(StorableJSONAdmin):
    """Endpoints: a new one's secret is shown once in the confirmation message; "rotate secret" makes a new one."""

    form = WebhookEndpointForm
    list_display = ("id", "product", "url", "enabled", "events", "created_at")
    list_filter = ("enabled",)
    list_select_related = ("product",)
    search_fields = ("url", "product__id", "product__name")
    raw_id_fields = ("product",)
    readonly_fields = ("previous_secret_expires_at", "created_at", "updated_at")
    actions = ["rotate_secret"]

    def get_readonly_fields(self, request, obj=None):
        return (*self.readonly_fields, "product") if obj else self.readonly_fields

    def save_model(self, request, obj: WebhookEndpoint, form, change: bool) -> None:
        data = form.cleaned_data
        if change:
            changes = {k: data[k] for k in ("url", "events", "enabled", "description")}
            saved = endpoint_update(product=obj.product, endpoint_id=obj.pk, changes=changes)
        else:
            saved = endpoint_create(
                product=data["product"],
                url=data["url"],
                events=data["events"],
                enabled=data["enabled"],
                description=data["description"],
            )
            self.message_user(request, f"Signing secret of webhook {saved.pk} (shown once): {saved.secret}")
        obj.pk = saved.pk

    @admin.action(description="Rotate the signing secret (the old one signs too for a day)", permissions=["change"])
    def rotate_secret(self, request, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset.select_related("product"):
            rotated = endpoint_rotate_secret(
                product=endpoint.product, endpoint_id=endpoint.pk, overlap_seconds=DEFAULT_OVERLAP_SECONDS
            )
            self.log_change(request, endpoint, "Rotated the signing secret (the old one signs too for a day)")
            self.message_user(request, f"New signing secret of webhook {rotated.pk} (shown once): {rotated.secret}")


class AttemptInline(ReadOnlyTabularInline):
    model = WebhookAttempt
    fields = ("number", "trigger", "outcome", "status_code", "latency_ms", "response_excerpt", "error", "created_at")


def _may_redeliver(request) -> bool:
    # Redelivering sends a request to the product's endpoint again: it changes deliveries, so view is not enough.
    return request.user.has_perm("webhooks.change_webhookdelivery")


def _redeliver(modeladmin: admin.ModelAdmin, request, deliveries: list[WebhookDelivery]) -> None:
    for delivery in deliveries:
        delivery_redeliver(delivery=delivery)
        log_actions(request.user, [delivery], "Redelivered now (same webhook-id)")
    modeladmin.message_user(request, f"{len(deliveries)} deliveries sent again.", messages.SUCCESS)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """One message to one endpoint, its attempts inline; "redeliver" sends it again now (same webhook-id)."""

    list_display = (
        *("id", "message_id", "event_type", "endpoint", "status"),
        *("attempts", "last_status_code", "created_at"),
    )
    list_filter = ("status", "message__type")
    list_select_related = ("message", "endpoint")
    search_fields = ("message__id", "endpoint__url", "message__user_id")
    fields = ("message", "endpoint", "status", "attempts", "next_attempt_at", "delivered_at", "last_error", "payload")
    readonly_fields = fields
    inlines = [AttemptInline]
    actions = ["redeliver"]

    def has_redeliver_permission(self, request) -> bool:
        return _may_redeliver(request)

    @admin.display(description="type")
    def event_type(self, delivery: WebhookDelivery) -> str:
        return delivery.message.type

    @admin.display(description="payload")
    def payload(self, delivery: WebhookDelivery) -> str:
        return pre(delivery.message.payload)

    @admin.action(description="Redeliver now", permissions=["redeliver"])
    def redeliver(self, request, queryset: QuerySet[WebhookDelivery]) -> None:
        _redeliver(self, request, list(queryset))


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(ReadOnlyAdmin):
    """Every HTTP request made: status, latency, an excerpt of the answer; "redeliver" sends its delivery again."""

    list_display = ("id", "delivery", "number", "trigger", "outcome", "status_code", "latency_ms", "created_at")
    list_filter = ("outcome", "trigger")
    list_select_related = ("delivery",)
    actions = ["redeliver"]

    def has_redeliver_permission(self, request) -> bool:
        return _may_redeliver(request)

    @admin.action(description="Redeliver their deliveries now", permissions=["redeliver"])
    def redeliver(self, request, queryset: QuerySet[WebhookAttempt]) -> None:
        deliveries = {a.delivery_id: a.delivery for a in queryset.select_related("delivery")}
        _redeliver(self, request, list(deliveries.values()))
