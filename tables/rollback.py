"""A superseded turn's table edits taken back, and a selected turn's written again (docs/roleplay.md).

Every table version a turn's `<tableEdit>` wrote names the turn. When the turn is superseded, each table it wrote
returns to the rows before the turn's first live version, as a new version (`cause: rollback`, compare-and-set
on the version read under the row's lock). A table written after the turn by anyone else (an operator, an API
key, a later turn) is left as it is and reported as a conflict. A select writes the turn's rows back
(`cause: reapply`) on the tables that still hold what its rollback left.
"""

from __future__ import annotations

from collections import defaultdict
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


def tables_as_rolled_back(tables: list[dict[str, Any]], turn_pk: int) -> tuple[list[dict[str, Any]], list[dict]]:
    """The tables (plain data, tables_snapshot's) as superseding `turn_pk` will leave them, and the conflicts that
    rollback will report: what a regeneration of its reply is prompted with. A table the turn wrote shows its rows
    before the turn, unless someone wrote it after the turn (then as it is, and listed); any other table as it is."""
    plans = _undo_plans(tables, turn_pk)
    restore = {pk: plan.restore for pk, plan in plans.items() if plan.status == "apply" and plan.restore}
    past = {
        pk: rows
        for pk, version, rows in MemoryTableVersion.objects.filter(
            table_id__in=restore, version__in=set(restore.values())
        ).values_list("table_id", "version", "rows")
        if restore[pk] == version
    }
    conflicts = [
        {"id": pk, "name": t["name"], "currentVersion": t["version"], "reason": plans[pk].reason}
        for t in tables
        if (pk := t["id"]) in plans and plans[pk].status == "conflict"
    ]
    rewound = [t | {"rows": past[t["id"]], "version": restore[t["id"]]} if t["id"] in past else t for t in tables]
    return rewound, conflicts


def _undo_plans(tables: list[dict[str, Any]], turn_pk: int) -> dict[int, Plan]:
    """The rollback plan of each table the turn wrote, against the version the caller read."""
    ids = [table["id"] for table in tables]
    touched = MemoryTableVersion.objects.filter(turn_id=turn_pk, table_id__in=ids).values_list("table_id", flat=True)
    histories: dict[int, list] = defaultdict(list)
    for table_id, *step in MemoryTableVersion.objects.filter(table_id__in=set(touched)).values_list(
        "table_id", "version", "turn_id", "cause"
    ):
        histories[table_id].append(step)
    return {
        t["id"]: plan_undo(_steps(histories[t["id"]]), turn_pk, t["version"]) for t in tables if t["id"] in histories
    }


def _steps(history: list) -> list[Step]:
    """A table's versions (version, turn_id, cause) as the rollback plan reads them."""
    return [
        Step(version, turn_id if kind in _CAUSES else None, _CAUSES.get(kind, WRITE))
        for version, turn_id, kind in history
    ]


def _plan(table: MemoryTable, turn_pk: int, cause: str) -> Plan:
    history = _steps(list(MemoryTableVersion.objects.filter(table=table).values_list("version", "turn_id", "cause")))
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
