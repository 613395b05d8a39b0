from __future__ import annotations

from django.apps import AppConfig


class HinosConfig(AppConfig):
    """The Hinos external-memory protocol: the runtime that calls a Hinos service, and memoryhub's own server."""

    name = "memories.hinos"
    label = "hinos"
    verbose_name = "Hinos"

    def ready(self) -> None:
        from . import runtime  # noqa: F401  registers the "hinos" scenario section
