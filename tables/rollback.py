"""A superseded turn's table edits taken back, and a selected turn's written again (docs/roleplay.md).

Every table version a turn's `<tableEdit>` wrote names the turn. When the turn is superseded, each table it wrote
returns to the rows before the turn's first live version, as a new version (`cause: rollback`, compare-and-set
on the version read under the row's lock). A table written after the turn by anyone else (an operator, an API
key, a later turn) is left as it is and reported as a conflict. A select writes the turn's rows back
(`cause: reapply`) on the tables that still hold what its rollback left.
"""

from __future__ import annotations

from typing import Any

from memories.models import Turn
from memories.services.events import event_emit_for_turn
from memoryhub.events import publish as publish_event
from memoryhub.rollback import REAPPLY, ROLLBACK, WRITE, Plan, Step, plan_redo, plan_undo
from tables.models import MemoryTable, MemoryTableVersion
from tables.selectors import conversation_tables, table_rows_at
from tables.services import WriteCause, table_replace, turn_address
from tables.turn_edits import turn_table_edits_apply_late

_CAUSES = {"turn": WRITE, "rollback": ROLLBACK, "reapply": REAPPLY}
CHANGED = "the table changed after this turn's rollback"


def table_edits_undo(turn_pk: int, by_turn_pk: int | None) -> dict[str, Any] | None:
    """The supersede hook: every table the turn wrote back to its rows before the turn (None: it wrote none)."""
    return _run(turn_pk, by_turn_pk, ROLLBACK)


def table_edits_redo(turn_pk: int, displaced_turn_pk: int | None) -> dict[str, Any] | None:
    """The reapply hook: the selected turn's rows written again (None: none of its edits was rolled back).

    A reply superseded before its job applied its `<tableEdit>` has nothing to write again: its edits are
    applied now, on the tables as they are (tables/turn_edits.py), reported as `appliedLate`."""
    report = _run(turn_pk, displaced_turn_pk, REAPPLY)
    if report is not None:
        return report
    turn = Turn.objects.select_related("product", "scenario").filter(pk=turn_pk).first()
    record = turn_table_edits_apply_late(turn=turn) if turn is not None else None
    if record is None:
        return None
    conflict = record.outcome == "conflict"
    return {
        "status": "conflict" if conflict else "reapplied" if record.outcome == "updated" else "unchanged",
        "tables": [] if conflict else record.tables,
        "conflicts": record.tables if conflict else [],
        "appliedLate": {"outcome": record.outcome, "applied": len(record.applied)},
    }


def _run(turn_pk: int, other_pk: int | None, cause: str) -> dict[str, Any] | None:
    turn = Turn.objects.select_related("product").filter(pk=turn_pk).first()
    if turn is None:
        return None
    touched = MemoryTableVersion.objects.filter(turn_id=turn_pk).values_list("table_id", flat=True)
    tables = list(
        conversation_tables(turn_address(turn)).filter(pk__in=touched).select_for_update().order_by("position", "pk")
    )
    written, conflicts = [], []
    for table in tables:
        plan = _plan(table, turn_pk, cause)
        if plan.status == "apply":
            written.append(_write(table, turn, other_pk, cause, plan))
        elif plan.status == "conflict":
            conflicts.append(
                {"id": table.pk, "name": table.name, "currentVersion": table.version, "reason": plan.reason}
            )
    if not written and not conflicts:
        return None
    done = "rolled_back" if cause == ROLLBACK else "reapplied"
    report = {"status": "conflict" if conflicts else done, "tables": written, "conflicts": conflicts}
    _emit(turn, other_pk, cause, report, done)
    return report


def _plan(table: MemoryTable, turn_pk: int, cause: str) -> Plan:
    history = [
        Step(version, turn_id if kind in _CAUSES else None, _CAUSES.get(kind, WRITE))
        for version, turn_id, kind in MemoryTableVersion.objects.filter(table=table).values_list(
            "version", "turn_id", "cause"
        )
    ]
    if cause == ROLLBACK:
        return plan_undo(history, turn_pk, table.version)
    plan = plan_redo(history, turn_pk, table.version)
    if plan.status == "apply" and table.rows != table_rows_at(table, plan.revisions[0]):
        return Plan("conflict", revisions=plan.revisions, current=table.version, reason=CHANGED)
    return plan


def _write(table: MemoryTable, turn: Turn, other_pk: int | None, cause: str, plan: Plan) -> dict[str, Any]:
    assert plan.restore is not None
    rows = table_rows_at(table, plan.restore)
    actor = f"turn:{other_pk}" if other_pk else "delete"
    outcome = table_replace(
        table=table, expected_version=table.version, rows=rows, cause=WriteCause(cause, actor, turn)
    )
    return {
        "id": table.pk,
        "name": table.name,
        "fromVersion": table.version,
        "version": outcome.version,
        "restoredFrom": plan.restore,
    }


def _emit(turn: Turn, other_pk: int | None, cause: str, report: dict[str, Any], done: str) -> None:
    other = {"byTurnId" if cause == ROLLBACK else "displacedTurnId": other_pk}
    base = {**other, "action": cause, "round": turn.round}
    where = {"user": turn.user_id, "conversation": turn.conversation_id}
    if report["tables"]:
        event_emit_for_turn(turn, f"table.{done}", {**base, "tables": report["tables"]})
        publish_event(
            turn.product, f"table.{done}", **where, data={"turnId": turn.pk, **base, "tables": report["tables"]}
        )
    if report["conflicts"]:
        event_emit_for_turn(turn, "table.rollback_conflict", {**base, "conflicts": report["conflicts"]})
        data = {
            "turnId": turn.pk,
            **base,
            "tables": [{k: c[k] for k in ("id", "name", "currentVersion")} for c in report["conflicts"]],
        }
        publish_event(turn.product, "table.rollback_conflict", **where, data=data)
