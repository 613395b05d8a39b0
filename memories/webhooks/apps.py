from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Webhooks (docs/webhooks.md): signed event deliveries to product endpoints (Standard Webhooks)."""

    name = "memories.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from memoryhub import events, turn_jobs

        from . import tasks  # noqa: F401  (registers the Celery tasks)
        from .services.deliveries import DELIVERY_JOB, delivery_job_run, on_event

        events.subscribe("webhooks", on_event)
        # A delivery waits on a receiver: never inside the write's request, even with tasks in-process.
        turn_jobs.register(DELIVERY_JOB, delivery_job_run, subject="webhookdelivery_pk", in_background=True)
        # Every way an endpoint changes (services, admin, bulk delete) keeps the product's counter exact.
        post_save.connect(_endpoints_changed, sender="webhooks.WebhookEndpoint", dispatch_uid="webhooks-endpoint-saved")
        post_delete.connect(
            _endpoints_changed, sender="webhooks.WebhookEndpoint", dispatch_uid="webhooks-endpoint-gone"
        )


def _endpoints_changed(sender, instance, **kwargs) -> None:
    from .services.endpoints import enabled_count_refresh

    enabled_count_refresh(instance.product_id)
