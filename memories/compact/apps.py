from __future__ import annotations

from django.apps import AppConfig


class CompactConfig(AppConfig):
    """Compact history: the `history` variable, its budget, and the summaries that keep it within it."""

    name = "memories.compact"
    label = "compact"
    verbose_name = "Compact history"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from memories.models import Conversation
        from memoryhub import turn_jobs
        from memoryhub.runtimes import registry

        from .policy import SECTION, validate_compact_section
        from .producers import history_scopes, produce_history
        from .selectors import AGENT_REF, VARIABLE
        from .services import compaction_reapply_hook, compaction_supersede_hook
        from .signals import conversation_saved
        from .tasks import RETRIED, RETRY, WORK, compaction_run, schedule_compaction

        registry.register_source(
            VARIABLE,
            description="the compact summary of the conversation (if any), then the raw messages it does not cover",
            producer=produce_history,
            scopes=history_scopes,
            agent_refs=[AGENT_REF],
            runtimes=("personalization", "axon_shadow"),
        )
        registry.register_scenario_section(SECTION, validate_compact_section)
        registry.register_commit_hook(WORK, schedule_compaction)
        turn_jobs.register(WORK, compaction_run, queue="diaries", retry_on=RETRIED, retry=RETRY, reports=True)
        registry.register_supersede_hook(WORK, compaction_supersede_hook)
        registry.register_reapply_hook(WORK, compaction_reapply_hook)
        post_save.connect(conversation_saved, sender=Conversation, dispatch_uid="compact.history_working_set")
