"""A committed turn's `memoryWrite`: `pending` while its background work runs, then `done` or `failed`.

The commit (``turn_commit``, and the Hinos server's stored turn) runs the registered commit hooks; each hook
that scheduled memory work for the turn is named in ``memoryWrite.work`` as ``"pending"``. The work itself
(a job of memoryhub/turn_jobs.py, whose reporter memories points here) reports its end with
:func:`memory_write_finish` — on success, and on its final failure (never on an attempt that will be retried).
When every named work has reported, the status becomes ``done``, or ``failed`` with the reasons of the works
that failed. The contract is written down in docs/contract.md ("Turns: memoryWrite").
"""

from __future__ import annotations

from django.db import transaction

from memories.models import Turn
from memories.services.events import event_emit_for_turn
from memoryhub.runtimes.base import MemoryWrite

PENDING, DONE, FAILED = "pending", "done", "failed"
FINISHED_EVENT = "turn.memory_write"


def memory_write_after_commit(scheduled: list[str], runtime_write: MemoryWrite | None = None) -> dict:
    """The memoryWrite stored at commit: the runtime's own answer, else pending on the scheduled work."""
    if runtime_write is not None:
        return runtime_write.as_dict()
    if not scheduled:
        return MemoryWrite("skipped", "no background work").as_dict()
    return {"status": PENDING, "work": dict.fromkeys(scheduled, PENDING)}


def memory_write_finish(*, turn_pk: int, work: str, failure: str | None = None) -> dict | None:
    """Record that one scheduled work ended (``failure`` None: it succeeded); return the new memoryWrite.

    Idempotent: a work that already reported, a work the turn never scheduled, or a turn whose
    memoryWrite is no longer pending (or that is gone) changes nothing and returns None. The turn row is
    locked, so two works finishing at the same time both count.
    """
    with transaction.atomic():
        # The turn row only (not the joined product: FOR UPDATE on it would block every insert under the product),
        # FOR NO KEY UPDATE: inserts referencing the turn (FK checks take KEY SHARE) do not wait (docs/production.md).
        turn = (
            Turn.objects.select_for_update(of=("self",), no_key=True)
            .select_related("product")
            .filter(pk=turn_pk)
            .first()
        )
        if turn is None:
            return None
        write = dict(turn.memory_write or {})
        works = dict(write.get("work") or {})
        if write.get("status") != PENDING or works.get(work) != PENDING:
            return None
        works[work] = DONE if failure is None else FAILED
        write["work"] = works
        if failure is not None:
            write["reason"] = "; ".join(filter(None, [write.get("reason"), f"{work}: {failure}"]))
        if PENDING not in works.values():
            write["status"] = FAILED if FAILED in works.values() else DONE
        Turn.objects.filter(pk=turn_pk).update(memory_write=write)
        if write["status"] != PENDING:
            event_emit_for_turn(turn, FINISHED_EVENT, {"round": turn.round, "memoryWrite": write})
    return write
