from __future__ import annotations

from django.apps import AppConfig


class TablesConfig(AppConfig):
    name = "tables"
    verbose_name = "Memory tables"

    def ready(self) -> None:
        from memoryhub.runtimes.hooks import register_commit_hook, register_scenario_section

        from . import producers  # noqa: F401  registers the memoryTable producer
        from .tasks import schedule_table_edits
        from .validation import validate_tables_section, validate_webhook_section

        register_scenario_section("tables", validate_tables_section)
        register_scenario_section("tableWebhook", validate_webhook_section)

        register_commit_hook("tables", schedule_table_edits)
