from __future__ import annotations

from django.apps import AppConfig


class LongTermConfig(AppConfig):
    """Long-term user memories: admission, keyword and semantic search, embedding indexes, task checkpoints."""

    name = "memories.longterm"
    label = "longterm"
    verbose_name = "Long-term memories"

    def ready(self) -> None:
        from memoryhub.runtimes import registry

        from .producers import preference_scopes, produce_preferences, validate_section, validate_source_options

        registry.register_source(
            "preferences",
            description="the user's long-term memories of the kinds the source names (default: preferences)",
            agent_refs=["longterm"],
            producer=produce_preferences,
            scopes=preference_scopes,
            options=validate_source_options,
        )
        registry.register_scenario_section("preferences", validate_section)

        from .rollback import longterm_redo_turn, longterm_undo_turn

        registry.register_supersede_hook("longterm", longterm_undo_turn)
        registry.register_reapply_hook("longterm", longterm_redo_turn)
