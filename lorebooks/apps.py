from __future__ import annotations

from django.apps import AppConfig


class LorebooksConfig(AppConfig):
    name = "lorebooks"
    verbose_name = "Lorebooks"

    def ready(self) -> None:
        from lorebooks.producers import register

        register()
