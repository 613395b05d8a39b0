from __future__ import annotations

from django.apps import AppConfig


class LongTermConfig(AppConfig):
    """Long-term user memories: admission, keyword and semantic search, embedding indexes, task checkpoints."""

    name = "memories.longterm"
    label = "longterm"
    verbose_name = "Long-term memories"

    def ready(self) -> None:
        from . import producers  # noqa: F401  registers the `preferences` producer
