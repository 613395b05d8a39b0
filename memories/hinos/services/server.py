"""memoryhub as a Hinos memory service (docs/hinos.md): prepare serves memory, commit stores the round once.

Layout of `memory`: the recalled text of each source, in the scenario's source order, as
"## <title>\\n<text>" blocks separated by a blank line; sources with no text are left out, and no
text at all is "". The sources are the scenario named by `scenario_id` (its memorySources except
`hinosMemory`), or, without `scenario_id`, DEFAULT_LAYOUT.

`state_through_round` (see `reflected_through`): the highest committed round R of the conversation
such that every round ≤ R committed through this server has had its background work finish — each
background writer feeding a served variable (WRITERS) has recorded its outcome event for that turn.
Rounds committed through the normal turn pipeline count as reflected.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from memories.hinos.models import HinosClaim
from memories.models import Conversation, Event, Message, Product, Scenario, Turn
from memories.selectors.scenarios import scenario_get
from memories.services.events import event_emit_for_turn
from memories.services.memory_write import memory_write_after_commit
from memories.services.scenarios import scenario_sources
from memories.signals import messages_stored
from memoryhub.errors import Conflict, NotFound
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import SourceConfig, SourceResult, TurnContext
from memoryhub.runtimes.common import recall_source, source_status

RUNTIME = "hinos-server"
HINOS_VARIABLE = "hinosMemory"
DEFAULT_LAYOUT = (
    SourceConfig("preferences", "", "preferences"),
    SourceConfig("diary", "", "compassMemory"),
    SourceConfig("tables", "", "memoryTable"),
)
TITLES = {
    "preferences": "User preferences",
    "compassMemory": "Diary summaries",
    "memoryTable": "Memory tables",
    "jsonMemory": "Conversation memory (JSON)",
}


@dataclass(frozen=True)
class Writer:
    """Background work that feeds a variable, and the events that say it is done with a turn."""

    hook: str
    variable: str
    done: Q
    section: str | None = None  # the writer only runs for scenarios with this section

    def applies(self, scenario: Scenario | None, variables: set[str]) -> bool:
        if scenario is None or self.variable not in variables:
            return False
        return self.section is None or bool((scenario.sections or {}).get(self.section))


WRITERS = (
    Writer(
        "diaries",
        "compassMemory",
        Q(type__in=["diary.written", "diary.skipped"]) | Q(type="diary.failed", details__willRetry=False),
    ),
    Writer("tables", "memoryTable", Q(type__in=["table.updated", "table.unchanged", "table.conflict"]), "tables"),
)


@dataclass(frozen=True)
class PrepareRequest:
    user_id: str
    conversation_id: str
    messages: list[dict]
    system: str = ""
    request_id: str | None = None
    scenario_id: str | None = None
    model_config_id: str | None = None
    prompt_id: str | None = None


def hinos_prepare(*, product: Product, request: PrepareRequest) -> HinosClaim:
    """Record a claim and serve the memory for the round after the conversation's last completed one."""
    scenario = scenario_get(product=product, slug=request.scenario_id) if request.scenario_id else None
    conversation, _ = Conversation.objects.get_or_create(
        product=product, user_id=request.user_id, conversation_id=request.conversation_id
    )
    # Measured before recalling: whatever was reflected by now is visible to the recall below.
    through = reflected_through(product=product, user_id=request.user_id, conversation_id=request.conversation_id)
    layout = _layout(scenario)
    context = TurnContext(
        product=product,
        user_id=request.user_id,
        conversation_id=request.conversation_id,
        scenario=scenario,
        sources=layout,
        user_message=request.messages[-1]["content"],
        subscription_category=None,
        round=conversation.rounds + 1,
        request_id=request.request_id or "",
        history=tuple(request.messages[:-1]),
    )
    results = [(source, recall_source(context, source, with_query=True)) for source in layout]
    return HinosClaim.objects.create(
        product=product,
        claim_id=f"hc_{secrets.token_urlsafe(24)}",
        conversation_row=conversation,
        user_id=request.user_id,
        conversation_id=request.conversation_id,
        scenario=scenario,
        scenario_slug=request.scenario_id or "",
        request_id=request.request_id or "",
        model_config_id=request.model_config_id or "",
        prompt_id=request.prompt_id or "",
        system=request.system,
        memory=assemble_memory(results),
        sources=[source_status(s, r) for s, r in results],
        turn=context.round,
        state_through_round=min(through, context.round - 1),
    )


def _layout(scenario: Scenario | None) -> tuple[SourceConfig, ...]:
    if scenario is None:
        return DEFAULT_LAYOUT
    return tuple(s for s in scenario_sources(scenario) if s.variable != HINOS_VARIABLE)


def assemble_memory(results: list[tuple[SourceConfig, SourceResult]]) -> str:
    blocks = [f"## {TITLES.get(s.variable, s.id)}\n{r.text.strip()}" for s, r in results if r.text.strip()]
    return "\n\n".join(blocks)


def reflected_through(*, product: Product, user_id: str, conversation_id: str) -> int:
    """The conversation's last committed round, lowered to before the oldest claim whose work is pending."""
    committed = (
        Turn.objects.filter(
            product=product, user_id=user_id, conversation_id=conversation_id, status="committed"
        ).aggregate(last=Max("round"))["last"]
        or 0
    )
    pending = (
        HinosClaim.objects.filter(
            product=product,
            user_id=user_id,
            conversation_id=conversation_id,
            status="committed",
            reflected_at__isnull=True,
            committed_turn__isnull=False,
        )
        .select_related("committed_turn")
        .order_by("committed_turn__round", "id")
    )
    for claim in pending:
        assert claim.committed_turn is not None  # filtered on committed_turn__isnull=False
        if not _settled(claim, claim.committed_turn):
            return min(committed, claim.committed_turn.round - 1)
        HinosClaim.objects.filter(pk=claim.pk, reflected_at__isnull=True).update(reflected_at=timezone.now())
    return committed


def _settled(claim: HinosClaim, turn: Turn) -> bool:
    events = Event.objects.filter(product_id=claim.product_id, turn_id=turn.pk)
    return all(events.filter(writer.done).exists() for writer in WRITERS if writer.hook in claim.awaiting)


@dataclass(frozen=True)
class Committed:
    claim: HinosClaim
    replayed: bool


def hinos_commit(
    *, product: Product, claim_id: str, user: str, assistant: str, conversation_id: str | None = None
) -> Committed:
    """Accept a claim once: store the round and schedule its background work; a same-body repeat is a no-op."""
    digest = commit_digest(user, assistant)
    with transaction.atomic():
        claim = (
            HinosClaim.objects.select_for_update(of=("self",), no_key=True)
            .select_related("scenario")
            .filter(product=product, claim_id=claim_id)
            .first()
        )
        if claim is None or (conversation_id is not None and conversation_id != claim.conversation_id):
            raise NotFound(f"no claim {claim_id!r} in this conversation")
        if claim.status == "committed":
            return Committed(_same_body_or_conflict(claim, digest), replayed=True)
        turn = _own_pipeline_turn(claim, user, assistant) or _store_turn(claim, user, assistant)
        _mark_committed(claim, turn, digest)
    return Committed(claim, replayed=False)


def commit_digest(user: str, assistant: str) -> str:
    return hashlib.sha256(json.dumps([user, assistant], ensure_ascii=False).encode()).hexdigest()


def _same_body_or_conflict(claim: HinosClaim, digest: str) -> HinosClaim:
    if claim.commit_digest != digest:
        raise Conflict(
            f"claim {claim.claim_id!r} was committed with a different user/assistant text",
            code="claim_already_committed",
            details={"claim_id": claim.claim_id},
        )
    return claim


def _own_pipeline_turn(claim: HinosClaim, user: str, assistant: str) -> Turn | None:
    """The same product's own hinos turn for this claim: its pipeline stores the round and runs the hooks."""
    return Turn.objects.filter(
        product_id=claim.product_id,
        user_id=claim.user_id,
        conversation_id=claim.conversation_id,
        runtime="hinos",
        runtime_state__hinos__claim_id=claim.claim_id,
        status__in=["completed", "committed"],
        user_message=user,
        assistant_message=assistant,
    ).first()


def _store_turn(claim: HinosClaim, user: str, assistant: str) -> Turn:
    conversation = Conversation.objects.select_for_update(no_key=True).get(pk=claim.conversation_row_id)
    conversation.rounds += 1
    conversation.save(update_fields=["rounds", "updated_at"])
    turn = Turn.objects.create(**_turn_fields(claim, conversation, user, assistant))
    common = dict(
        product_id=claim.product_id,
        user_id=claim.user_id,
        conversation_id=claim.conversation_id,
        turn=turn,
        round=turn.round,
    )
    stored = Message.objects.bulk_create(
        [
            Message(role="user", content=user, **common),
            Message(role="assistant", content=assistant, **common),
        ]
    )
    messages_stored.send(sender=Message, messages=stored)
    scheduled = registry.run_commit_hooks(turn.pk)  # the same background work as a completed turn
    turn.memory_write = memory_write_after_commit(scheduled)
    turn.save(update_fields=["memory_write"])
    event_emit_for_turn(
        turn,
        "turn.completed",
        {
            "round": turn.round,
            "memoryWrite": turn.memory_write,
            "scheduled": scheduled,
            "via": "hinos",
            "claim_id": claim.claim_id,
        },
    )
    return turn


def _turn_fields(claim: HinosClaim, conversation: Conversation, user: str, assistant: str) -> dict:
    now = timezone.now()
    scenario = claim.scenario
    return dict(
        product_id=claim.product_id,
        conversation_row=conversation,
        user_id=claim.user_id,
        conversation_id=claim.conversation_id,
        scenario=scenario,
        scenario_slug=claim.scenario_slug,
        scenario_version=scenario.version if scenario else 0,
        runtime=RUNTIME,
        round=conversation.rounds,
        status="committed",
        request_id=claim.request_id,
        user_message=user,
        assistant_message=assistant,
        prompt=claim.system,
        variables={HINOS_VARIABLE: claim.memory},
        sources=claim.sources,
        runtime_state={
            "hinos_server": {
                "claim_id": claim.claim_id,
                "turn": claim.turn,
                "state_through_round": claim.state_through_round,
            }
        },
        completed_at=now,
        committed_at=now,
    )


def _mark_committed(claim: HinosClaim, turn: Turn, digest: str) -> None:
    variables = {source["variable"] for source in claim.sources}
    claim.awaiting = [w.hook for w in WRITERS if w.applies(claim.scenario, variables)]
    claim.status, claim.commit_digest, claim.committed_turn = "committed", digest, turn
    claim.committed_at = timezone.now()
    claim.reflected_at = None if claim.awaiting else claim.committed_at
    claim.save(update_fields=["status", "commit_digest", "committed_turn", "awaiting", "committed_at", "reflected_at"])
