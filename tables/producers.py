"""The `memoryTable` producer: the conversation's tables rendered the way the plugin prompts models.

Every template table is rendered from the first prepare on (an empty one with its placeholder), so the
model always sees the indices it must use. The conversation's tables (rows and versions) are served
through the Redis working set; every table write invalidates the entry inside its transaction.

Versions: `SourceResult.details["versions"]` maps each table id to the version rendered, and
`SourceResult.version` is their sum — it grows with every write to any of the tables, so one number
says whether a later prompt saw newer tables.
"""

from __future__ import annotations

from typing import Any

from memories.selectors.witness import unwitnessed_rounds
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceResult, empty_result
from tables.applying import TableState
from tables.models import MemoryTableVersion
from tables.rendering import render_tables
from tables.rollback import tables_as_rolled_back
from tables.selectors import round_base_record, tables_snapshot
from tables.services import scenario_templates, tables_ensure, tables_scope


def produce_memory_table(request: RecallRequest) -> SourceResult:
    templates = scenario_templates(request.scenario)
    if not templates:
        return empty_result("the scenario configures no tables")
    address = request.address
    snapshot, cached = _snapshot(address, templates)
    by_name = {table["name"]: table for table in snapshot}
    tables = [by_name[template["name"]] for template in templates]
    unseen = (
        unwitnessed_rounds(address, character=request.character, before_round=request.round)
        if request.character
        else set()
    )
    if unseen:  # a group scene: the tables as they were before the first round this character did not witness
        tables, rewound = _as_before_round(address, min(unseen | {request.round}), tables)
        result = _result(tables, cached=cached and not rewound, regenerated=rewound)
        result.details["witness"] = request.character
        return result
    if request.replaces_turn_id is None:  # a new round starts from the tables as they are now
        return _result(tables, cached=cached, regenerated=False)
    # A regeneration sees the tables as the rollback of the reply it replaces will leave them (plugin #41), also
    # where that rollback will conflict: its edits then apply to exactly the rows it was shown.
    rewound, conflicts = tables_as_rolled_back(tables, request.replaces_turn_id)
    result = _result(rewound, cached=cached and rewound == tables, regenerated=True)
    if conflicts:
        result.details["rollbackConflicts"] = conflicts
    return result


def _snapshot(address: ConversationAddress, templates: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    snapshot, cached = working_set.get_or_build(tables_scope(address), lambda: tables_snapshot(address))
    names = {table["name"] for table in snapshot}
    if any(template["name"] not in names for template in templates):
        tables_ensure(address, templates)  # first use: instantiate (and invalidate) before rendering
        return tables_snapshot(address), False
    return snapshot, cached


def _as_before_round(
    address: ConversationAddress, round_number: int, tables: list[dict[str, Any]]
) -> tuple[list, bool]:
    """A character is prompted with the tables as they were before the first round it did not witness."""
    record = round_base_record(address, round_number)
    if record is None:
        return tables, False
    wanted = {int(pk): version for pk, version in record.base_versions.items()}
    past = {
        (row["table_id"], row["version"]): row["rows"]
        for row in MemoryTableVersion.objects.filter(table_id__in=wanted).values("table_id", "version", "rows")
        if wanted.get(row["table_id"]) == row["version"]
    }
    rewound = [
        table | {"rows": past[(table["id"], wanted[table["id"]])], "version": wanted[table["id"]]}
        if (table["id"], wanted.get(table["id"])) in past
        else table
        for table in tables
    ]
    return rewound, True


def _result(tables: list[dict[str, Any]], *, cached: bool, regenerated: bool) -> SourceResult:
    text = render_tables([TableState.from_dict(table) for table in tables])
    versions = {str(table["id"]): table["version"] for table in tables}
    details: dict[str, Any] = {
        "versions": versions,
        "tables": [
            {"id": t["id"], "index": i, "name": t["name"], "version": t["version"], "rows": len(t["rows"])}
            for i, t in enumerate(tables)
        ],
    }
    if regenerated:
        details["asBeforeRound"] = True
    return SourceResult(text=text, status="ok", version=sum(versions.values()), details=details, cached=cached)


def memory_table_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [tables_scope(request.address)]
