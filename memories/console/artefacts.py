"""Readable artefacts: a memory table's versions as HTML-ready diffs, JSON revisions diffed, diaries as text.

Each selector takes the product (another product's id is not found) and two optional version numbers; by
default it compares the newest version with the one before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diaries.models import DiaryEntry, DiaryPlanRecord
from memories.console.diffs import Line, TableDiff, json_diff, line_diff, table_diff
from memories.models import Conversation, MemoryDocument, MemoryRevision, Product
from memories.state.models import ConversationState, ConversationStateRevision
from memories.story.models import StorySnapshot, StoryVersion
from memoryhub.errors import NotFound
from tables.models import MemoryTable, MemoryTableVersion


@dataclass(frozen=True)
class Version:
    """One version or revision in a history list: its number, when, who or what made it, and its turn."""

    number: int
    created_at: Any
    cause: str
    turn_id: int | None = None


@dataclass(frozen=True)
class DiffSection:
    title: str
    lines: list[Line]

    @property
    def changed(self) -> bool:
        return any(line.kind != "same" for line in self.lines)


@dataclass(frozen=True)
class TableArtefact:
    table: MemoryTable
    versions: list[Version]  # newest first
    old: Version | None
    new: Version
    diff: TableDiff
    conversation_pk: int | None


@dataclass(frozen=True)
class RevisionArtefact:
    """A JSON resource's history (memory document, conversation state, story) and the diff of two revisions."""

    kind: str  # "document" | "state" | "story"
    owner: Any
    versions: list[Version]
    old: Version | None
    new: Version
    sections: list[DiffSection]
    conversation_pk: int | None


@dataclass(frozen=True)
class DiaryArtefact:
    entry: DiaryEntry
    plan: DiaryPlanRecord | None
    entries: list[DiaryEntry]  # the conversation's entries, oldest first
    conversation_pk: int | None


def conversation_pk(product: Product, user_id: str, conversation_id: str) -> int | None:
    rows = Conversation.objects.filter(product=product, user_id=user_id, conversation_id=conversation_id)
    return rows.values_list("pk", flat=True).first()


def _pick(numbers: list[int], old: int | None, new: int | None) -> tuple[int | None, int]:
    """The two versions to compare: `new` defaults to the newest, `old` to the one just before `new`."""
    if not numbers:
        raise NotFound("no versions are kept")
    new = numbers[0] if new is None else new
    if new not in numbers or (old is not None and old not in numbers):
        raise NotFound(f"no version {new if new not in numbers else old}")
    if old is None:
        old = next((n for n in numbers if n < new), None)
    return old, new


def table_artefact(*, product: Product, table_id: int, old: int | None = None, new: int | None = None):
    table = MemoryTable.objects.filter(product=product, pk=table_id).first()
    if table is None:
        raise NotFound(f"no table {table_id} in this product")
    rows = {v.version: v for v in MemoryTableVersion.objects.filter(product=product, table=table).order_by("-version")}
    old_number, new_number = _pick(list(rows), old, new)
    versions = [Version(v.version, v.created_at, v.cause, v.turn_id) for v in rows.values()]
    by_number = {v.number: v for v in versions}
    old_rows = rows[old_number].rows if old_number is not None else []
    return TableArtefact(
        table=table,
        versions=versions,
        old=by_number.get(old_number) if old_number is not None else None,
        new=by_number[new_number],
        diff=table_diff(table.columns, old_rows, rows[new_number].rows),
        conversation_pk=conversation_pk(product, table.user_id, table.conversation_id),
    )


def document_artefact(*, product: Product, document_id: int, old: int | None = None, new: int | None = None):
    document = MemoryDocument.objects.filter(product=product, pk=document_id).first()
    if document is None:
        raise NotFound(f"no memory document {document_id} in this product")
    where = {"user_id": document.user_id, "conversation_id": document.conversation_id}
    rows = {r.revision: r for r in MemoryRevision.objects.filter(product=product, **where).order_by("-revision")}
    versions = [Version(r.revision, r.created_at, f"{r.actor_type}: {r.actor}") for r in rows.values()]
    return _revision_artefact("document", document, rows, versions, old, new, _document_sections)


def _document_sections(old: MemoryRevision | None, new: MemoryRevision) -> list[DiffSection]:
    return [DiffSection("memory", json_diff(old.memory if old else {}, new.memory))]


def state_artefact(*, product: Product, state_id: int, old: int | None = None, new: int | None = None):
    state = ConversationState.objects.filter(product=product, pk=state_id).first()
    if state is None:
        raise NotFound(f"no conversation state {state_id} in this product")
    query = ConversationStateRevision.objects.filter(product=product, state=state).order_by("-revision")
    rows = {r.revision: r for r in query}
    versions = [Version(r.revision, r.created_at, r.actor or "—") for r in rows.values()]
    return _revision_artefact("state", state, rows, versions, old, new, _state_sections)


def _state_sections(old: ConversationStateRevision | None, new: ConversationStateRevision) -> list[DiffSection]:
    return [
        DiffSection("text", line_diff(old.text if old else "", new.text)),
        DiffSection("records", json_diff(old.records if old else [], new.records)),
    ]


def story_artefact(*, product: Product, snapshot_id: int, old: int | None = None, new: int | None = None):
    snapshot = StorySnapshot.objects.filter(product=product, pk=snapshot_id).first()
    if snapshot is None:
        raise NotFound(f"no story {snapshot_id} in this product")
    rows = {v.version: v for v in StoryVersion.objects.filter(product=product, snapshot=snapshot).order_by("-version")}
    versions = [Version(v.version, v.created_at, _story_cause(v)) for v in rows.values()]
    return _revision_artefact("story", snapshot, rows, versions, old, new, _story_sections)


def _story_cause(version: StoryVersion) -> str:
    return version.cause + (" (rolled back)" if version.rolled_back else "")


def _story_sections(old: StoryVersion | None, new: StoryVersion) -> list[DiffSection]:
    return [
        DiffSection(name, json_diff(getattr(old, name) if old else {}, getattr(new, name)))
        for name in ("world_facts", "events", "narrative")
    ]


def _revision_artefact(kind, owner, rows: dict, versions, old, new, sections) -> RevisionArtefact:
    old_number, new_number = _pick(list(rows), old, new)
    by_number = {v.number: v for v in versions}
    return RevisionArtefact(
        kind=kind,
        owner=owner,
        versions=versions,
        old=by_number.get(old_number) if old_number is not None else None,
        new=by_number[new_number],
        sections=sections(rows.get(old_number) if old_number is not None else None, rows[new_number]),
        conversation_pk=conversation_pk(owner.product, owner.user_id, owner.conversation_id),
    )


def diary_artefact(*, product: Product, entry_id: int) -> DiaryArtefact:
    entry = DiaryEntry.objects.filter(product=product, pk=entry_id).first()
    if entry is None:
        raise NotFound(f"no diary entry {entry_id} in this product")
    where = {"user_id": entry.user_id, "conversation_id": entry.conversation_id}
    return DiaryArtefact(
        entry=entry,
        plan=DiaryPlanRecord.objects.filter(product=product, entry=entry).order_by("pk").first(),
        entries=list(DiaryEntry.objects.filter(product=product, **where).order_by("round_to", "pk")),
        conversation_pk=conversation_pk(product, entry.user_id, entry.conversation_id),
    )
