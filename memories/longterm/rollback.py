"""A superseded turn's long-term memories taken back, and a selected turn's brought back (docs/roleplay.md).

A memory written with `turnId` records its turn (on the row and on its version rows, the supersessions it
caused included). When that turn is superseded, each of its memories is rolled back as a new version
(`rolled_back`, `rolled_back_at` set: kept, no longer searched, recalled or listed) and the memories it had
superseded become current again (`restored`); a select writes both back (`reapplied`, `superseded`). Each memory
is one compare-and-set on the version read under the row's lock; a memory written after the turn by anyone else
(an edit, a supersession by another memory) is a conflict, reported and left as it is (memoryhub.rollback).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.utils import timezone

from memories.models import Turn
from memories.services.events import event_emit_for_turn
from memoryhub import working_set
from memoryhub.actors import Actor
from memoryhub.addresses import UserAddress
from memoryhub.events import publish as publish_event
from memoryhub.rollback import REAPPLY, ROLLBACK, WRITE, Plan, Step, plan_redo, plan_undo

from .models import LongTermMemory, LongTermMemoryVersion, current
from .services.memories import _history, kind_scope
from .services.vectors import backend_named

KIND = "longterm"
_CAUSES = {"rolled_back": ROLLBACK, "reapplied": REAPPLY}
_CHANGED = "the memory changed after this turn's rollback"


def longterm_undo_turn(turn_pk: int, by_turn_pk: int | None) -> dict[str, Any] | None:
    """The supersede hook: roll the turn's live memories back (None when it wrote none)."""
    return _run(turn_pk, by_turn_pk, ROLLBACK)


def longterm_redo_turn(turn_pk: int, displaced_turn_pk: int | None) -> dict[str, Any] | None:
    """The reapply hook: bring the selected turn's rolled-back memories back (None when there are none)."""
    return _run(turn_pk, displaced_turn_pk, REAPPLY)


@dataclass
class _Report:
    done: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)


def _run(turn_pk: int, other_pk: int | None, cause: str) -> dict[str, Any] | None:
    turn = Turn.objects.select_related("product").filter(pk=turn_pk).first()
    if turn is None:
        return None
    rows = list(
        LongTermMemory.objects.select_for_update(of=("self",))
        .filter(product_id=turn.product_id, user_id=turn.user_id, turn_id=turn_pk)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .select_related("embedding_index")
        .defer("embedding", "search_text")
        .order_by("pk")
    )
    found = _Report()
    for memory in rows:
        _one(turn, memory, cause, found)
    if not found.done and not found.conflicts:
        return None
    if found.kinds:
        working_set.invalidate(*(kind_scope(UserAddress(turn.product, turn.user_id), k) for k in sorted(found.kinds)))
    status = "conflict" if found.conflicts else ("rolled_back" if cause == ROLLBACK else "reapplied")
    report: dict[str, Any] = {"status": status, "memories": found.done, "conflicts": found.conflicts}
    if found.done:
        _emit(turn, f"{KIND}.{'rolled_back' if cause == ROLLBACK else 'reapplied'}", found.done, other_pk, cause)
    if found.conflicts:
        _emit(turn, f"{KIND}.rollback_conflict", found.conflicts, other_pk, cause, action=cause)
    return report


def _history_of(memory: LongTermMemory) -> list[Step]:
    rows = LongTermMemoryVersion.objects.filter(product_id=memory.product_id, memory_id=memory.memory_id)
    return [
        Step(version, turn_id, _CAUSES.get(action, WRITE))
        for version, turn_id, action in rows.values_list("version", "turn_id", "action")
    ]


def _one(turn: Turn, memory: LongTermMemory, cause: str, found: _Report) -> None:
    history = _history_of(memory)
    if cause == ROLLBACK:
        plan = plan_undo(history, turn.pk, memory.version)
    else:
        plan = plan_redo(history, turn.pk, memory.version)
        if plan.status == "apply" and (memory.version != plan.revisions[0] or memory.rolled_back_at is None):
            plan = Plan("conflict", revisions=plan.revisions, current=memory.version, reason=_CHANGED)
    if plan.status == "nothing":
        return
    # What it superseded comes back with it (undo), or is superseded again (redo): all of them, or nothing.
    others, reason = _superseded_by(turn, memory, cause)
    if plan.status == "apply" and reason:
        plan = Plan("conflict", revisions=plan.revisions, current=memory.version, reason=reason)
    if plan.status == "conflict":
        found.conflicts.append(
            {"id": memory.memory_id, "currentVersion": memory.version, "reason": plan.reason or _CHANGED}
        )
        return
    action = "rolled_back" if cause == ROLLBACK else "reapplied"
    now = timezone.now()
    if not _bump(memory, {"rolled_back_at": now if cause == ROLLBACK else None}, turn, action):
        found.conflicts.append({"id": memory.memory_id, "currentVersion": memory.version, "reason": _CHANGED})
        return
    touched = []
    for other in others:
        changes: dict[str, Any] = (
            {"superseded_by": "", "superseded_at": None}
            if cause == ROLLBACK
            else {"superseded_by": memory.memory_id, "superseded_at": now}
        )
        if _bump(other, changes, turn, "restored" if cause == ROLLBACK else "superseded", by=memory.memory_id):
            touched.append(other.memory_id)
            found.kinds.add(other.kind)
    found.kinds.add(memory.kind)
    found.done.append(
        {
            "id": memory.memory_id,
            "kind": memory.kind,
            "version": memory.version,
            "restored" if cause == ROLLBACK else "superseded": touched,
        }
    )


def longterm_as_rolled_back(turn: Turn, kinds: list[str]) -> tuple[set[str], list[LongTermMemory]]:
    """What superseding `turn` will do to its memories of `kinds`, read without writing (a regeneration of its reply
    is prompted with that): the ids it rolls back, and the memories they superseded that come back current."""
    rows = LongTermMemory.objects.filter(
        current(timezone.now()), product_id=turn.product_id, user_id=turn.user_id, turn_id=turn.pk
    ).defer("embedding", "search_text")
    hidden: set[str] = set()
    restored: list[LongTermMemory] = []
    for memory in rows.order_by("pk"):
        if plan_undo(_history_of(memory), turn.pk, memory.version).status != "apply":
            continue  # written after the turn by someone else: the rollback leaves it (a conflict)
        others, reason = _superseded_by(turn, memory, ROLLBACK, lock=False)
        if reason:
            continue
        if memory.kind in kinds:
            hidden.add(memory.memory_id)
        restored += [other for other in others if other.kind in kinds and _unexpired(other)]
    return hidden, restored


def _unexpired(memory: LongTermMemory) -> bool:
    return memory.expires_at is None or memory.expires_at > timezone.now()


def _superseded_by(
    turn: Turn, memory: LongTermMemory, cause: str, *, lock: bool = True
) -> tuple[list[LongTermMemory], str]:
    """The memories whose newest version is this turn's supersession by `memory` (undo) or its restore (redo)."""
    rows_of_user = LongTermMemory.objects.select_for_update(of=("self",)) if lock else LongTermMemory.objects
    scoped = rows_of_user.filter(product_id=memory.product_id, user_id=memory.user_id)
    if cause == ROLLBACK:
        candidates = scoped.filter(superseded_by=memory.memory_id)
        wanted = "superseded"
    else:
        restored = LongTermMemoryVersion.objects.filter(
            product_id=memory.product_id, action="restored", turn_id=turn.pk, superseded_by=memory.memory_id
        ).values_list("memory_id", flat=True)
        candidates = scoped.filter(memory_id__in=list(restored))
        wanted = "restored"
    rows = list(candidates.select_related("embedding_index").defer("embedding", "search_text").order_by("pk"))
    mine = []
    for row in rows:
        newest = (
            LongTermMemoryVersion.objects.filter(product_id=row.product_id, memory_id=row.memory_id)
            .order_by("-version", "-id")
            .values_list("version", "action", "turn_id")
            .first()
        )
        if newest is None or newest[2] != turn.pk or newest[1] not in ("superseded", "restored"):
            if cause == ROLLBACK:
                return [], f"memory {row.memory_id!r}, which it superseded, was written after it"
            continue  # restored by another turn's rollback: not this one's to supersede again
        if newest[1] != wanted:
            continue
        if newest[0] != row.version or (cause == REAPPLY and (row.superseded_by or row.rolled_back_at)):
            return [], f"memory {row.memory_id!r}, which it superseded, changed after this turn's rollback"
        mine.append(row)
    return mine, ""


def _bump(memory: LongTermMemory, changes: dict[str, Any], turn: Turn, action: str, by: str = "") -> bool:
    """One compare-and-set write on the version read under the lock: version + 1 and its version row."""
    now = timezone.now()
    updated = LongTermMemory.objects.filter(pk=memory.pk, version=memory.version).update(
        **changes, version=memory.version + 1, updated_at=now
    )
    if not updated:
        return False
    for name, value in {**changes, "version": memory.version + 1, "updated_at": now}.items():
        setattr(memory, name, value)
    _history(memory, action, Actor("turn", str(turn.pk)), None, turn_id=turn.pk, superseded_by=by)
    _resync_vector(memory, action)
    return True


def _resync_vector(memory: LongTermMemory, action: str) -> None:
    """An external index (Qdrant) carries the version: rewrite its payload (a superseded memory keeps no vector
    there); in-row vectors stay in the row, and every search filters rolled-back and superseded rows out."""
    index = memory.embedding_index
    if index is None:
        return
    backend = backend_named(index.backend)
    if backend.stores_in_row:
        return
    vector = None if action == "superseded" else backend.vectors(index, [memory.pk]).get(memory.pk)
    backend.upsert(index, memory, vector)


def _emit(
    turn: Turn, type: str, memories: list[dict], other_pk: int | None, cause: str, action: str | None = None
) -> None:
    other = {"byTurnId" if cause == ROLLBACK else "displacedTurnId": other_pk}
    details: dict[str, Any] = {"memories": memories, **other, "round": turn.round}
    if action:
        details["action"] = action
    event_emit_for_turn(turn, type, details)
    # Ids, not contents, to webhooks: a conflict's reason stays on the conversation event.
    data = {"turnId": turn.pk, **details, "memories": [{k: v for k, v in m.items() if k != "reason"} for m in memories]}
    publish_event(turn.product, type, user=turn.user_id, conversation=turn.conversation_id, data=data)
