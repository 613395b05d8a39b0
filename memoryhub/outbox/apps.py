from __future__ import annotations

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "memoryhub.outbox"
    label = "outbox"
    verbose_name = "Outbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import signals  # noqa: F401  (acknowledges outbox rows when their task finishes)
