"""What an import may restore, and the checks each restored value passes (docs/data-lifecycle.md, docs/security.md).

An import is a tenant's request: its file is untrusted. Only the kinds below are restored — a user's own data,
which the lifecycle walk finds through `product` + `user_id`, and the rows that hang off it. Everything else
(users, admin logs, sessions, content types, outbox messages, products, API keys, embedding indexes, run-once
records, Hinos claims, webhooks, lifecycle jobs, …) is refused as an unknown kind, whatever the file says.
Every value of an allowed kind goes through the checks the API applies to it: identifiers, sizes and depth,
choices, a memory document's limits and the product's schema, a long-term memory's kind, verbatim evidence,
secrets and content shape; what the service derives itself (search text, vectors, the embedding index) is
derived again, never taken from the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from memories.longterm import admission, keyword, kinds
from memories.longterm.selectors import kind_spec
from memories.longterm.services.embedding_index import IndexInUse, index_in_use
from memories.schemas import check_memory_against_schema
from memories.validation import (
    MAX_MEMORY_BYTES,
    MAX_MEMORY_DEPTH,
    compact_json,
    json_depth,
    validate_memory,
    validate_revision,
)
from memoryhub import json_text
from memoryhub.actors import Actor
from memoryhub.errors import DomainError
from memoryhub.identifiers import validate_identifier
from memoryhub.runtimes.registry import SectionInvalid
from tables.validation import validate_rows, validate_tables_section

# The kinds an import restores. An explicit list: a model added later is not importable until it is added here
# with its checks (tests/lifecycle/test_import_allow_list.py fails for an owner model that is in neither list).
IMPORTABLE_KINDS: frozenset[str] = frozenset(
    {
        "memories.MemoryDocument",
        "memories.MemoryRevision",
        "memories.Conversation",
        "memories.Turn",
        "memories.Message",
        "memories.Event",
        "longterm.LongTermMemory",
        "longterm.LongTermMemoryVersion",
        "longterm.AdmissionRefusal",
        "longterm.Task",
        "longterm.TaskCheckpoint",
        "longterm.TaskReport",
        "compact.CompactionHead",
        "compact.Compaction",
        "state.ConversationState",
        "state.ConversationStateRevision",
        "story.StorySnapshot",
        "story.StoryVersion",
        "diaries.DiaryState",
        "diaries.DiaryEntry",
        "diaries.DiaryPlanRecord",
        "tables.MemoryTable",
        "tables.MemoryTableVersion",
        "tables.TableEditRecord",
        "history.HistoryEntry",
    }
)
# Owner models an export may carry that are never restored: bookkeeping of the service, not the user's data.
# (A run-once record would pre-seed a replay; a tool token is a credential (exports leave it out too); a Hinos
# claim id is a handle shared with a remote service; a quota lock is a lock; lifecycle jobs and webhook messages
# describe this product's own operations.)
NEVER_IMPORTED_OWNER_KINDS: frozenset[str] = frozenset(
    {
        "memories.RunOnceRecord",
        "memories.IssuedToolToken",
        "hinos.HinosClaim",
        "diaries.DiaryQuotaLock",
        "lifecycle.Export",
        "lifecycle.Import",
        "webhooks.WebhookMessage",
    }
)
MAX_JSON_DEPTH = 64  # a turn's variables hold a memory document (depth 32) and more around it
# Conversation events that are this installation's own operations, never a tenant's data: an operator's actions
# (memories/console/services.py's re-run, memories/hinos/services/commits.py's re-send) and a failed Hinos commit,
# which lists itself in the operators' "Failed Hinos commits" queue (its claim is never imported either).
OPERATOR_EVENT_TYPES: frozenset[str] = frozenset({"memory.job_rerun", "memory.write_resent", "memory.write_failed"})


class RecordRefused(Exception):
    """A record the import skips; the message is the report's reason (never a database error's text)."""


@dataclass
class ImportContext:
    product: Any
    user_id: str
    _index: IndexInUse | None = None
    after_save: list[Callable[[Any], None]] = field(default_factory=list)  # run with the saved row
    # The file's records not restored (kind → their ids in the file), and the conversation ids of the refused
    # conversations (e.g. one the target has already): what hangs off them is not restored either.
    refused: dict[str, set[str]] = field(default_factory=dict)
    refused_conversations: set[str] = field(default_factory=set)
    ids: dict[str, dict[str, Any]] = field(default_factory=dict)  # kind → the file's id → the restored row's pk
    # who sent the import: what a file says an operator wrote is restored as theirs
    importer: Actor = field(default_factory=lambda: Actor("api_key", ""))

    def index(self) -> IndexInUse:
        """The active embedding index (once per import): a mismatch fails the import with 503, nothing written."""
        if self._index is None:
            self._index = index_in_use()
        return self._index


def importable(label: str) -> bool:
    return label in IMPORTABLE_KINDS


def check_record(model: type[models.Model], values: dict[str, Any], context: ImportContext) -> None:
    """Refuse (RecordRefused) or complete `values` in place; `values` are the model's field values to insert."""
    for model_field in model._meta.concrete_fields:
        if not model_field.is_relation and not model_field.primary_key and model_field.name in values:
            _check_field(model_field, values[model_field.name])
    _no_operator(values, context)
    check = KIND_CHECKS.get(model._meta.label)
    if check is not None:
        check(values, context)


def _no_operator(values: dict[str, Any], context: ImportContext) -> None:
    """A file cannot name this installation's operators: what it says an operator wrote is restored as the
    importer's (the key that sent it), as the API records a write by that key."""
    importer = context.importer
    if values.get("actor_type") == "operator":  # MemoryRevision, LongTermMemoryVersion: the type and the id
        values["actor_type"], values["actor"] = importer.type, importer.id[:200]
    elif isinstance(values.get("actor"), str) and values["actor"].startswith("operator:"):  # str(Actor)
        values["actor"] = str(importer)[:200]
    if values.get("cause") == "operator":  # a table version (tables.services.WriteCause.of_actor)
        values["cause"] = "operator" if importer.type == "operator" else "api_key"


def _event(values: dict[str, Any], context: ImportContext) -> None:
    if values.get("type") in OPERATOR_EVENT_TYPES:
        raise RecordRefused(f"a {values['type']} event is an operation of the installation it was exported from")


def _check_field(model_field: models.Field, value: Any) -> None:
    name = model_field.name
    if value is None:
        if not model_field.null:
            raise RecordRefused(f"{name} may not be null")
        return
    _check_storable(name, value)
    if isinstance(model_field, models.JSONField) and json_depth(value) > MAX_JSON_DEPTH:
        raise RecordRefused(f"{name} is nested deeper than {MAX_JSON_DEPTH} levels")
    if model_field.choices and value not in {choice for choice, _ in model_field.flatchoices}:
        raise RecordRefused(f"{name}: {value!r} is not one of its choices")
    try:
        model_field.run_validators(value)  # max_length, positive integers, …
    except ValidationError as exc:
        raise RecordRefused(f"{name}: {'; '.join(exc.messages)}") from None
    if name == "conversation_id":
        _api_check(lambda: validate_identifier(value, "conversation_id"))


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _check_storable(name: str, value: Any) -> None:
    """What the API's parser refuses (NUL, lone surrogates, numbers beyond a double) is never stored either."""
    found = json_text.first_unstorable(value)
    if found is not None:
        path, problem = found
        raise RecordRefused(f"{name}{path}: {problem}")


def _api_check(check: Callable[[], object]) -> None:
    """Run one of the API's own validators; its refusal becomes the record's reason."""
    try:
        check()
    except DomainError as exc:
        raise RecordRefused(exc.message) from None


def _check_revision(values: dict[str, Any], name: str = "revision") -> None:
    _api_check(lambda: validate_revision(values.get(name), name))
    if values[name] < 1:
        raise RecordRefused(f"{name} must be at least 1")


def _memory_document(values: dict[str, Any], context: ImportContext) -> None:
    _check_revision(values)
    _api_check(lambda: validate_memory(values.get("memory")))
    _api_check(lambda: check_memory_against_schema(values["memory"], context.product.memory_schema))


def _memory_revision(values: dict[str, Any], context: ImportContext) -> None:
    _check_revision(values)
    _api_check(lambda: validate_memory(values.get("memory")))


def _refuse_secrets(values: dict[str, Any], *names: str) -> None:
    for name in names:
        for text in _strings(values.get(name)):
            findings = admission.find_secrets(text)
            if findings:  # never echo the secret itself
                raise RecordRefused(f"secrets are never saved: {findings[0].kind} detected in {name}")


def _longterm_memory(values: dict[str, Any], context: ImportContext) -> None:
    kind, content = values.get("kind"), values.get("content")
    spec = kind_spec(context.product, kind) if isinstance(kind, str) else None
    if spec is None:
        raise RecordRefused(f"unknown memory kind {kind!r} in the target product")
    evidence, source = values.get("evidence", ""), values.get("source", "")
    # The importing product vouches for consent, as its backend does for every write; the quote, the secret
    # and the content checks are admission's own, which no judge may overturn.
    refusal = admission.check_proposal(True, source, evidence, content)
    if refusal is not None:
        raise RecordRefused(f"{refusal.code}: {refusal.reason}")
    values["content"] = _checked_content(spec, content)
    values["search_text"] = keyword.index_text(values["content"], evidence)
    in_use = context.index()
    searchable = spec.searchable and not values.get("superseded_by")
    vector = in_use.embed_one(_embedding_text(spec, values)) if searchable else None
    values["embedding"] = vector if in_use.backend.stores_in_row else None
    values["embedding_index_id"] = in_use.index.pk
    if not in_use.backend.stores_in_row:
        context.after_save.append(lambda row: in_use.backend.upsert(in_use.index, row, vector))


def _embedding_text(spec: kinds.KindSpec, values: dict[str, Any]) -> str:
    from memories.longterm.services.memories import embedding_text

    return embedding_text(values["content"], values.get("evidence", ""), spec.text_field)


def _checked_content(spec: kinds.KindSpec, content: object) -> dict:
    if spec.builtin:
        try:
            return admission.get_kind(spec.name).normalize(content)
        except (ValueError, admission.Refused) as exc:
            raise RecordRefused(f"content is not a valid {spec.name}: {exc}") from None
    refusal = kinds.schema_refusal(spec, content)
    if refusal is not None:
        raise RecordRefused(refusal.reason or "content fails the kind's schema")
    assert isinstance(content, dict)
    return content


def _longterm_history(values: dict[str, Any], context: ImportContext) -> None:
    kind = values.get("kind")
    if not isinstance(kind, str) or not kinds.KIND_NAME.fullmatch(kind):
        raise RecordRefused(f"kind {kind!r} is not a memory kind's name")
    _refuse_secrets(values, "content", "evidence", "source")


def _task(values: dict[str, Any], context: ImportContext) -> None:
    _api_check(lambda: validate_identifier(values.get("task_id", ""), "task_id"))
    _task_json(values, "input")


def _task_json(values: dict[str, Any], name: str) -> None:
    """A task's input, a checkpoint's data, a report: the API's bounds, a memory document's (an object, depth 32,
    64 KiB: memories/longterm/api/serializers.py's BoundedObjectField)."""
    value = values.get(name)
    if not isinstance(value, dict):
        raise RecordRefused(f"{name}: must be a JSON object")
    if json_depth(value) > MAX_MEMORY_DEPTH:
        raise RecordRefused(f"{name}: nested deeper than {MAX_MEMORY_DEPTH} levels")
    if len(compact_json(value).encode()) > MAX_MEMORY_BYTES:
        raise RecordRefused(f"{name}: larger than {MAX_MEMORY_BYTES} bytes as compact JSON")


def _memory_table(values: dict[str, Any], context: ImportContext) -> None:
    template = {
        "name": values.get("name"),
        "columns": values.get("columns"),
        "note": values.get("note", ""),
        "rules": values.get("rules", {}),
        "required": values.get("required", False),
        "maxRows": values.get("max_rows"),
    }
    try:
        validate_tables_section([template])
    except SectionInvalid as exc:
        raise RecordRefused(str(exc)) from None
    _table_rows(values, columns=values["columns"], max_rows=values.get("max_rows"))


def _table_rows(values: dict[str, Any], *, columns: list[str] | None, max_rows: int | None) -> None:
    rows = values.get("rows", [])
    width = len(rows[0]) if columns is None and isinstance(rows, list) and rows and isinstance(rows[0], list) else 0
    _api_check(lambda: validate_rows(rows, columns=columns if columns is not None else [""] * width, max_rows=max_rows))


def _memory_table_version(values: dict[str, Any], context: ImportContext) -> None:
    _table_rows(values, columns=None, max_rows=None)  # the width its table had then: every row alike


def _history_entry(values: dict[str, Any], context: ImportContext) -> None:
    """A message in the history index (an imported one lives only here): its search text and vector are derived."""
    from memories.history.services.indexing import schedule_embedding
    from memories.history.text import keyword_text

    content, created_at = values.get("content"), values.get("created_at")
    if not isinstance(content, str) or created_at is None:
        raise RecordRefused("a history entry needs its content and time")
    values["search_text"] = keyword_text(
        role=str(values.get("role", "")), name=str(values.get("name", "")), content=content, created_at=created_at
    )
    values["embedding"] = None  # embedded again by background work, under the index in use here
    values["embedding_index_id"] = None
    context.after_save.append(lambda row: schedule_embedding([row.pk]))


def _story(values: dict[str, Any], context: ImportContext) -> None:
    """The anchor (and each event's message) is a message id in a plain column: the restored message's new id.
    An anchor the file did not restore would anchor on nothing (or on another user's message): refused."""
    messages = context.ids.get("memories.Message", {})
    anchor = values.get("anchor_message_id")
    if anchor is not None:
        if str(anchor) not in messages:
            raise RecordRefused(f"its anchor message {str(anchor)[:40]} was not restored from the file")
        values["anchor_message_id"] = messages[str(anchor)]
    events = values.get("events")
    if isinstance(events, list):
        values["events"] = [
            {**event, "messageId": messages.get(str(event.get("messageId")), event.get("messageId"))}
            if isinstance(event, dict) and "messageId" in event
            else event
            for event in events
        ]


# Kinds that name another kind's rows by id in a plain column: restored after it, re-mapped by their check.
ID_REFERENCES: dict[str, tuple[str, ...]] = {
    "story.StorySnapshot": ("memories.Message",),
    "story.StoryVersion": ("memories.Message",),
}

KIND_CHECKS: dict[str, Callable[[dict[str, Any], ImportContext], None]] = {
    "memories.Event": _event,
    "story.StorySnapshot": _story,
    "story.StoryVersion": _story,
    "memories.MemoryDocument": _memory_document,
    "memories.MemoryRevision": _memory_revision,
    "longterm.LongTermMemory": _longterm_memory,
    "longterm.LongTermMemoryVersion": _longterm_history,
    "longterm.AdmissionRefusal": _longterm_history,
    "longterm.Task": _task,
    "longterm.TaskCheckpoint": lambda values, context: _task_json(values, "data"),
    "longterm.TaskReport": lambda values, context: _task_json(values, "report"),
    "tables.MemoryTable": _memory_table,
    "tables.MemoryTableVersion": _memory_table_version,
    "history.HistoryEntry": _history_entry,
}
