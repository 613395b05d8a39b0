"""Taking a superseded turn's writes back, and writing them again on a swipe back: the pure plan (no Django).

Every versioned artefact a turn writes (a memory table, the conversation state) keeps a linear history in which
each revision names the turn it concerns and its cause: `write` (the turn's own write, e.g. a <tableEdit> or a
candidate sent with `turnId`), `rollback` (the turn's writes undone) or `reapply` (written again by a select);
revisions of no turn (an operator's or API key's edit) have `turn_id` None. The app reads that history, asks for a
plan, and carries it out as one compare-and-set write: a new revision, never a deletion (docs/roleplay.md).

- Undo: the turn's live revisions (those after its last rollback) must be the newest ones and contiguous; then
  the content of the revision before the first of them comes back. A later revision by anyone else (a manual
  edit, another turn) is a conflict: reported, never forced.
- Redo: the turn's newest revision must be its rollback; the app then checks that the artefact still holds what
  that rollback left (content equality: the displaced branch's writes were undone first) and writes back the
  content of the revision before the rollback.
"""

from __future__ import annotations

from dataclasses import dataclass

WRITE, ROLLBACK, REAPPLY = "write", "rollback", "reapply"


@dataclass(frozen=True)
class Step:
    revision: int
    turn_id: int | None
    cause: str  # WRITE | ROLLBACK | REAPPLY (anything else counts as a write by nobody's turn)


@dataclass(frozen=True)
class Plan:
    status: str  # "nothing" | "apply" | "conflict"
    restore: int | None = None  # the revision whose content comes back
    revisions: tuple[int, ...] = ()  # the turn's revisions undone, or the rollback being reversed
    current: int | None = None
    reason: str = ""


NOTHING = Plan("nothing")


def plan_undo(history: list[Step], turn_id: int, current: int) -> Plan:
    """How to take `turn_id`'s live revisions back when the artefact is at revision `current`."""
    ordered = sorted(history, key=lambda s: s.revision)
    last_rollback = max((s.revision for s in ordered if s.turn_id == turn_id and s.cause == ROLLBACK), default=0)
    live = [s.revision for s in ordered if s.turn_id == turn_id and s.cause != ROLLBACK and s.revision > last_rollback]
    if not live:
        return NOTHING
    first, last = live[0], live[-1]
    later = [s for s in ordered if first <= s.revision <= current and s.turn_id != turn_id]
    if current != last or later:
        reason = "the artefact was written after this turn's write" + (
            f" (revision {later[0].revision}{' by turn ' + str(later[0].turn_id) if later[0].turn_id else ''})"
            if later
            else f" (it is at revision {current})"
        )
        return Plan("conflict", revisions=tuple(live), current=current, reason=reason)
    return Plan("apply", restore=first - 1, revisions=tuple(live), current=current)


def plan_redo(history: list[Step], turn_id: int, current: int) -> Plan:
    """How to write `turn_id`'s undone revisions again: the content before its newest rollback."""
    mine = [s for s in sorted(history, key=lambda s: s.revision) if s.turn_id == turn_id]
    if not mine or mine[-1].cause != ROLLBACK:
        return NOTHING
    rollback = mine[-1].revision
    return Plan("apply", restore=rollback - 1, revisions=(rollback,), current=current)
