"""The default runtime: JSON memory, preferences, diaries and tables, recalled with the turn's message."""

from __future__ import annotations

from .base import Recall, TurnContext
from .common import PERSONAL_VARIABLES, LocalRuntime, recall_all


class PersonalizationRuntime(LocalRuntime):
    name = "personalization"
    builtin_variables = PERSONAL_VARIABLES

    def recall(self, context: TurnContext) -> Recall:
        variables, statuses = recall_all(context, context.sources, with_query=True)
        return Recall(variables=variables, sources=statuses)
