"""Shared runtime behaviour: recall each source through its producer and report its status."""

from __future__ import annotations

import logging

import redis.exceptions
from django.db import DatabaseError
from django_redis.exceptions import ConnectionInterrupted

from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.clients.errors import UpstreamError
from memoryhub.errors import DomainError

from . import registry
from .base import RecallRequest, SourceConfig, SourceResult, TurnContext

logger = logging.getLogger(__name__)

# Failures of a dependency, not of a producer: they fail the turn with their 502/503/504 (C3, R3).
# django-redis re-raises the redis-py error when exceptions are not ignored.
_DEPENDENCY_DOWN = (
    UpstreamError,
    DatabaseError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionInterrupted,
)

PERSONAL_VARIABLES = frozenset({"jsonMemory", "preferences", "compassMemory", "memoryTable"})
AXON_VARIABLES = frozenset({"compassMemory", "memoryTable"})


def allowed_variable_errors(sources: list[SourceConfig], allowed: frozenset[str], runtime: str) -> dict[str, str]:
    agent_refs = registry.runtime_agent_refs(runtime)  # sources named by agentRef carry any variable name
    return {
        f"memorySources[{index}].variable": f"runtime {runtime} does not accept the variable {source.variable!r}; "
        f"allowed: {', '.join(sorted(allowed))}"
        for index, source in enumerate(sources)
        if source.variable not in allowed and source.agent_ref not in agent_refs
    }


def recall_request(context: TurnContext, source: SourceConfig, *, with_query: bool) -> RecallRequest:
    return RecallRequest(
        address=ConversationAddress(context.product, context.user_id, context.conversation_id),
        source=source,
        scenario=context.scenario,
        user_message=context.user_message if with_query else "",  # axon recalls never see the query
        subscription_category=context.subscription_category,
        round=context.round,
        replaces_turn_id=context.replaces_turn_id,
        character=context.character,
    )


def recall_source(context: TurnContext, source: SourceConfig, *, with_query: bool) -> SourceResult:
    return _produce(recall_request(context, source, with_query=with_query))


def _produce(request: RecallRequest) -> SourceResult:
    producer = registry.producer_for(request.source)
    if producer is None:  # a variable with no producer yields empty text and says so
        reason = "no producer is installed for this variable"
        return SourceResult(text="", status="unavailable", details={"reason": reason})
    try:
        return producer(request)
    except _DEPENDENCY_DOWN:
        raise  # a dependency that is down fails the turn with its own 502/503/504, never an empty source
    except DomainError:
        raise  # a producer refusing the turn answers with its own envelope (e.g. 422 budget_exceeded)
    except Exception as exc:  # a broken producer must not invent content: report it on its source
        logger.exception("producer for %s failed", request.source.variable)
        return SourceResult(text="", status="error", details={"reason": f"{exc.__class__.__name__}: {exc}"[:300]})


def source_status(source: SourceConfig, result: SourceResult) -> dict:
    status: dict[str, object] = {
        "id": source.id,
        "agentRef": source.agent_ref,
        "variable": source.variable,
        "status": result.status,
    }
    if result.revision is not None:
        status["revision"] = result.revision
    if result.version is not None:
        status["version"] = result.version
    if result.details:
        status["details"] = result.details
    status["cached"] = result.cached
    return status


def recall_all(context: TurnContext, sources: tuple[SourceConfig, ...], *, with_query: bool):
    requests = [recall_request(context, source, with_query=with_query) for source in sources]
    with working_set.batch(registry.declared_scopes(requests)):  # one cache round trip for every source's entry
        results = [(request.source, _produce(request)) for request in requests]
    variables = {source.variable: result.text for source, result in results}
    for source, result in results:
        for name in registry.source_variables(source)[1:]:
            variables[name] = result.parts.get(name[len(source.variable) :], "")
    return variables, [source_status(source, result) for source, result in results]


class LocalRuntime:
    """A runtime whose memory lives in memoryhub: sources are checked against `allowed_variables`, and the
    memory of a committed turn is written by the background work the commit hooks schedule."""

    name: str
    builtin_variables: frozenset[str] = frozenset()
    uses_history = False  # recalls by identity (and query), never from the message history

    @property
    def allowed_variables(self) -> frozenset[str]:
        """The built-in variables plus those registered for this runtime (registry.register_source(runtimes=…))."""
        return self.builtin_variables | registry.runtime_variables(self.name)

    def validate_sources(self, sources: list[SourceConfig]) -> dict[str, str]:
        return allowed_variable_errors(sources, self.allowed_variables, self.name)

    def commit(self, turn) -> None:
        return None
