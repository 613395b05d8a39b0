"""The default runtime: JSON memory, preferences, diaries and tables, recalled with the turn's message."""
from __future__ import annotations

from .base import MemoryWrite, Recall, SourceConfig, TurnContext
from .common import PERSONAL_VARIABLES, allowed_variable_errors, recall_all


class PersonalizationRuntime:
    name = "personalization"
    allowed_variables = PERSONAL_VARIABLES
    uses_history = False  # recalls by identity (and query), never from the message history

    def validate_sources(self, sources: list[SourceConfig]) -> dict[str, str]:
        return allowed_variable_errors(sources, self.allowed_variables, self.name)

    def recall(self, context: TurnContext) -> Recall:
        variables, statuses = recall_all(context, context.sources, with_query=True)
        return Recall(variables=variables, sources=statuses)

    def commit(self, turn) -> MemoryWrite | None:
        return None  # memory is written by the background work the commit hooks schedule
