"""The turn pipeline: prepare (recall + render) → complete (store the reply) → commit (memory + background work)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memories.models import Conversation, Message, Scenario, Turn
from memories.selectors.witness import live_messages, witnessed_by
from memories.services.branches import LIVE, awaits_accept, turn_supersede
from memories.services.conversations import conversation_scope, conversation_state
from memories.services.events import event_emit_for_turn
from memories.services.memory_write import memory_write_after_commit
from memories.services.scenarios import scenario_for_turn, scenario_scope, scenario_sources
from memories.signals import messages_stored
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import Conflict, InvalidRequest, NotFound
from memoryhub.events import publish as publish_event
from memoryhub.prepared import insert_one
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import SUBSCRIPTION_CATEGORIES, MemoryWrite, RecallRequest, TurnContext
from memoryhub.runtimes.rendering import render_template, template_placeholders


@dataclass(frozen=True)
class TurnRequest:
    scenario_slug: str
    user_message: str
    subscription_category: str | None = None
    request_id: str | None = None
    replaces_turn_id: int | None = None
    # Witness scopes (docs/roleplay.md): the replying character, the user's persona, the characters present.
    name: str | None = None
    user_name: str | None = None
    present: tuple[str, ...] = ()

    @property
    def witness(self) -> dict:
        out = {"name": self.name, "userName": self.user_name, "present": list(self.present)}
        return {key: value for key, value in out.items() if value}


MAX_PRESENT = 50


def witness_names(present: object) -> tuple[str, ...]:
    """The `present` list of a prepare: 0-50 distinct names of 1-100 characters (400 naming `present` else)."""
    names = present if isinstance(present, list) else None
    if (
        names is None
        or len(names) > MAX_PRESENT
        or not all(isinstance(n, str) and 1 <= len(n.strip()) <= 100 for n in names)
    ):
        raise InvalidRequest(
            f"present must be a list of at most {MAX_PRESENT} names of 1-100 characters", details={"field": "present"}
        )
    return tuple(dict.fromkeys(name.strip() for name in names))


def turn_prepare(*, address: ConversationAddress, request: TurnRequest, scopes: tuple | None = None) -> Turn:
    """`scopes`: (address, slug, turn_prepare_scopes(address, slug, message)) computed earlier in this request."""
    category = _category(request.subscription_category)
    if scopes is None or scopes[:2] != (address, request.scenario_slug):
        scopes = (
            address,
            request.scenario_slug,
            turn_prepare_scopes(address, request.scenario_slug, request.user_message),
        )
    with working_set.batch(scopes[2]):  # one cache round trip, see turn_prepare_scopes
        scenario = scenario_for_turn(product=address.product, slug=request.scenario_slug)
        _seen_scenarios[(address.product.pk, scenario.slug)] = scenario
        conversation_pk, rounds = conversation_state(address)
        context, recall, replaces = _recall(address, request, scenario, category, rounds)
    return _record_turn(scenario, conversation_pk, context, recall, replaces, request.witness)


# The scenarios this process prepared turns with: only a hint of which working-set entries a prepare will read.
_seen_scenarios: dict[tuple[str, str], Scenario] = {}
_SEEN_SCENARIOS_MAX = 1000


def turn_prepare_scopes(address: ConversationAddress, slug: str, user_message: str = "") -> list[working_set.Scope]:
    """The scenario, the round counter and, predicted from the scenario as last seen, every source's entries
    (with the user message: the query vectors of the sources that search with it).

    A prediction that is wrong (the scenario changed) costs nothing but a second MGET in the recall for the
    entries not fetched here; a value is never taken from a prediction without being its entry's own.
    """
    scopes = [
        scenario_scope(address.product.pk, slug),
        conversation_scope(address.product.pk, address.user_id, address.conversation_id),
    ]
    seen = _seen_scenarios.get((address.product.pk, slug))
    if seen is None:
        if len(_seen_scenarios) >= _SEEN_SCENARIOS_MAX:
            _seen_scenarios.clear()
        return scopes
    requests = [
        RecallRequest(address, source, scenario=seen, user_message=user_message) for source in scenario_sources(seen)
    ]
    return scopes + registry.declared_scopes(requests)


def _recall(address: ConversationAddress, request: TurnRequest, scenario: Scenario, category: str | None, rounds: int):
    replaces = _replaced_turn(address, request.replaces_turn_id)
    round_number = replaces.round if replaces else rounds + 1
    sources = scenario_sources(scenario)
    runtime = registry.get_runtime(scenario.memory_runtime)
    # The formal message history grows with the conversation: load it only for runtimes that send it on.
    uses_history = getattr(runtime, "uses_history", True)
    history = tuple(_history(address, before_round=round_number, character=request.name)) if uses_history else ()
    context = TurnContext(
        product=address.product,
        user_id=address.user_id,
        conversation_id=address.conversation_id,
        scenario=scenario,
        sources=sources,
        user_message=request.user_message,
        subscription_category=category,
        round=round_number,
        request_id=request.request_id or uuid.uuid4().hex,
        history=history,
        replaces_turn_id=_displaced_reply(replaces).pk if replaces else None,
        character=request.name,
    )
    return context, runtime.recall(context), replaces


def _category(raw: str | None) -> str | None:
    if raw is not None and raw not in SUBSCRIPTION_CATEGORIES:
        raise InvalidRequest(
            f"subscriptionCategory must be one of {', '.join(SUBSCRIPTION_CATEGORIES)}",
            details={"field": "subscriptionCategory"},
        )
    return raw


def _replaced_turn(address: ConversationAddress, turn_id: int | None) -> Turn | None:
    if turn_id is None:
        return None
    turn = _turns(address).filter(pk=turn_id, status__in=["completed", "committed"]).first()
    if turn is None:
        raise NotFound(f"no completed turn {turn_id} to replace in this conversation")
    return turn


def _displaced_reply(replaces: Turn) -> Turn:
    """The reply whose rollback a regeneration's prompt anticipates: the one it names or, when that one is itself a
    regeneration awaiting accept, the round's current reply (what accepting either of them supersedes)."""
    if not awaits_accept(replaces):
        return replaces
    current = Turn.objects.filter(
        conversation_row_id=replaces.conversation_row_id,
        round=replaces.round,
        status__in=LIVE,
        messages__role="assistant",
        messages__superseded=False,
    )
    return current.order_by("-pk").first() or replaces


def _history(address: ConversationAddress, *, before_round: int, character: str | None) -> list[dict]:
    rows = witnessed_by(live_messages(address, before_round=before_round), character)  # all when no character
    return [dict(row) for row in rows.order_by("round", "id").values("role", "content")]  # conversation order


def _references(sources, used: set[str]) -> tuple[list[str], list[str]]:
    """The placeholders of the configured sources the template uses (a lorebook's `worldInfoBefore` as well as
    its `worldInfo`), and the sources none of whose placeholders it uses: retrieved, never seen by the model."""
    referenced: list[str] = []
    unreferenced: list[str] = []
    for config in sources:
        placeholders = [name for name in registry.source_variables(config) if name in used]
        referenced.extend(placeholders)
        if not placeholders:
            unreferenced.append(config.variable)
    return referenced, unreferenced


def _record_turn(
    scenario: Scenario, conversation_pk: int, context: TurnContext, recall, replaces, witness: dict
) -> Turn:
    used = set(template_placeholders(scenario.template))
    referenced, unreferenced = _references(context.sources, used)
    values = {**recall.variables, "userMessage": context.user_message}
    prompt = render_template(scenario.template, values, max_chars=settings.PROMPT_MAX_CHARS)
    # The durable record of what the model saw, committed before the answer (one INSERT; docs/performance.md).
    turn = Turn(
        product=context.product,
        conversation_row_id=conversation_pk,
        user_id=context.user_id,
        conversation_id=context.conversation_id,
        scenario=scenario,
        scenario_slug=scenario.slug,
        scenario_version=scenario.version,
        runtime=scenario.memory_runtime,
        round=context.round,
        request_id=context.request_id,
        subscription_category=context.subscription_category or "",
        user_message=context.user_message,
        prompt=prompt,
        variables=recall.variables,
        referenced_variables=referenced,
        unreferenced_variables=unreferenced,
        sources=recall.sources,
        runtime_state=recall.state,
        replaces=replaces,
        witness=witness,
    )
    return insert_one(turn)


def _turns(address: ConversationAddress):
    return Turn.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )


def turn_get(*, address: ConversationAddress, turn_id: int) -> Turn:
    turn = _turns(address).select_related("scenario", "product").filter(pk=turn_id).first()
    if turn is None:
        raise NotFound(f"no turn {turn_id} in this conversation")
    return turn


def turn_complete(*, address: ConversationAddress, turn_id: int, assistant_message: str) -> Turn:
    """Store the reply (always), then commit when the scenario commits on completion."""
    with transaction.atomic():
        turn = (
            _turns(address)
            .select_for_update(of=("self",), no_key=True)
            .select_related("scenario")
            .filter(pk=turn_id)
            .first()
        )
        if turn is None:
            raise NotFound(f"no turn {turn_id} in this conversation")
        on_accept = bool(turn.scenario and turn.scenario.commit_on == "accepted")
        retry = turn.assistant_message == assistant_message
        if retry and (turn.status == "committed" or (on_accept and turn.status == "completed")):
            return turn  # a retry of a complete whose answer was lost: it did everything already (or waits for accept)
        if retry and turn.status == "completed":
            pass  # a retry: the reply was stored but the commit did not happen (the database went away): commit now
        elif turn.status != "prepared":
            raise Conflict(
                f"turn {turn_id} is already {turn.status} with another reply; for a new reply of its round, prepare"
                " a turn with replacesTurnId (a regeneration)",
                code="turn_already_completed",
                details={"turnId": turn_id, "status": turn.status},
            )
        else:
            _store_reply(turn, assistant_message, awaits_accept=on_accept and turn.replaces_id is not None)
            if on_accept:  # with the reply, so a retry waiting on the row lock reads the turn whole
                turn.memory_write = MemoryWrite("pending", "waiting for accept").as_dict()
                Turn.objects.filter(pk=turn.pk).update(memory_write=turn.memory_write)
    if on_accept:
        return turn
    return turn_commit(turn=turn, retry=retry)


def turn_accept(*, address: ConversationAddress, turn_id: int) -> Turn:
    turn = turn_get(address=address, turn_id=turn_id)
    if turn.status != "completed":
        raise _not_acceptable(turn_id, turn.status, committed=turn.committed_at is not None)
    try:
        return turn_commit(turn=turn)
    except LostCommit as lost:  # a concurrent accept (or a select) got there first: as if it had come before
        raise _not_acceptable(turn_id, lost.status, committed=lost.status == "committed") from None


def _not_acceptable(turn_id: int, status: str, *, committed: bool) -> Conflict:
    if status == "superseded" and not committed:  # another reply of its round was made current before its commit
        return LostCommit(turn_id, status)
    return Conflict(
        f"turn {turn_id} is {status}; only a completed turn can be accepted",
        code="turn_not_acceptable",
        details={"turnId": turn_id, "status": status},
    )


def _store_reply(turn: Turn, assistant_message: str, *, awaits_accept: bool) -> None:
    """`awaits_accept`: a regeneration that takes its round's place only when accepted (turn_commit): until then
    its messages are stored superseded and the round's current reply, with its writes, stays as it is."""
    conversation = Conversation.objects.select_for_update(no_key=True).get(pk=turn.conversation_row_id)
    if turn.replaces_id:
        if not awaits_accept:
            _supersede_round(turn)
    else:
        conversation.rounds += 1
        conversation.save(update_fields=["rounds", "updated_at"])
        turn.round = conversation.rounds
    common = dict(
        product=turn.product, user_id=turn.user_id, conversation_id=turn.conversation_id, turn=turn, round=turn.round
    )
    common["superseded"] = awaits_accept
    witness = turn.witness or {}
    present = witness.get("present", [])
    stored = Message.objects.bulk_create(
        [
            Message(
                role="user", content=turn.user_message, name=witness.get("userName", ""), present=present, **common
            ),
            Message(
                role="assistant", content=assistant_message, name=witness.get("name", ""), present=present, **common
            ),
        ]
    )
    messages_stored.send(sender=Message, messages=stored)
    turn.assistant_message = assistant_message
    turn.status = "completed"
    turn.completed_at = timezone.now()
    turn.save(update_fields=["assistant_message", "status", "completed_at", "round"])


def _supersede_round(turn: Turn) -> None:
    """A regenerated reply becomes its round's current one, whatever that is now: the reply it was prepared to
    replace, or one that took that reply's place meanwhile (another regeneration, an edit, a swipe back). So a
    round never has two current replies, and no discarded reply's writes stay (under the conversation's lock)."""
    round_turns = Turn.objects.filter(conversation_row_id=turn.conversation_row_id, round=turn.round)
    for other in round_turns.filter(status__in=LIVE).exclude(pk=turn.pk).order_by("pk").values_list("pk", flat=True):
        turn_supersede(other, by_turn_pk=turn.pk, cause="regenerate")
    # A user message kept visible by the delete of its reply belongs to the round's old branch as well.
    Message.objects.filter(turn__in=round_turns, superseded=False).exclude(turn=turn).update(superseded=True)


class LostCommit(Conflict):
    """Another request committed (or superseded) the turn between this one's read and its claim."""

    def __init__(self, turn_pk: int, status: str):
        if status == "committed":
            super().__init__(f"turn {turn_pk} was committed already", code="turn_already_committed")
        else:
            message = f"turn {turn_pk} is {status}: another reply of its round was made current before it committed"
            super().__init__(message, code="turn_superseded", details={"turnId": turn_pk, "status": status})
        self.status = status


def turn_commit(*, turn: Turn, retry: bool = False) -> Turn:
    """Commit to the runtime (outside any transaction: it may call a remote service), then record and schedule.

    `retry`: a complete repeating the stored reply; when a concurrent request committed the turn meanwhile,
    it answers the committed turn (nothing done twice) instead of a conflict."""
    runtime_write = registry.get_runtime(turn.runtime).commit(turn)
    with transaction.atomic():
        if turn.replaces_id:  # the conversation's lock first, as a select takes it, before the turn's row
            Conversation.objects.select_for_update(no_key=True).filter(pk=turn.conversation_row_id).first()
        takes_place = awaits_accept(turn)
        claimed = Turn.objects.filter(pk=turn.pk, status="completed").update(
            status="committed", committed_at=timezone.now()
        )
        if not claimed:
            status = Turn.objects.filter(pk=turn.pk).values_list("status", flat=True).first() or "gone"
            if retry and status == "committed":
                return Turn.objects.select_related("scenario").get(pk=turn.pk)
            raise LostCommit(turn.pk, status)
        if takes_place:  # an accepted regeneration: the round's other replies superseded first, then its own work
            _supersede_round(turn)
            Message.objects.filter(turn_id=turn.pk, deleted=False).update(superseded=False)
        scheduled = registry.run_commit_hooks(turn.pk)
        turn.status, turn.memory_write = "committed", memory_write_after_commit(scheduled, runtime_write)
        Turn.objects.filter(pk=turn.pk).update(memory_write=turn.memory_write)
        event_emit_for_turn(
            turn, "turn.completed", {"round": turn.round, "memoryWrite": turn.memory_write, "scheduled": scheduled}
        )
        where = {"user": turn.user_id, "conversation": turn.conversation_id}
        publish_event(turn.product_id, "turn.completed", **where, data={"turnId": turn.pk, "round": turn.round})
    # Work run in-process (no broker) has finished by now and reported: answer with what is stored.
    turn.memory_write = Turn.objects.filter(pk=turn.pk).values_list("memory_write", flat=True).first() or {}
    return turn
