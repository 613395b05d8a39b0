"""Webhook endpoints (mounted under /v1/ by memoryhub/urls.py)."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("webhooks", views.WebhookListView.as_view(), name="webhooks"),
    path("webhooks/<id:endpoint_id>", views.WebhookDetailView.as_view(), name="webhook"),
    path("webhooks/<id:endpoint_id>/rotate-secret", views.WebhookRotateSecretView.as_view(), name="webhook-rotate"),
    path("webhooks/<id:endpoint_id>/deliveries", views.WebhookDeliveryListView.as_view(), name="webhook-deliveries"),
    path(
        "webhooks/<id:endpoint_id>/deliveries/<id:delivery_id>/redeliver",
        views.WebhookRedeliverView.as_view(),
        name="webhook-redeliver",
    ),
]
