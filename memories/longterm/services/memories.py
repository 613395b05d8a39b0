"""Long-term memories: admitted writes, compare-and-set updates, deletes (docs/long-term-memories.md).

Every write: admission first (a refusal is logged and nothing else happens), then the embedding
(outside the transaction — it may be a remote call), then one transaction with the row, its vector,
its history, the operationId's run-once record and the working-set invalidation. An embedder that is
down, or an index built for another embedding identity, fails the write before anything is written.
Updates and deletes are compare-and-set writes on `version` through memoryhub.cas. Writes return
MemoryOutcome (the memory, whether it was created, whether it is a replay); the API shapes the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memories.longterm import admission, keyword, kinds
from memories.longterm.kinds import KindSpec
from memories.longterm.models import AdmissionRefusal, LongTermMemory, LongTermMemoryVersion, current, unexpired
from memories.longterm.selectors import kind_spec
from memories.models import Turn
from memories.services import runonce
from memories.services.runonce import RunOnce
from memoryhub import cas, working_set
from memoryhub.actors import Actor
from memoryhub.addresses import UserAddress
from memoryhub.errors import Conflict, InvalidRequest, NotFound, RejectedByPolicy
from memoryhub.events import publish as publish_event

from .embedding_index import IndexInUse, index_in_use, lock_for_write
from .vectors import backend_named

PREFERENCES_VARIABLE = "preferences"


def kind_scope(user: UserAddress, kind: str) -> working_set.Scope:
    """The working-set entry of one user's current memories of one kind (`preference`: "preferences")."""
    return user.scope(PREFERENCES_VARIABLE if kind == "preference" else f"kind:{kind}")


def preferences_scope(user: UserAddress) -> working_set.Scope:
    # User-scoped: a user's preferences are shared by all of their conversations.
    return kind_scope(user, "preference")


@dataclass(frozen=True)
class Proposal:
    """What the product asks to save; only `consent` from the product itself can authorise it.

    `expires_at` applies when `set_expiry` is true (a request that names `expiresAt`, possibly null);
    otherwise a new memory takes its kind's `defaultTtlDays` and an update keeps its expiry.
    """

    content: object
    evidence: str
    source: str
    consent: object
    expires_at: datetime | None = None
    set_expiry: bool = False


def embedding_text(content: object, evidence: str, text_field: str = "text") -> str:
    """What a record's vector means: its own words (the kind's text field), else the user's quote."""
    text = content.get(text_field or "text") if isinstance(content, dict) else None
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
    "expires_at",
    "superseded_by",
    "superseded_at",
    "turn_id",
    "rolled_back_at",
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


class LimitReached(RejectedByPolicy):
    """A kind's maxPerUser current memories are stored already (422 `max_per_user_reached`)."""

    code = "max_per_user_reached"


class MemorySuperseded(Conflict):
    """A superseded memory is history: it is not changed any more (409 `memory_superseded`)."""

    code = "memory_superseded"


class MemoryRolledBack(Conflict):
    """A memory rolled back with its turn is history until a select brings it back (409 `memory_rolled_back`)."""

    code = "memory_rolled_back"


def _log_refusal(
    scope: UserAddress,
    kind: str,
    proposal: Proposal,
    *,
    code: str,
    reason: str,
    actor: Actor,
    operation_id: str | None,
    memory_id: str,
    decision: dict | None,
) -> None:
    secret = code == admission.SECRET_DETECTED
    # Outside any transaction: the refusal is the outcome, and it must stay on record.
    AdmissionRefusal.objects.create(
        product=scope.product,
        user_id=scope.user_id,
        kind=str(kind)[:64],
        code=code,
        reason=reason,
        operation_id=operation_id or "",
        memory_id=memory_id,
        actor=str(actor)[:200],
        evidence="" if secret else proposal.evidence[:2000],
        content=None if secret else proposal.content,
        decision=decision,
    )


@dataclass(frozen=True)
class Admitted:
    content: dict
    decision: dict | None  # how admission decided (rules, judge), kept with the version row


def _admit(
    scope: UserAddress,
    kind: str,
    spec: KindSpec | None,
    proposal: Proposal,
    *,
    actor: Actor,
    operation_id: str | None,
    memory_id: str = "",
) -> Admitted:
    """The normalised content, or a logged refusal raised as 422 `rejected_by_policy` with its reason code.

    Built-in kinds go through their admission rules; a product's kind through the generic checks, its
    schema and its stated fields (kinds.admit_product_kind), whose refusals name the failing `path`.
    """
    path: str | None = None
    if spec is None or spec.builtin:
        result = admission.admit(
            kind, consent=proposal.consent, source=proposal.source, evidence=proposal.evidence, content=proposal.content
        )
        decision = result.decision
        if result.ok:
            assert result.normalized_content is not None  # admission normalises whatever it admits
            return Admitted(result.normalized_content, decision)
        code, reason, path = result.code or "", result.reason or "", result.path
        cause = result.cause
    else:
        verdict = kinds.admit_product_kind(
            spec, consent=proposal.consent, source=proposal.source, evidence=proposal.evidence, content=proposal.content
        )
        decision = verdict.decision
        if verdict.ok:
            assert verdict.content is not None
            return Admitted(verdict.content, decision)
        code, reason, path = verdict.code or "", verdict.reason or "", verdict.path
        cause = verdict.cause
    _log_refusal(
        scope,
        kind,
        proposal,
        code=code,
        reason=reason,
        actor=actor,
        operation_id=operation_id,
        memory_id=memory_id,
        decision=decision,
    )
    # details.reason: the named reason of a not_durable_preference refusal ("hedge", …), else the code
    details = {"reason": cause or code, **({"code": code} if cause else {}), **({"path": path} if path else {})}
    raise RejectedByPolicy(f"not saved: {reason}", details=details)


def _vector_for(spec: KindSpec | None, content: dict, evidence: str) -> tuple[IndexInUse, list[float] | None]:
    in_use = index_in_use()  # 503 embedding_index_mismatch before any work
    searchable = spec is not None and spec.searchable
    vector = in_use.embed_one(embedding_text(content, evidence, spec.text_field)) if spec and searchable else None
    return in_use, vector


def _expiry(spec: KindSpec | None, proposal: Proposal, now: datetime) -> datetime | None:
    if proposal.set_expiry:
        if proposal.expires_at is not None and proposal.expires_at <= now:
            raise InvalidRequest("expiresAt must be in the future", details={"field": "expiresAt"})
        return proposal.expires_at
    if spec is not None and spec.default_ttl_days:
        return now + timedelta(days=spec.default_ttl_days)
    return None


def _history(
    memory: LongTermMemory,
    action: str,
    actor: Actor,
    operation_id: str | None,
    decision: dict | None = None,
    turn_id: int | None = None,
    superseded_by: str = "",
) -> None:
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
        decision=decision,
        turn_id=turn_id,
        superseded_by=superseded_by,
    )
    if action in ("created", "updated", "deleted"):
        data = {"memoryId": memory.memory_id, "kind": memory.kind, "version": memory.version}
        publish_event(memory.product_id, f"longterm.{action}", user=memory.user_id, data=data)


# ---------------------------------------------------------------------------------------------
# Supersession and limits: one current answer per single-valued field
# ---------------------------------------------------------------------------------------------


def _lock_user_kind(scope: UserAddress, kind: str) -> None:
    """Serialise the writes of one user's memories of one kind until commit (PostgreSQL advisory lock).

    Two concurrent writes then cannot both miss each other: the second sees the first's row and
    supersedes it (or counts it against maxPerUser). SQLite serialises writers by itself.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        key = f"longterm:{scope.product.pk}:{scope.user_id}:{kind}"
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def _current_rows(scope: UserAddress, kind: str, now: datetime, *, exclude_pk: int | None = None):
    rows = _scoped(scope).filter(current(now), kind=kind).select_related("embedding_index")
    return rows.exclude(pk=exclude_pk) if exclude_pk is not None else rows


def _guard(scope: UserAddress, spec: KindSpec | None, kind: str, content: dict, now: datetime, *, exclude_pk=None):
    """Under the lock: the current memories the new content contradicts, after checking maxPerUser."""
    if spec is None or not (spec.single_valued or spec.max_per_user):
        return []
    _lock_user_kind(scope, kind)
    rows = list(_current_rows(scope, kind, now, exclude_pk=exclude_pk).defer("embedding", "search_text"))
    contradicted = [
        row
        for row in rows
        if isinstance(row.content, dict) and kinds.contradicts(row.content, content, spec.single_valued)
    ]
    if exclude_pk is None and spec.max_per_user and len(rows) - len(contradicted) >= spec.max_per_user:
        raise LimitReached(
            f"this user already has {spec.max_per_user} current {kind!r} memories (maxPerUser)",
            details={"kind": kind, "maxPerUser": spec.max_per_user},
        )
    return contradicted


def _supersede(rows: list[LongTermMemory], by: LongTermMemory, actor: Actor, operation_id: str | None) -> None:
    """Mark each row superseded by `by`: version + 1, its vector dropped (never a search hit), history kept.

    A memory written for a turn may be rolled back, making what it superseded current again: then an in-row
    vector is kept (every search filters superseded rows out) so that the restored memory is found again.
    """
    now = timezone.now()
    keep_vector = {} if by.turn_id is not None else {"embedding": None}
    for old in rows:
        updated = (
            _scoped_all(old)
            .filter(pk=old.pk, version=old.version, superseded_by="", rolled_back_at__isnull=True)
            .update(
                superseded_by=by.memory_id, superseded_at=now, updated_at=now, version=old.version + 1, **keep_vector
            )
        )
        if not updated:  # deleted or changed meanwhile: nothing current left to supersede
            continue
        old.superseded_by, old.superseded_at, old.updated_at, old.version = by.memory_id, now, now, old.version + 1
        _history(old, "superseded", actor, operation_id, turn_id=by.turn_id, superseded_by=by.memory_id)
        if old.embedding_index is not None:
            backend = backend_named(old.embedding_index.backend)
            if not backend.stores_in_row:
                backend.upsert(old.embedding_index, old, None)  # the payload stays, the vector goes


def _scoped_all(memory: LongTermMemory):
    return LongTermMemory.objects.filter(product_id=memory.product_id, user_id=memory.user_id)


# ---------------------------------------------------------------------------------------------
# Create
# ---------------------------------------------------------------------------------------------


class UnknownTurn(RejectedByPolicy):
    """A `turnId` that is not a turn of this user's (422 `unknown_turn`, `details.path: "turnId"`)."""

    code = "unknown_turn"


def _superseded(turn_id: int) -> Conflict:
    return Conflict(
        f"turn {turn_id} was superseded; derive the memory from the current reply",
        code="turn_superseded",
        details={"turnId": turn_id},
    )


def _memory_turn(scope: UserAddress, turn_id: int | None) -> int | None:
    """The turn a memory is written for: one of this user's turns (any conversation), not superseded."""
    if turn_id is None:
        return None
    status = (
        Turn.objects.filter(pk=turn_id, product=scope.product, user_id=scope.user_id)
        .values_list("status", flat=True)
        .first()
    )
    if status is None:
        raise UnknownTurn(f"turnId: no turn {turn_id} of this user", details={"path": "turnId", "turnId": turn_id})
    if status == "superseded":
        raise _superseded(turn_id)
    return turn_id


def _lock_turn(turn_id: int | None) -> None:
    """Locked: a supersede running now finishes first, and then this write is refused (or it is rolled back)."""
    if turn_id is None:
        return
    status = Turn.objects.select_for_update(no_key=True).filter(pk=turn_id).values_list("status", flat=True).first()
    if status == "superseded":
        raise _superseded(turn_id)


def memory_create(
    *,
    scope: UserAddress,
    kind: str,
    proposal: Proposal,
    actor: Actor,
    operation: RunOnce | None = None,
    turn_id: int | None = None,
) -> MemoryOutcome:
    replay = runonce.replay(operation, RESULT)
    if replay:
        return replay
    op_id = operation.operation_id if operation else None
    turn_id = _memory_turn(scope, turn_id)
    spec = kind_spec(scope.product, kind) if isinstance(kind, str) else None
    admitted = _admit(scope, kind, spec, proposal, actor=actor, operation_id=op_id)
    content = admitted.content
    _expiry(spec, proposal, timezone.now())  # an expiresAt in the past is refused before any work

    in_use, vector = _vector_for(spec, content, proposal.evidence)

    def write() -> MemoryOutcome:
        _lock_turn(turn_id)
        lock_for_write(in_use.index)
        contradicted = _guard(scope, spec, kind, content, timezone.now())
        expires_at = _expiry(spec, proposal, timezone.now())  # a kind's lifetime counts from the write
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
            expires_at=expires_at,
            turn_id=turn_id,
        )
        in_use.backend.upsert(in_use.index, memory, vector)
        _history(memory, "created", actor, op_id, admitted.decision, turn_id=turn_id)
        _supersede(contradicted, memory, actor, op_id)
        working_set.invalidate(kind_scope(scope, kind))  # in the transaction: a cache outage writes nothing
        return MemoryOutcome(memory, created=True)

    return runonce.commit(operation, write, RESULT)


# ---------------------------------------------------------------------------------------------
# Update (compare-and-set) and delete
# ---------------------------------------------------------------------------------------------


def _scoped(scope: UserAddress):
    return LongTermMemory.objects.filter(product=scope.product, user_id=scope.user_id)


def _existing(scope: UserAddress, memory_id: str) -> LongTermMemory:
    memory = _scoped(scope).filter(unexpired(timezone.now()), memory_id=memory_id).first()
    if memory is None:
        raise NotFound(f"no memory {memory_id!r} for this user")
    if memory.superseded_by:
        raise MemorySuperseded(
            f"memory {memory_id!r} was superseded by {memory.superseded_by!r}; it is kept as history",
            details={"supersededBy": memory.superseded_by},
        )
    if memory.rolled_back_at is not None:
        raise MemoryRolledBack(
            f"memory {memory_id!r} was rolled back with its turn {memory.turn_id}; it is kept as history",
            details={"turnId": memory.turn_id},
        )
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
    spec = kind_spec(scope.product, memory.kind)
    admitted = _admit(scope, memory.kind, spec, proposal, actor=actor, operation_id=op_id, memory_id=memory_id)
    content = admitted.content
    expires_at = _expiry(spec, proposal, timezone.now()) if proposal.set_expiry else memory.expires_at
    in_use, vector = _vector_for(spec, content, proposal.evidence)

    def write() -> MemoryOutcome:
        lock_for_write(in_use.index)
        contradicted = _guard(scope, spec, memory.kind, content, timezone.now(), exclude_pk=memory.pk)
        changes = dict(
            content=content,
            evidence=proposal.evidence,
            source=proposal.source,
            updated_at=timezone.now(),
            search_text=keyword.index_text(content, proposal.evidence),
            embedding=vector if in_use.backend.stores_in_row else None,
            embedding_index=in_use.index,
            expires_at=expires_at,
        )

        def history(version: int) -> None:
            # The row is exactly what was read plus `changes`: the UPDATE matched the expected version,
            # and the rest of a memory (its kind, id, owner, creation time) never changes.
            for name, value in {**changes, "version": version}.items():
                setattr(memory, name, value)
            _history(memory, "updated", actor, op_id, admitted.decision)

        cas.compare_and_set(
            _versioned(scope, memory_id, "the stored version is not {expected}; re-read and decide again"),
            expected_version,
            changes=changes,
            history=history,
            invalidate=[kind_scope(scope, memory.kind)],
        )
        in_use.backend.upsert(in_use.index, memory, vector)
        _supersede(contradicted, memory, actor, op_id)
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
            invalidate=[kind_scope(scope, memory.kind)],
        )
        if memory.embedding_index is not None:
            backend_named(memory.embedding_index.backend).delete(memory.embedding_index, [memory.pk])


# ---------------------------------------------------------------------------------------------
# Expiry: rows whose time has come are deleted with their vectors and versions
# ---------------------------------------------------------------------------------------------


def memories_expired_delete(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Delete up to `batch_size` expired memories (rows, vectors, versions); return how many went.

    Reads already ignore them (query-time filtering); this frees the storage. Safe to run anywhere at
    any time: each batch is one transaction, and a row that is no longer expired is kept.
    """
    now = now or timezone.now()
    with transaction.atomic():
        rows = list(
            LongTermMemory.objects.select_for_update(skip_locked=connection.vendor == "postgresql", of=("self",))
            .filter(expires_at__isnull=False, expires_at__lte=now)
            .select_related("product", "embedding_index")
            .defer("embedding", "search_text")
            .order_by("expires_at", "pk")[:batch_size]
        )
        if not rows:
            return 0
        scopes = {kind_scope(UserAddress(row.product, row.user_id), row.kind) for row in rows}
        working_set.invalidate(*scopes)
        by_index: dict[int, tuple[object, list[int]]] = {}
        for row in rows:
            if row.embedding_index is not None:
                by_index.setdefault(row.embedding_index.pk, (row.embedding_index, []))[1].append(row.pk)
        for index, pks in by_index.values():
            backend = backend_named(index.backend)  # type: ignore[attr-defined]
            if not backend.stores_in_row:
                backend.delete(index, pks)  # type: ignore[arg-type]
        for row in rows:
            LongTermMemoryVersion.objects.filter(product_id=row.product_id, memory_id=row.memory_id).delete()
        LongTermMemory.objects.filter(pk__in=[row.pk for row in rows]).delete()
    return len(rows)
