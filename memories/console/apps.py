from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """Operator console (docs/console.md): dashboard, turn inspector, timeline, artefacts."""

    name = "memories.console"
    label = "console"
    verbose_name = "Console"
