from __future__ import annotations

from django.apps import AppConfig


class TablesConfig(AppConfig):
    name = "tables"
    verbose_name = "Memory tables"

    def ready(self) -> None:
        from memoryhub import turn_jobs
        from memoryhub.runtimes import registry

        from .producers import memory_table_scopes, produce_memory_table
        from .rollback import table_edits_redo, table_edits_undo
        from .tasks import WORK, schedule_table_edits, table_edits_rerun_refusal, table_edits_run
        from .validation import validate_tables_section, validate_webhook_section

        registry.register_source(
            "memoryTable",
            description="the conversation's memory tables rendered as prompt text",
            agent_refs=["table-agent"],
            producer=produce_memory_table,
            scopes=memory_table_scopes,
        )
        registry.register_scenario_section("tables", validate_tables_section)
        registry.register_scenario_section("tableWebhook", validate_webhook_section)
        registry.register_commit_hook(WORK, schedule_table_edits)  # memoryWrite.work names it
        turn_jobs.register(
            WORK,
            table_edits_run,
            queue="tables",
            reports=True,
            rerun_refusal=table_edits_rerun_refusal,
            rerun_permission="tables.change_memorytable",
        )
        registry.register_supersede_hook(WORK, table_edits_undo)
        registry.register_reapply_hook(WORK, table_edits_redo)
