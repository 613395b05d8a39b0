"""Long-term memories: admitted writes, compare-and-set updates, deletes (SPEC L1–L4, C2).

Every write: admission first (a refusal is logged and nothing else happens), then the embedding
(outside the transaction — it may be a remote call), then one transaction with the row, its vector,
its history, the operation record and the working-set invalidation. An embedder that is down, or an
index built for another embedding identity, fails the write before anything is written.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memories.longterm import admission, keyword
from memoryhub.actors import Actor
from memories.models import Product
from memories.longterm.models import AdmissionRefusal, LongTermMemory, LongTermMemoryVersion
from memoryhub import working_set
from memoryhub.addresses import UserAddress
from memoryhub.errors import NotFound, RejectedByPolicy, RevisionConflict

from .embedding_index import IndexInUse, index_in_use, lock_for_write
from memories.services.operations import Operation, Outcome, operation_commit, operation_replay
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


def memory_to_dict(memory: LongTermMemory) -> dict:
    from memoryhub.timefmt import iso

    return {
        "id": memory.memory_id, "key": memory.key, "kind": memory.kind, "content": memory.content,
        "evidence": memory.evidence, "source": memory.source, "version": memory.version,
        "createdAt": iso(memory.created_at), "updatedAt": iso(memory.updated_at),
    }


# ---------------------------------------------------------------------------------------------
# Admission
# ---------------------------------------------------------------------------------------------


def _admit(scope: UserAddress, kind: str, proposal: Proposal, *, actor: Actor, operation_id: str | None,
           memory_id: str = "") -> dict:
    """The normalised content, or a logged refusal raised as 422 `rejected_by_policy` with its reason code."""
    result = admission.admit(kind, consent=proposal.consent, source=proposal.source,
                             evidence=proposal.evidence, content=proposal.content)
    if result.ok:
        return result.normalized_content
    secret = result.code == admission.SECRET_DETECTED
    # Outside any transaction: the refusal is the outcome, and it must stay on record.
    AdmissionRefusal.objects.create(
        product=scope.product, user_id=scope.user_id, kind=str(kind)[:64], code=result.code, reason=result.reason,
        operation_id=operation_id or "", memory_id=memory_id, actor=str(actor)[:200],
        evidence="" if secret else proposal.evidence[:2000], content=None if secret else proposal.content,
    )
    raise RejectedByPolicy(f"not saved: {result.reason}", details={"reason": result.code})


def _vector_for(kind: str, content: dict, evidence: str) -> tuple[IndexInUse, list[float] | None]:
    in_use = index_in_use()  # 503 embedding_index_mismatch before any work
    vector = in_use.embed_one(embedding_text(content, evidence)) if is_searchable(kind) else None
    return in_use, vector


def _history(memory: LongTermMemory, action: str, actor: Actor, operation_id: str | None) -> None:
    LongTermMemoryVersion.objects.create(
        product_id=memory.product_id, user_id=memory.user_id, memory_id=memory.memory_id, version=memory.version,
        action=action, kind=memory.kind, content=memory.content, evidence=memory.evidence, source=memory.source,
        operation_id=operation_id or "", actor_type=actor.type, actor=actor.id[:200],
    )


# ---------------------------------------------------------------------------------------------
# Create
# ---------------------------------------------------------------------------------------------


def memory_create(*, scope: UserAddress, kind: str, proposal: Proposal, actor: Actor,
                  operation: Operation | None = None) -> Outcome:
    replay = operation_replay(operation)
    if replay:
        return replay
    op_id = operation.operation_id if operation else None
    content = _admit(scope, kind, proposal, actor=actor, operation_id=op_id)
    in_use, vector = _vector_for(kind, content, proposal.evidence)

    def write() -> tuple[int, dict]:
        lock_for_write(in_use.index)
        memory = LongTermMemory.objects.create(
            product=scope.product, user_id=scope.user_id, kind=kind, content=content, evidence=proposal.evidence,
            source=proposal.source, version=1, search_text=keyword.index_text(content, proposal.evidence),
            embedding=vector if in_use.backend.stores_in_row else None, embedding_index=in_use.index,
        )
        in_use.backend.upsert(in_use.index, memory, vector)
        _history(memory, "created", actor, op_id)
        working_set.invalidate(preferences_scope(scope))  # in the transaction: a cache outage writes nothing
        return 201, memory_to_dict(memory)

    return operation_commit(operation, write)


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


def memory_update(*, scope: UserAddress, memory_id: str, expected_version: int, proposal: Proposal, actor: Actor,
                  operation: Operation | None = None) -> Outcome:
    """Replace the content iff the stored version is `expected_version`; version + 1, re-embedded in one go."""
    replay = operation_replay(operation)
    if replay:
        return replay
    op_id = operation.operation_id if operation else None
    kind = _existing(scope, memory_id).kind  # kinds never change; a foreign id is a 404 before anything else
    content = _admit(scope, kind, proposal, actor=actor, operation_id=op_id, memory_id=memory_id)
    in_use, vector = _vector_for(kind, content, proposal.evidence)

    def write() -> tuple[int, dict]:
        lock_for_write(in_use.index)
        updated = _scoped(scope).filter(memory_id=memory_id, version=expected_version).update(
            content=content, evidence=proposal.evidence, source=proposal.source, version=F("version") + 1,
            search_text=keyword.index_text(content, proposal.evidence), updated_at=timezone.now(),
            embedding=vector if in_use.backend.stores_in_row else None, embedding_index=in_use.index,
        )
        if not updated:
            raise RevisionConflict(_existing(scope, memory_id).version, versioned=True,
                                   message=f"the stored version is not {expected_version}; re-read and decide again")
        memory = _existing(scope, memory_id)
        in_use.backend.upsert(in_use.index, memory, vector)
        _history(memory, "updated", actor, op_id)
        working_set.invalidate(preferences_scope(scope))
        return 200, memory_to_dict(memory)

    return operation_commit(operation, write)


def memory_delete(*, scope: UserAddress, memory_id: str, actor: Actor, expected_version: int | None = None) -> None:
    """Delete a memory (and its vector); with `expected_version`, only if it is still that version."""
    with transaction.atomic():
        memory = _scoped(scope).select_for_update().filter(memory_id=memory_id).first()
        if memory is None:
            raise NotFound(f"no memory {memory_id!r} for this user")
        if expected_version is not None and memory.version != expected_version:
            raise RevisionConflict(memory.version, versioned=True)
        if memory.embedding_index is not None:
            backend_named(memory.embedding_index.backend).delete(memory.embedding_index, [memory.pk])
        _history(memory, "deleted", actor, None)
        memory.delete()
        working_set.invalidate(preferences_scope(scope))
