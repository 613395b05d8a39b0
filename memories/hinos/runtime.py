"""The Hinos runtime (docs/hinos.md).

prepare: the scenario's other sources are recalled as personalization does; the template rendered
with them and without `hinosMemory` is the system message sent to `POST {HINOS_MEMORY_URL}/v1/memory/prepare`
with the conversation's formal messages (current user message last). A non-empty `memory` becomes
`hinosMemory`; an empty one leaves the normal preparation. Any failure fails the turn (502/504) before
a turn row exists. commit: the same `claim_id` with the user input and the reply; only `committed: true`
counts. A failure is recorded as `memory.write_failed` (with the claim id, so an operator can re-send
it); `memoryIngest: best_effort` completes the turn anyway, `required` fails the completion with 502.

The user id and the conversation id (the ids that address memory on the service) are sent scoped by the
product (`scoped_id`), so two products' turns never share a memory behind the deployment-wide
HINOS_MEMORY_URL; HINOS_MEMORY_SCOPE=none sends them raw.

`model_config_id` and `prompt_id` come from the scenario's optional "hinos" section
(`{"modelConfigId": "...", "promptId": "..."}`); both are sent as null when not configured.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import transaction

from memoryhub.clients.errors import UpstreamError, UpstreamProtocolError
from memoryhub.clients.hinos import SERVICE, HinosPrepared, get_hinos_client
from memoryhub.runtimes.base import MemoryWrite, Recall, SourceConfig, SourceResult, TurnContext
from memoryhub.runtimes.common import PERSONAL_VARIABLES, allowed_variable_errors, recall_all, source_status
from memoryhub.runtimes.registry import SectionInvalid
from memoryhub.runtimes.rendering import render_template

HINOS_VARIABLE = "hinosMemory"
SECTION = "hinos"
SECTION_FIELDS = ("modelConfigId", "promptId")
FAILED_EVENT = "memory.write_failed"
# The longest id memoryhub's own Hinos server (and its API) accepts.
SCOPED_ID_MAX_CHARS = 128


def scoped_id(product_id: str, value: str) -> str:
    """The id sent for a product's user or conversation: `<productId>.<id>`, hashed when that is too long.

    A product id is `prd_` and hex (no "." or "-"), so the form is unambiguous and two products never send
    the same id; the hashed form (`<productId>-<sha256 hex>`) differs from the plain one at the separator.
    """
    if settings.HINOS_MEMORY_SCOPE == "none":
        return value
    scoped = f"{product_id}.{value}"
    if len(scoped) <= SCOPED_ID_MAX_CHARS:
        return scoped
    return f"{product_id}-{hashlib.sha256(value.encode()).hexdigest()}"


def validate_hinos_section(value: object) -> dict:
    """The scenario's "hinos" section: optional identifiers forwarded to the Hinos service."""
    if not isinstance(value, dict):
        raise SectionInvalid({SECTION: "must be an object with optional modelConfigId and promptId"})
    errors = {
        f"{SECTION}.{key}": f"unknown field (allowed: {', '.join(SECTION_FIELDS)})"
        for key in value
        if key not in SECTION_FIELDS
    }
    for key in SECTION_FIELDS:
        item = value.get(key)
        if item is not None and (not isinstance(item, str) or not item.strip() or len(item) > 200):
            errors[f"{SECTION}.{key}"] = "must be a non-empty string of at most 200 characters, or null"
    if errors:
        raise SectionInvalid(errors)
    return {key: value.get(key) for key in SECTION_FIELDS}


class HinosCommitRequired(UpstreamError):
    """The reply is stored, but the Hinos commit failed and the scenario requires memory ingest."""

    code = "upstream_failed"


class HinosRuntime:
    name = "hinos"
    allowed_variables = PERSONAL_VARIABLES | {HINOS_VARIABLE}

    def validate_sources(self, sources: list[SourceConfig]) -> dict[str, str]:
        errors = allowed_variable_errors(sources, self.allowed_variables, self.name)
        if sum(1 for s in sources if s.variable == HINOS_VARIABLE) != 1:
            errors["memorySources"] = "the hinos runtime needs exactly one source with variable 'hinosMemory'"
        return errors

    def recall(self, context: TurnContext) -> Recall:
        others = tuple(s for s in context.sources if s.variable != HINOS_VARIABLE)
        variables, statuses = recall_all(context, others, with_query=True)
        prepared = _prepare(context, system=_render_system(context, variables))
        hinos_source = next(s for s in context.sources if s.variable == HINOS_VARIABLE)
        variables[HINOS_VARIABLE] = prepared.memory  # "" renders exactly as the normal preparation
        by_id = {status["id"]: status for status in statuses}
        by_id[hinos_source.id] = source_status(hinos_source, _hinos_result(prepared))
        state = {
            "hinos": {
                "claim_id": prepared.claim_id,
                "turn": prepared.turn,
                "state_through_round": prepared.state_through_round,
            }
        }
        return Recall(variables=variables, sources=[by_id[s.id] for s in context.sources], state=state)

    def commit(self, turn) -> MemoryWrite:
        if commit_acknowledged(turn):
            return MemoryWrite("committed")  # acknowledged before (an operator re-sent it): never send twice
        try:
            send_commit(turn)
        except UpstreamError as exc:
            return _commit_failed(turn, exc)
        mark_acknowledged(turn)
        return MemoryWrite("committed")


def _render_system(context: TurnContext, variables: dict[str, str]) -> str:
    values = {**variables, HINOS_VARIABLE: "", "userMessage": context.user_message}
    return render_template(context.scenario.template, values, max_chars=settings.PROMPT_MAX_CHARS)


def _prepare(context: TurnContext, *, system: str) -> HinosPrepared:
    section = (context.scenario.sections or {}).get(SECTION) or {}
    messages = [*context.history, {"role": "user", "content": context.user_message}]
    return get_hinos_client().prepare(
        conversation_id=scoped_id(context.product.pk, context.conversation_id),
        request_id=context.request_id,
        user_id=scoped_id(context.product.pk, context.user_id),
        scenario_id=context.scenario.slug,
        model_config_id=section.get("modelConfigId"),
        prompt_id=section.get("promptId"),
        system=system,
        messages=messages,
    )


def _hinos_result(prepared: HinosPrepared) -> SourceResult:
    details = {"claimId": prepared.claim_id, "turn": prepared.turn, "stateThroughRound": prepared.state_through_round}
    if not prepared.memory:
        details["reason"] = "the Hinos service returned no memory; the normal preparation is used"
    return SourceResult(text=prepared.memory, status="ok" if prepared.memory else "empty", details=details)


def hinos_state(turn) -> dict:
    return (turn.runtime_state or {}).get("hinos") or {}


def commit_acknowledged(turn) -> bool:
    return hinos_state(turn).get("committed") is True


def send_commit(turn) -> None:
    """POST the commit for the turn's claim; raise a typed UpstreamError unless it answers committed: true."""
    claim_id = hinos_state(turn).get("claim_id")
    if not claim_id:
        raise UpstreamProtocolError("the turn has no Hinos claim id to commit", service=SERVICE)
    get_hinos_client().commit(
        conversation_id=scoped_id(turn.product_id, turn.conversation_id),
        request_id=turn.request_id or None,
        claim_id=claim_id,
        user=turn.user_message,
        assistant=turn.assistant_message,
    )


def mark_acknowledged(turn) -> None:
    """Remember the receipt on the turn, so neither a retry nor an operator sends this claim again."""
    from memories.models import Turn

    turn.runtime_state = {**(turn.runtime_state or {}), "hinos": {**hinos_state(turn), "committed": True}}
    Turn.objects.filter(pk=turn.pk).update(runtime_state=turn.runtime_state)


def record_commit_failure(turn, exc: UpstreamError, **extra) -> dict:
    """Emit `memory.write_failed` in its own transaction, so it survives whatever the caller does next."""
    from memories.services.events import event_emit_for_turn

    details = {
        "service": SERVICE,
        "claim_id": hinos_state(turn).get("claim_id"),
        "reason": exc.message,
        "code": exc.code,
        "memoryIngest": _ingest(turn),
        "round": turn.round,
        **extra,
    }
    if "status" in exc.details:
        details["upstreamStatus"] = exc.details["status"]
    with transaction.atomic():
        event_emit_for_turn(turn, FAILED_EVENT, details)
    return details


def _ingest(turn) -> str:
    return turn.scenario.memory_ingest if turn.scenario else "best_effort"


def _commit_failed(turn, exc: UpstreamError) -> MemoryWrite:
    from memories.models import Turn

    details = record_commit_failure(turn, exc)
    write = MemoryWrite("failed", f"the Hinos commit failed: {exc.message}")
    if details["memoryIngest"] != "required":
        return write
    turn.memory_write = write.as_dict()
    Turn.objects.filter(pk=turn.pk).update(memory_write=turn.memory_write)
    raise HinosCommitRequired(
        f"the reply was stored, but the Hinos memory commit failed ({exc.message}); memoryIngest is 'required', "
        "so the turn is not committed — retry with POST …/accept or re-send it from the admin",
        service=SERVICE,
        details={
            "turnId": turn.pk,
            "claim_id": details["claim_id"],
            "reason": exc.message,
            "memoryWrite": turn.memory_write,
        },
    )
