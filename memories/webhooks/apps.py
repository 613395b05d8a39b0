from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Webhooks (docs/webhooks.md): signed event deliveries to product endpoints (Standard Webhooks)."""

    name = "memories.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from memoryhub import events

        from . import tasks  # noqa: F401  (registers the Celery tasks)
        from .services.deliveries import on_event

        events.subscribe("webhooks", on_event)
