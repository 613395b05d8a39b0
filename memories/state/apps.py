from __future__ import annotations

from django.apps import AppConfig


class StateConfig(AppConfig):
    """Conversation state (docs/state.md): text + categorized records, committed by compare-and-set."""

    name = "memories.state"
    label = "state"
    verbose_name = "Conversation state"

    def ready(self) -> None:
        from memoryhub.runtimes import registry

        from .producers import conversation_state_scopes, produce_conversation_state
        from .rollback import state_redo_turn, state_undo_turn
        from .validation import SECTION, validate_state_section

        registry.register_source(
            "conversationState",
            description="the conversation state's actor projection (records of actor categories) as text",
            producer=produce_conversation_state,
            scopes=conversation_state_scopes,
            agent_refs=["state"],
            runtimes=["personalization", "axon_shadow"],
        )
        registry.register_scenario_section(SECTION, validate_state_section)
        registry.register_supersede_hook("state", state_undo_turn)
        registry.register_reapply_hook("state", state_redo_turn)
