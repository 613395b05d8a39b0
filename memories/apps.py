from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from django.urls import register_converter

        from memoryhub import blas
        from memoryhub.converters import RowIdConverter
        from memoryhub.runtimes import registry

        register_converter(RowIdConverter, "id")  # before any URLconf is imported
        blas.limit_to_one_thread()  # web and Celery worker processes alike (memoryhub/blas.py)

        from memoryhub import turn_jobs

        from .producers import json_memory_scopes, produce_json_memory
        from .services.memory_write import memory_write_finish
        from .tasks import AUDIT, enqueue_turn_committed_audit, turn_committed_audit_run

        registry.register_source(
            "jsonMemory",
            description="the conversation's JSON memory document as compact JSON text",
            agent_refs=["json-memory"],
            producer=produce_json_memory,
            scopes=json_memory_scopes,
        )
        registry.register_commit_hook("memories.turn_committed_audit", enqueue_turn_committed_audit)
        turn_jobs.register(AUDIT, turn_committed_audit_run)
        # A reporting job's end is recorded in its turn's memoryWrite (memories owns the Turn).
        turn_jobs.set_reporter(
            lambda turn_pk, work, failure: memory_write_finish(turn_pk=turn_pk, work=work, failure=failure)
        )
