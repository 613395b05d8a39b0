from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from django.urls import register_converter

        from memoryhub.converters import RowIdConverter
        from memoryhub.runtimes import registry

        register_converter(RowIdConverter, "id")  # before any URLconf is imported

        from .producers import json_memory_scopes, produce_json_memory
        from .tasks import enqueue_turn_committed_audit

        registry.register_source(
            "jsonMemory",
            description="the conversation's JSON memory document as compact JSON text",
            agent_refs=["json-memory"],
            producer=produce_json_memory,
            scopes=json_memory_scopes,
        )
        registry.register_commit_hook("memories.turn_committed_audit", enqueue_turn_committed_audit)
