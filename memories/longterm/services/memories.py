"""Long-term memories: admitted writes, compare-and-set updates, deletes (SPEC L1–L4, C2).

Every write: admission first (a refusal is logged and nothing else happens), then the embedding
(outside the transaction — it may be a remote call), then one transaction with the row, its vector,
its history, the operationId's run-once record and the working-set invalidation. An embedder that is
down, or an index built for another embedding identity, fails the write before anything is written.
Updates and deletes are compare-and-set writes on `version` through memoryhub.cas. Writes return
MemoryOutcome (the memory, whether it was created, whether it is a replay); the API shapes the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memories.longterm import admission, keyword
from memories.longterm.models import AdmissionRefusal, LongTermMemory, LongTermMemoryVersion
from memories.services import runonce
from memories.services.runonce import RunOnce
from memoryhub import cas, working_set
from memoryhub.actors import Actor
from memoryhub.addresses import UserAddress
from memoryhub.errors import NotFound, RejectedByPolicy

from .embedding_index import IndexInUse, index_in_use, lock_for_write
from .vectors import backend_named

PREFERENCES_VARIABLE = "preferences"


def preferences_scope(user: UserAddress) -> working_set.Scope:
    # User-scoped: a user's preferences are shared by all of their conversations.
    return user.scope(PREFERENCES_VARIABLE)


@dataclass(frozen=True)
class Proposal:
    """What the product asks to save; only `consent` from the product itself can authorise it."""

    content: object
    evidence: str
    source: str
    consent: object


def is_searchable(kind: str) -> bool:
    rules = admission.KINDS.get(kind)
    return bool(rules and rules.searchable)


def searchable_kinds() -> list[str]:
    return sorted(name for name, rules in admission.KINDS.items() if rules.searchable)


def embedding_text(content: object, evidence: str) -> str:
    """What a record's vector means: its own words (`text`), else the user's quote."""
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) and text.strip() else evidence


@dataclass(frozen=True)
class MemoryOutcome:
    """What a create or update did: the memory as written, whether it was created, whether this is a replay."""

    memory: LongTermMemory
    created: bool
    replayed: bool = False


# An operationId's stored result: the memory as it was written, so a replay answers exactly the same.
_SNAPSHOT = (
    "product_id",
    "user_id",
    "memory_id",
    "kind",
    "content",
    "evidence",
    "source",
    "version",
    "created_at",
    "updated_at",
)
RESULT = runonce.Codec[MemoryOutcome](
    encode=lambda outcome: {"created": outcome.created, "memory": runonce.snapshot(outcome.memory, _SNAPSHOT)},
    decode=lambda stored: MemoryOutcome(runonce.restore(LongTermMemory, stored["memory"]), stored["created"], True),
)


# ---------------------------------------------------------------------------------------------
# Admission
# ---------------------------------------------------------------------------------------------


def _admit(
    scope: UserAddress, kind: str, proposal: Proposal, *, actor: Actor, operation_id: str | None, memory_id: str = ""
) -> dict:
    """The normalised content, or a logged refusal raised as 422 `rejected_by_policy` with its reason code."""
    result = admission.admit(
        kind, consent=proposal.consent, source=proposal.source, evidence=proposal.evidence, content=proposal.content
    )
    if result.ok:
        assert result.normalized_content is not None  # admission normalises whatever it admits
        return result.normalized_content
    secret = result.code == admission.SECRET_DETECTED
    # Outside any transaction: the refusal is the outcome, and it must stay on record.
    AdmissionRefusal.objects.create(
        product=scope.product,
        user_id=scope.user_id,
        kind=str(kind)[:64],
        code=result.code or "",
        reason=result.reason or "",
        operation_id=operation_id or "",
        memory_id=memory_id,
        actor=str(actor)[:200],
        evidence="" if secret else proposal.evidence[:2000],
        content=None if secret else proposal.content,
    )
    raise RejectedByPolicy(f"not saved: {result.reason}", details={"reason": result.code})


def _vector_for(kind: str, content: dict, evidence: str) -> tuple[IndexInUse, list[float] | None]:
    in_use = index_in_use()  # 503 embedding_index_mismatch before any work
    vector = in_use.embed_one(embedding_text(content, evidence)) if is_searchable(kind) else None
    return in_use, vector


def _history(memory: LongTermMemory, action: str, actor: Actor, operation_id: str | None) -> None:
    LongTermMemoryVersion.objects.create(
        product_id=memory.product_id,
        user_id=memory.user_id,
        memory_id=memory.memory_id,
        version=memory.version,
        action=action,
        kind=memory.kind,
        content=memory.content,
        evidence=memory.evidence,
        source=memory.source,
        operation_id=operation_id or "",
        actor_type=actor.type,
        actor=actor.id[:200],
    )


# ---------------------------------------------------------------------------------------------
# Create
# ---------------------------------------------------------------------------------------------


def memory_create(
    *, scope: UserAddress, kind: str, proposal: Proposal, actor: Actor, operation: RunOnce | None = None
) -> MemoryOutcome:
    replay = runonce.replay(operation, RESULT)
    if replay:
        return replay
    op_id = operation.operation_id if operation else None
    content = _admit(scope, kind, proposal, actor=actor, operation_id=op_id)
    in_use, vector = _vector_for(kind, content, proposal.evidence)

    def write() -> MemoryOutcome:
        lock_for_write(in_use.index)
        memory = LongTermMemory.objects.create(
            product=scope.product,
            user_id=scope.user_id,
            kind=kind,
            content=content,
            evidence=proposal.evidence,
            source=proposal.source,
            version=1,
            search_text=keyword.index_text(content, proposal.evidence),
            embedding=vector if in_use.backend.stores_in_row else None,
            embedding_index=in_use.index,
        )
        in_use.backend.upsert(in_use.index, memory, vector)
        _history(memory, "created", actor, op_id)
        working_set.invalidate(preferences_scope(scope))  # in the transaction: a cache outage writes nothing
        return MemoryOutcome(memory, created=True)

    return runonce.commit(operation, write, RESULT)


# ---------------------------------------------------------------------------------------------
# Update (compare-and-set) and delete
# ---------------------------------------------------------------------------------------------


def _scoped(scope: UserAddress):
    return LongTermMemory.objects.filter(product=scope.product, user_id=scope.user_id)


def _existing(scope: UserAddress, memory_id: str) -> LongTermMemory:
    memory = _scoped(scope).filter(memory_id=memory_id).first()
    if memory is None:
        raise NotFound(f"no memory {memory_id!r} for this user")
    return memory


def _versioned(scope: UserAddress, memory_id: str, conflict_message: str | None = None) -> cas.Versioned:
    return cas.Versioned(
        LongTermMemory,
        {"product": scope.product, "user_id": scope.user_id, "memory_id": memory_id},
        kind="long_term_memory",
        field="version",
        conflict_message=conflict_message,
        missing_message=f"no memory {memory_id!r} for this user",
    )


def memory_update(
    *,
    scope: UserAddress,
    memory_id: str,
    expected_version: int,
    proposal: Proposal,
    actor: Actor,
    operation: RunOnce | None = None,
) -> MemoryOutcome:
    """Replace the content iff the stored version is `expected_version`; version + 1, re-embedded in one go."""
    replay = runonce.replay(operation, RESULT)
    if replay:
        return replay
    op_id = operation.operation_id if operation else None
    memory = _existing(scope, memory_id)  # a foreign id is a 404 before anything else
    content = _admit(scope, memory.kind, proposal, actor=actor, operation_id=op_id, memory_id=memory_id)
    in_use, vector = _vector_for(memory.kind, content, proposal.evidence)

    def write() -> MemoryOutcome:
        lock_for_write(in_use.index)
        changes = dict(
            content=content,
            evidence=proposal.evidence,
            source=proposal.source,
            updated_at=timezone.now(),
            search_text=keyword.index_text(content, proposal.evidence),
            embedding=vector if in_use.backend.stores_in_row else None,
            embedding_index=in_use.index,
        )

        def history(version: int) -> None:
            # The row is exactly what was read plus `changes`: the UPDATE matched the expected version,
            # and the rest of a memory (its kind, id, owner, creation time) never changes.
            for name, value in {**changes, "version": version}.items():
                setattr(memory, name, value)
            _history(memory, "updated", actor, op_id)

        cas.compare_and_set(
            _versioned(scope, memory_id, "the stored version is not {expected}; re-read and decide again"),
            expected_version,
            changes=changes,
            history=history,
            invalidate=[preferences_scope(scope)],
        )
        in_use.backend.upsert(in_use.index, memory, vector)
        return MemoryOutcome(memory, created=False)

    return runonce.commit(operation, write, RESULT)


def memory_delete(*, scope: UserAddress, memory_id: str, actor: Actor, expected_version: int | None = None) -> None:
    """Delete a memory (and its vector); with `expected_version`, only if it is still that version."""
    with transaction.atomic():
        # Locked: the history row then records exactly the state that is deleted.
        memory = _scoped(scope).select_for_update().filter(memory_id=memory_id).first()
        if memory is None:
            raise NotFound(f"no memory {memory_id!r} for this user")
        cas.compare_and_set(
            _versioned(scope, memory_id),
            memory.version if expected_version is None else expected_version,
            delete=True,
            history=lambda version: _history(memory, "deleted", actor, None),
            invalidate=[preferences_scope(scope)],
        )
        if memory.embedding_index is not None:
            backend_named(memory.embedding_index.backend).delete(memory.embedding_index, [memory.pk])
