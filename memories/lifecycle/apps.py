from __future__ import annotations

from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    """Data lifecycle: export, erasure (with receipts), import and retention of a user's data."""

    name = "memories.lifecycle"
    label = "lifecycle"
    verbose_name = "Data lifecycle"

    def ready(self) -> None:
        from memoryhub.addresses import register_address_check

        from . import tasks  # noqa: F401  registers the Celery tasks (the outbox sends them by name)
        from .services.erasure import refuse_during_erasure

        register_address_check(refuse_during_erasure)
