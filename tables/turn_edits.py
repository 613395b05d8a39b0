"""Apply a committed turn's `<tableEdit>` calls to its conversation's tables (what the Celery task calls).

- One turn at a time per conversation: the conversation row is locked for the whole apply.
- Idempotent: the TableEditRecord is written in the same transaction as the tables, so a redelivered
  task finds it and applies nothing twice.
- Replaced replies: the replaced reply's edits were taken back when it was superseded (tables/rollback.py), so
  a turn's calls apply to the tables as they are (replies superseded before that rollback existed: to the base
  versions of the round's first record). A user-message edit keeps its reply: on a table whose rollback conflicted,
  that same reply's edits are still there and are not applied twice.
- A table is replaced only when its rows differ from the stored rows; each write is compare-and-set on
  the version read. On a conflict everything is re-read and re-applied once; a second conflict writes
  nothing and is reported as `table.conflict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F

from memories.models import Conversation, Turn
from memories.services.events import event_emit_for_turn
from memoryhub import faults
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import RevisionConflict
from memoryhub.events import publish as publish_event
from tables.applying import ApplyResult, apply_calls
from tables.models import MemoryTable, TableEditRecord
from tables.parsing import ParseResult, TableEditCall, parse_table_edits
from tables.selectors import round_base_record, table_rows_at
from tables.services import WriteCause, scenario_templates, table_replace, table_state, tables_ensure, turn_address

MAX_ATTEMPTS = 2  # TB3: the first try and at most one re-read
CONFLICT_REASON = "not applied: the table changed while this reply's edits were written, twice (version conflict)"
SUPERSEDED_REASON = "not applied: the reply was replaced by a later reply of the same round"
KEPT_REASON = (
    "not applied: this reply's edits are still in the table, written before its user message was edited "
    "(the edit's rollback conflicted and kept them)"
)


@dataclass
class _Attempt:
    tables: list[MemoryTable]
    base_versions: dict[str, int]
    result: ApplyResult
    kept: list[dict[str, Any]] = field(default_factory=list)  # calls on tables that still hold them
    written: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)


def turn_table_edits_apply(*, turn_pk: int) -> TableEditRecord | None:
    """Apply the turn's reply once; return its record (None when the turn or its scenario has no tables)."""
    turn = Turn.objects.select_related("product", "scenario").filter(pk=turn_pk).first()
    if turn is None or turn.status not in ("committed", "superseded"):
        return None
    templates = scenario_templates(turn.scenario)
    if not templates:
        return None
    with transaction.atomic():
        Conversation.objects.select_for_update(no_key=True).filter(pk=turn.conversation_row_id).first()
        record = TableEditRecord.objects.filter(turn=turn).first()
        if record is not None:  # a redelivered task: this reply was handled already; only count the delivery
            TableEditRecord.objects.filter(pk=record.pk).update(deliveries=F("deliveries") + 1)
            return record
        parsed = parse_table_edits(turn.assistant_message)
        if turn.status == "superseded":
            return _record_superseded(turn, parsed)
        return _apply(turn, templates, parsed)


def turn_table_edits_apply_late(*, turn: Turn) -> TableEditRecord | None:
    """A select made this reply current again, but its edits were never applied: its turn was superseded before
    its job ran (a `superseded` record). Apply them now, on the tables as they are, in the caller's transaction
    (the select's: the conversation is locked); its record then says what they did (None: nothing to apply)."""
    if not TableEditRecord.objects.filter(turn=turn, outcome="superseded").exists():
        return None
    templates = scenario_templates(turn.scenario)
    if not templates:
        return None
    record = _apply(turn, templates, parse_table_edits(turn.assistant_message), base={})
    if record.after_step.get("status") == "pending":  # as a rollback or reapply write, a select posts no webhook
        record.after_step = {"status": "skipped", "reason": "applied by a select"}
        record.save(update_fields=["after_step"])
    return record


def _apply(
    turn: Turn, templates: list[dict[str, Any]], parsed: ParseResult, base: dict[str, int] | None = None
) -> TableEditRecord:
    address = turn_address(turn)
    base = _round_base(turn, address) if base is None else base
    kept = _kept_tables(turn)
    attempt, number = None, 0
    for number in range(1, MAX_ATTEMPTS + 1):
        attempt = _attempt(turn, address, templates, parsed, base, number, kept=kept)
        if not attempt.conflicts:
            break
    assert attempt is not None
    return _record(turn, parsed, attempt, number)


def _round_base(turn: Turn, address: ConversationAddress) -> dict[str, int]:
    chain = _replaced_chain(turn)
    if Turn.objects.filter(pk__in=chain).exclude(rollback={}).exists():
        return {}  # the replaced replies' edits were taken back (tables/rollback.py): apply on the tables as they are
    record = round_base_record(address, turn.round, also_turns=chain, exclude_turn=turn.pk)
    return dict(record.base_versions) if record else {}


def _kept_tables(turn: Turn, limit: int = 50) -> set[int]:
    """The tables that still hold this very reply's edits, written as the turn it was edited from (or that turn's
    own, through a chain of user-message edits): where an edit's rollback of the old turn conflicted (a later round
    wrote the table), the old turn's edits stayed, and applying the same reply again would insert its rows twice."""
    kept: set[int] = set()
    current = turn
    for _ in range(limit):
        if current.replaces_id is None:
            break
        old = Turn.objects.filter(pk=current.replaces_id).only("replaces_id", "assistant_message", "rollback").first()
        if old is None or old.assistant_message != turn.assistant_message:
            break  # a changed reply is a new reply: its edits apply on top of the kept ones (a regeneration's rule)
        rollback = old.rollback or {}
        if rollback.get("cause") != "edit" or rollback.get("byTurnId") != current.pk:
            break
        kept |= {c["id"] for c in rollback.get("kinds", {}).get("tables", {}).get("conflicts", [])}
        current = old
    return kept


def _replaced_chain(turn: Turn, limit: int = 50) -> list[int]:
    chain: list[int] = []
    current = turn.replaces_id
    while current is not None and current not in chain and len(chain) < limit:
        chain.append(current)
        current = Turn.objects.filter(pk=current).values_list("replaces_id", flat=True).first()
    return chain


def _attempt(
    turn: Turn,
    address: ConversationAddress,
    templates: list[dict[str, Any]],
    parsed: ParseResult,
    base: dict[str, int],
    number: int,
    *,
    kept: set[int],
) -> _Attempt:
    tables = tables_ensure(address, templates)
    base_versions = {str(t.pk): base.get(str(t.pk), t.version) for t in tables}
    states = [table_state(t, table_rows_at(t, base_versions[str(t.pk)])) for t in tables]
    kept_indexes = {index for index, table in enumerate(tables) if table.pk in kept}
    calls = [call for call in parsed.calls if call.table_index not in kept_indexes]
    attempt = _Attempt(tables, base_versions, apply_calls(states, calls))
    attempt.kept = [_kept_entry(call) for call in parsed.calls if call.table_index in kept_indexes]
    # Compared with the stored rows, not the base: restoring a replaced reply's edits is a change too.
    changes = [(i, t, s.rows) for i, (t, s) in enumerate(zip(tables, attempt.result.tables)) if s.rows != t.rows]
    # The test suite provokes a conflict here (memoryhub/faults.py); a no-op everywhere else.
    faults.point(faults.TABLE_EDITS_BETWEEN_READ_AND_WRITE, turn, number)
    try:
        with transaction.atomic():  # a savepoint: a conflict on any table undoes this attempt's writes
            attempt.written = [_write(index, table, rows, turn) for index, table, rows in changes]
    except RevisionConflict:
        attempt.conflicts = [_conflict_entry(index, table) for index, table, _ in changes]
    return attempt


def _kept_entry(call: TableEditCall) -> dict[str, Any]:
    where = {"table_index": call.table_index, "row_index": call.row_index, "block": call.block}
    return {"op": call.op, **where, "source": call.source, "reason": KEPT_REASON}


def _write(index: int, table: MemoryTable, rows: list[list[str]], turn: Turn) -> dict[str, Any]:
    outcome = table_replace(table=table, expected_version=table.version, rows=rows, cause=WriteCause.of_turn(turn))
    return {
        "id": table.pk,
        "index": index,
        "name": table.name,
        "fromVersion": table.version,
        "version": outcome.version,
    }


def _conflict_entry(index: int, table: MemoryTable) -> dict[str, Any]:
    current = MemoryTable.objects.filter(pk=table.pk).values_list("version", flat=True).first()
    return {
        "id": table.pk,
        "index": index,
        "name": table.name,
        "expectedVersion": table.version,
        "currentVersion": current,
    }


def _record(turn: Turn, parsed: ParseResult, attempt: _Attempt, attempts: int) -> TableEditRecord:
    names = [t.name for t in attempt.tables]
    applied = [_camel(entry, names) for entry in attempt.result.applied]
    skipped = [
        *_parse_skipped(parsed),
        *(_camel(entry, names) for entry in [*attempt.kept, *attempt.result.skipped]),
    ]
    outcome = "conflict" if attempt.conflicts else "updated" if attempt.written else "unchanged"
    if attempt.conflicts:
        skipped += [entry | {"reason": CONFLICT_REASON} for entry in applied]
        applied = []
    result_versions = {str(t.pk): t.version for t in attempt.tables}
    result_versions.update({str(w["id"]): w["version"] for w in attempt.written})
    tables = attempt.conflicts or attempt.written
    # update_or_create: a late apply (turn_table_edits_apply_late) replaces the `superseded` record of its turn.
    record, _ = TableEditRecord.objects.update_or_create(
        turn=turn,
        defaults={
            "product": turn.product,
            "user_id": turn.user_id,
            "conversation_id": turn.conversation_id,
            "round": turn.round,
            "outcome": outcome,
            "base_versions": attempt.base_versions,
            "result_versions": result_versions,
            "tables": tables,
            "applied": applied,
            "skipped": skipped,
            "unclosed_block": parsed.unclosed_block,
            "attempts": attempts,
            "after_step": {"status": "pending"} if outcome == "updated" and _has_after_step(turn) else {},
        },
    )
    details = {
        "applied": applied,
        "skipped": skipped,
        "tables": tables,
        "attempts": attempts,
        "unclosedBlock": parsed.unclosed_block,
        "round": turn.round,
    }
    if turn.replaces_id:
        details["replacedTurnId"] = turn.replaces_id
    event_emit_for_turn(turn, f"table.{outcome}", details)
    if outcome == "updated":
        data = {"turnId": turn.pk, "round": turn.round, "tables": tables}
        publish_event(turn.product, "table.updated", user=turn.user_id, conversation=turn.conversation_id, data=data)
    return record


def _record_superseded(turn: Turn, parsed: ParseResult) -> TableEditRecord:
    skipped = [
        *_parse_skipped(parsed),
        *(
            {
                "op": c.op,
                "tableIndex": c.table_index,
                "rowIndex": c.row_index,
                "block": c.block,
                "source": c.source,
                "reason": SUPERSEDED_REASON,
            }
            for c in parsed.calls
        ),
    ]
    record = TableEditRecord.objects.create(
        product=turn.product,
        user_id=turn.user_id,
        conversation_id=turn.conversation_id,
        turn=turn,
        round=turn.round,
        outcome="superseded",
        applied=[],
        skipped=skipped,
        unclosed_block=parsed.unclosed_block,
    )
    event_emit_for_turn(
        turn,
        "table.unchanged",
        {"applied": [], "skipped": skipped, "tables": [], "reason": "superseded", "round": turn.round},
    )
    return record


def _has_after_step(turn: Turn) -> bool:
    return bool(turn.scenario and (turn.scenario.sections or {}).get("tableWebhook"))


def _parse_skipped(parsed: ParseResult) -> list[dict[str, Any]]:
    return [{"source": s.source, "reason": s.reason, "block": s.block} for s in parsed.skipped]


_KEYS = {"table_index": "tableIndex", "row_index": "rowIndex"}


def _camel(entry: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """An applying.py log entry in the API's camelCase, with the table's name for people reading events."""
    out = {_KEYS.get(key, key): value for key, value in entry.items()}
    if "values" in out:
        out["values"] = {str(column): value for column, value in out["values"].items()}
    index = out.get("tableIndex")
    if isinstance(index, int) and 0 <= index < len(names):
        out["tableName"] = names[index]
    return out
