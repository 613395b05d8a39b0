"""Axon runtimes: recall diaries and tables by user, conversation and source — never by query."""

from __future__ import annotations

from .base import Recall, TurnContext
from .common import AXON_VARIABLES, PERSONAL_VARIABLES, LocalRuntime, recall_all


class AxonGoRuntime(LocalRuntime):
    name = "axon_go"
    builtin_variables = AXON_VARIABLES

    def recall(self, context: TurnContext) -> Recall:
        variables, statuses = recall_all(context, context.sources, with_query=False)
        return Recall(variables=variables, sources=statuses)


class AxonShadowRuntime(LocalRuntime):
    """Serve exactly the personalization result; run the axon recall beside it and record the comparison."""

    name = "axon_shadow"
    builtin_variables = PERSONAL_VARIABLES

    def recall(self, context: TurnContext) -> Recall:
        served, statuses = recall_all(context, context.sources, with_query=True)
        axon_sources = tuple(s for s in context.sources if s.variable in AXON_VARIABLES)
        shadow, _ = recall_all(context, axon_sources, with_query=False)
        return Recall(variables=served, sources=statuses, state={"shadowComparison": compare(served, shadow)})


def compare(served: dict[str, str], shadow: dict[str, str]) -> dict:
    variables = sorted(set(served) | set(shadow))
    return {
        "differed": [v for v in variables if served.get(v) != shadow.get(v)],
        "servedOnly": [v for v in variables if v not in shadow],
        "sizes": {
            v: {"served": len(served.get(v, "")), "axon": len(shadow[v]) if v in shadow else None} for v in variables
        },
    }
