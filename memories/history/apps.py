from __future__ import annotations

from django.apps import AppConfig


class HistoryConfig(AppConfig):
    """A user's message history as a search index (keyword at once, vectors in background) and its recall source."""

    name = "memories.history"
    label = "history"
    verbose_name = "History search"

    def ready(self) -> None:
        from memories.signals import messages_stored
        from memoryhub import outbox
        from memoryhub.runtimes import registry

        from . import tasks  # noqa: F401  registers the Celery tasks (the outbox sends them by name)
        from .producers import AGENT_REF, VARIABLE, produce_recalled_history, recalled_history_scopes, validate_options
        from .services.indexing import EMBED_IMPORTED_TASK

        registry.register_source(
            VARIABLE,
            description="the user's past messages (other conversations, earlier rounds) relevant to this turn",
            producer=produce_recalled_history,
            scopes=recalled_history_scopes,
            agent_refs=[AGENT_REF],
            runtimes=("personalization", "axon_shadow"),
            options=validate_options,
        )
        messages_stored.connect(_index_stored, dispatch_uid="history.index_stored_messages")
        # Embedding a thousand imported messages must not hold the request that imported them; a turn's two
        # messages are embedded after its commit like its other work (on SQLite a background writer would
        # meet the next request's write).
        outbox.run_in_background(EMBED_IMPORTED_TASK)


def _index_stored(sender, messages, **kwargs) -> None:
    from .services.indexing import history_index_messages

    history_index_messages(messages)
