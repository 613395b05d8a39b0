"""Memory tables: instantiation from templates and the compare-and-set replace every write goes through.

A table's `version` is its compare-and-set version. Every write goes through memoryhub.cas: the
conversation's working-set entry is invalidated first, then one conditional UPDATE on the version
(rowcount checked) and the new version's history row in one transaction. A replace whose rows equal the
stored rows writes nothing and keeps the version.
Applying a turn's `<tableEdit>` calls lives in tables/turn_edits.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.models import Turn
from memories.services.events import event_emit
from memoryhub import cas, working_set
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import NotFound
from memoryhub.events import publish as publish_event
from tables.applying import TableState
from tables.models import MemoryTable, MemoryTableVersion
from tables.selectors import conversation_tables
from tables.validation import validate_rows

MEMORY_TABLE_VARIABLE = "memoryTable"


def tables_scope(address: ConversationAddress) -> working_set.Scope:
    return address.scope(MEMORY_TABLE_VARIABLE)


def turn_address(turn: Turn) -> ConversationAddress:
    return ConversationAddress(turn.product, turn.user_id, turn.conversation_id)


@dataclass(frozen=True)
class WriteCause:
    """Who or what caused a table write: a turn's reply, an operator or an API key."""

    kind: str  # "turn" | "operator" | "api_key"
    actor: str = ""
    turn: Turn | None = None

    @classmethod
    def of_actor(cls, actor: Actor) -> WriteCause:
        return cls("operator" if actor.type == "operator" else "api_key", str(actor)[:200])

    @classmethod
    def of_turn(cls, turn: Turn) -> WriteCause:
        return cls("turn", f"turn:{turn.pk}", turn)


@dataclass(frozen=True)
class ReplaceOutcome:
    version: int
    changed: bool


def scenario_templates(scenario: Any) -> list[dict[str, Any]]:
    """The scenario's validated table templates ([] when it configures none)."""
    if scenario is None:
        return []
    return list((scenario.sections or {}).get("tables") or [])


def table_state(table: MemoryTable, rows: list | None = None) -> TableState:
    """The pure representation applying/rendering work on (optionally with other rows, e.g. a past version)."""
    return TableState.from_dict(
        {
            "name": table.name,
            "columns": table.columns,
            "note": table.note,
            "rules": table.rules,
            "required": table.required,
            "maxRows": table.max_rows,
            "rows": table.rows if rows is None else rows,
        }
    )


def tables_ensure(address: ConversationAddress, templates: list[dict[str, Any]]) -> list[MemoryTable]:
    """The conversation's tables for `templates`, in template order; missing ones are created empty at version 1.

    Tables are matched by name, so a template added to the scenario later is instantiated on next use and
    an existing table keeps its rows (and the columns it was created with).
    """
    existing = {table.name: table for table in conversation_tables(address)}
    missing = [(index, t) for index, t in enumerate(templates) if t["name"] not in existing]
    if missing:
        existing.update(_create_tables(address, missing))
    return [existing[template["name"]] for template in templates]


def _create_tables(address: ConversationAddress, missing: list[tuple[int, dict[str, Any]]]) -> dict[str, MemoryTable]:
    created: dict[str, MemoryTable] = {}
    with transaction.atomic():
        for position, template in missing:
            created[template["name"]] = _create_table(address, position, template)
        working_set.invalidate(tables_scope(address))
    return created


def _create_table(address: ConversationAddress, position: int, template: dict[str, Any]) -> MemoryTable:
    try:
        with transaction.atomic():  # a savepoint: a concurrent first use may win the unique constraint
            table = MemoryTable.objects.create(
                product=address.product,
                user_id=address.user_id,
                conversation_id=address.conversation_id,
                name=template["name"],
                position=position,
                columns=template["columns"],
                note=template.get("note", ""),
                rules=template.get("rules") or {},
                required=template.get("required", False),
                max_rows=template.get("maxRows"),
                rows=[],
                version=1,
            )
            MemoryTableVersion.objects.create(product=address.product, table=table, version=1, rows=[], cause="created")
            return table
    except IntegrityError:
        return conversation_tables(address).get(name=template["name"])


def table_replace(
    *, table: MemoryTable, expected_version: int, rows: list[list[str]], cause: WriteCause
) -> ReplaceOutcome:
    """Replace the rows iff the stored version is `expected_version`; write nothing when the rows are equal.

    Raises RevisionConflict (409, details.currentVersion) when the version moved on.
    """
    stored = MemoryTable.objects.filter(pk=table.pk).values_list("version", "rows").first()
    if stored is None:
        raise NotFound(f"no table {table.pk}")
    if stored == (expected_version, rows):  # read-only: nothing to write, whatever happens next
        return ReplaceOutcome(expected_version, False)
    version = cas.compare_and_set(
        cas.Versioned(
            MemoryTable,
            {"pk": table.pk},
            kind="memory_table",
            field="version",
            conflict_message="the table is at version {current}; re-read and decide again",
            missing_message=f"no table {table.pk}",
        ),
        expected_version,
        changes={"rows": rows, "updated_at": timezone.now()},
        history=lambda version: MemoryTableVersion.objects.create(
            product_id=table.product_id,
            table_id=table.pk,
            version=version,
            rows=rows,
            cause=cause.kind,
            actor=cause.actor,
            turn=cause.turn,
        ),
        invalidate=[tables_scope(ConversationAddress(table.product, table.user_id, table.conversation_id))],
    )
    return ReplaceOutcome(version, True)


def table_edit_manually(*, table: MemoryTable, expected_version: int, rows: object, actor: Actor) -> ReplaceOutcome:
    """A product's or operator's edit: validate, compare-and-set, and say in the events what happened."""
    clean_rows = validate_rows(rows, columns=table.columns, max_rows=table.max_rows)
    with transaction.atomic():
        outcome = table_replace(
            table=table, expected_version=expected_version, rows=clean_rows, cause=WriteCause.of_actor(actor)
        )
        event_emit(
            product=table.product,
            user_id=table.user_id,
            conversation_id=table.conversation_id,
            type="table.updated" if outcome.changed else "table.unchanged",
            details={
                "manual": True,
                "actor": str(actor),
                "applied": [],
                "skipped": [],
                "tables": [
                    {"id": table.pk, "name": table.name, "fromVersion": expected_version, "version": outcome.version}
                ],
            },
        )
        if outcome.changed:
            ref = {"id": table.pk, "name": table.name, "fromVersion": expected_version, "version": outcome.version}
            data = {"manual": True, "tables": [ref]}
            publish_event(
                table.product, "table.updated", user=table.user_id, conversation=table.conversation_id, data=data
            )
    return outcome
