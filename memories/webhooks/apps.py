from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Webhooks (docs/webhooks.md): signed event deliveries to product endpoints (Standard Webhooks)."""

    name = "memories.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
