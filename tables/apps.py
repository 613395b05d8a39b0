from __future__ import annotations

import os

from django.apps import AppConfig


class TablesConfig(AppConfig):
    name = "tables"
    verbose_name = "Memory tables"

    def ready(self) -> None:
        from django.db import transaction

        from memoryhub.runtimes.hooks import register_commit_hook, register_scenario_section

        from . import producers  # noqa: F401  registers the memoryTable producer
        from .validation import validate_tables_section, validate_webhook_section

        register_scenario_section("tables", validate_tables_section)
        register_scenario_section("tableWebhook", validate_webhook_section)

        def schedule_table_edits(turn_pk: int) -> None:
            from memories.models import Turn

            from .tasks import apply_table_edits

            sections = Turn.objects.filter(pk=turn_pk).values_list("scenario__sections", flat=True).first()
            if not (sections or {}).get("tables"):
                return  # no table templates: nothing to extract
            # After the commit: a rolled-back turn commit schedules nothing, and the worker sees the turn.
            transaction.on_commit(lambda: apply_table_edits.delay(turn_pk))

        register_commit_hook("tables", schedule_table_edits)
        if os.environ.get("CELERY_WORKER_UNDER_TEST") == "1":
            from . import faults, turn_edits

            turn_edits.between_read_and_write.append(faults.concurrent_write_when_asked)
