"""Request and response bodies as TypedDicts, named after the OpenAPI components (`GET /api/schema/`).

The client's tests compare every TypedDict named in `SCHEMA_COMPONENTS` with the live server's schema
(same property names, same required ones). Two keep older names: `PreparedTurn` is the schema's `Turn` and
`Turn` is its `TurnDetail` (also importable under that name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, NotRequired, TypedDict, TypeVar

T = TypeVar("T")
JSON = Any  # a JSON value: the server's documents and contents are the product's own shapes


@dataclass(frozen=True)
class MemoryDocument:
    """A conversation's JSON memory document: `{revision: 0, memory: None}` while nothing is stored."""

    revision: int
    memory: dict[str, JSON] | None


class Page(TypedDict, Generic[T]):
    results: list[T]
    next: str | None


class MemoryRevision(TypedDict):
    revision: int
    memory: JSON
    actor: dict[str, JSON]
    createdAt: str


class Memory(TypedDict):
    id: str
    key: str
    kind: str
    content: JSON
    evidence: str
    source: str
    version: int
    expiresAt: str | None
    supersededBy: str | None
    supersededAt: str | None
    turnId: int | None  # the conversation turn it was written for (docs/roleplay.md)
    rolledBackAt: str | None  # set while that turn is superseded
    createdAt: str
    updatedAt: str


class SearchResult(Memory):
    score: float
    why: NotRequired[JSON]  # each signal's rank and score, and the fused score (docs/recall.md)


class SearchPage(TypedDict):
    mode: str
    query: str
    results: list[SearchResult]
    next: str | None
    embeddingIdentity: NotRequired[str]


# "statement": the preference statement rules apply too; "quote": consent, a verbatim quote and no secret only.
EvidencePolicy = Literal["statement", "quote"]
SearchMode = Literal["keyword", "semantic", "hybrid"]  # docs/recall.md


class Kind(TypedDict):
    name: str
    description: str
    contentSchema: JSON
    statedFields: list[str]
    singleValuedFields: list[str]
    searchable: bool
    textField: str | None
    maxPerUser: int | None
    defaultTtlDays: int | None
    evidencePolicy: EvidencePolicy
    createdAt: str
    updatedAt: str


class KindList(TypedDict):
    """A page of kinds: the same shape as `Page[Kind]` (kept by this name for the callers of `kinds.list()`)."""

    results: list[Kind]
    next: str | None


class MemorySource(TypedDict):
    id: str
    agentRef: str
    variable: str
    kinds: NotRequired[list[str]]


class ScenarioRequest(TypedDict):
    id: str
    name: str
    memoryRuntime: NotRequired[Literal["personalization", "axon_go", "axon_shadow", "hinos"]]
    memorySources: NotRequired[list[MemorySource]]
    template: NotRequired[str]
    memoryIngest: NotRequired[Literal["best_effort", "required"]]
    commitOn: NotRequired[Literal["completed", "accepted"]]
    toolUpdates: NotRequired[bool]
    memorySchema: NotRequired[JSON]


class Scenario(ScenarioRequest):
    version: int
    createdAt: str
    updatedAt: str


class ScenarioVersion(TypedDict):
    """One recorded version of a scenario (`hub.scenarios.iter_versions`), newest first."""

    version: int
    scenario: dict[str, JSON]  # the scenario as it was at this version
    actor: str  # who made the change: an API key's or an admin user's name
    createdAt: str


class Stage(TypedDict):
    stage: str
    key: str
    data: JSON
    committedAt: str


class CheckpointResult(Stage):
    taskId: str


class ReportBody(TypedDict):
    data: JSON
    publishedAt: str


class ReportResult(TypedDict):
    taskId: str
    report: ReportBody


class Task(TypedDict):
    taskId: str
    key: str
    input: JSON
    stages: list[Stage]
    report: ReportBody | None


class SourceStatus(TypedDict):
    id: str
    agentRef: str
    variable: str
    status: str
    details: dict[str, JSON]
    cached: bool
    version: NotRequired[int]


class PreparedTurn(TypedDict):
    """`POST …/turns`: the schema's `Turn`."""

    turnId: int
    round: int
    runtime: str
    scenarioId: str
    scenarioVersion: int
    status: str
    prompt: str
    variables: dict[str, str]
    referencedVariables: list[str]
    unreferencedVariables: list[str]
    sources: list[SourceStatus]
    requestId: str | None
    witness: NotRequired[dict[str, JSON]]  # group scenes: name, userName, present (docs/roleplay.md)


class MemoryWrite(TypedDict):
    status: Literal["pending", "done", "failed", "skipped", "committed"]
    reason: NotRequired[str]
    work: NotRequired[dict[str, str]]


class Completion(TypedDict):
    """`…/complete`, `…/accept`."""

    turnId: int
    status: str
    round: int
    committed: bool
    memoryWrite: MemoryWrite


class Turn(PreparedTurn):
    """`GET …/turns/{id}` (the schema's `TurnDetail`): the prepared turn, its completion and `runtimeState`."""

    committed: bool
    memoryWrite: MemoryWrite
    runtimeState: JSON
    replacesTurnId: int | None  # the turn whose reply this one regenerated
    rollback: dict[str, JSON] | None  # what superseding or selecting this turn undid or wrote again


TurnDetail = Turn


class Message(TypedDict):
    id: int
    turnId: int | None
    round: int
    role: str
    content: str
    superseded: bool
    deleted: bool  # removed by DELETE …/messages/{id} (kept, never shown)
    name: NotRequired[str]  # the speaking character
    present: NotRequired[list[str]]  # the characters present (witness scopes)
    createdAt: str


class Event(TypedDict):
    id: int
    type: str
    turnId: int | None
    details: dict[str, JSON]
    createdAt: str


class DiaryEntry(TypedDict):
    id: int
    roundFrom: int
    roundTo: int
    kind: str
    summary: str
    diary: str
    summarizer: str
    subscriptionCategory: str
    agentRef: str
    createdAt: str


class Table(TypedDict):
    """A memory table (tables/api.py table_to_dict)."""

    id: int
    index: int
    name: str
    columns: list[JSON]
    note: str
    rules: JSON
    required: bool
    maxRows: int | None
    rows: list[JSON]
    version: int
    updatedAt: str


class TableEdited(Table):
    """`replace_table`'s answer: the table, and whether the rows sent differed from the stored ones."""

    changed: bool  # false when the rows sent were the stored rows (no new version)


class TableList(TypedDict):
    tables: list[Table]
    memoryTable: str
    version: int


class TableVersion(TypedDict):
    version: int
    rows: list[JSON]
    cause: str
    actor: str | None
    turnId: int | None
    createdAt: str


class Record(TypedDict):
    category: str
    key: str
    value: JSON
    updatedRound: int


class State(TypedDict):
    revision: int
    text: str
    records: list[Record]


class Committed(TypedDict):
    revision: int


class StateRevision(TypedDict):
    revision: int
    text: str
    records: list[Record]
    changes: JSON
    scenarioId: str | None
    round: int | None
    actor: str
    operationId: str | None
    cause: Literal["write", "rollback", "reapply"]
    turnId: int | None  # the turn whose candidate wrote it (docs/roleplay.md)
    restoredFrom: int | None  # a rollback or reapply: the revision whose content it restored
    createdAt: str


class StoryEvent(TypedDict):
    id: str
    text: str
    round: int
    messageId: int


class Story(TypedDict):
    version: int
    anchorMessageId: int | None
    worldFacts: JSON
    events: list[StoryEvent]
    narrative: JSON


class StoryVersion(Story):
    cause: Literal["settlement", "rollback"]
    changes: JSON
    restoredFrom: int | None
    rolledBack: bool
    actor: str
    operationId: str | None
    createdAt: str


class Compaction(TypedDict):
    id: int
    version: int
    previousId: int | None
    summary: str
    fromMessageId: int
    throughMessageId: int
    messageCount: int
    roundFrom: int
    roundTo: int
    trigger: str
    turnId: int | None
    summarizer: str
    budgetChars: int
    historyChars: int
    invalidated: bool
    invalidatedAt: str | None
    invalidatedByTurnId: int | None
    createdAt: str


class ToolTokenMinted(TypedDict):
    id: str
    token: str
    expiresAt: str


class ToolTokenState(TypedDict):
    id: str
    userId: str
    conversationId: str
    scenarioId: str | None
    createdAt: str
    expiresAt: str
    revokedAt: str | None


class ToolTokensRevoked(TypedDict):
    revoked: int


class ToolList(TypedDict):
    """`GET /v1/tools`: the tools this token may call, OpenAI function style."""

    tools: list[dict[str, JSON]]


class ToolCallResult(TypedDict):
    """`POST /v1/tools/call`: the tool's answer is in `details`."""

    details: dict[str, JSON]


class Webhook(TypedDict):
    id: int
    url: str
    description: str
    events: list[str]
    enabled: bool
    previousSecretExpiresAt: str | None
    createdAt: str
    updatedAt: str


class WebhookWithSecret(Webhook):
    secret: str


class Attempt(TypedDict):
    number: int
    trigger: str
    outcome: str
    statusCode: int | None
    latencyMs: int | None
    responseExcerpt: str
    error: str
    at: str


class Delivery(TypedDict):
    id: int
    messageId: str
    type: str
    status: str
    attempts: list[Attempt]
    nextAttemptAt: str | None
    deliveredAt: str | None
    payload: JSON
    createdAt: str


class ExportStarted(TypedDict):
    exportId: str
    status: str


class Export(ExportStarted):
    counts: dict[str, int]
    sizeBytes: int | None
    requestedAt: str
    finishedAt: str | None
    expiresAt: str | None
    downloadUrl: str | None


class ImportStarted(TypedDict):
    importId: str
    status: str


class Import(ImportStarted):
    report: dict[str, JSON]
    requestedAt: str
    finishedAt: str | None


class ErasureStarted(TypedDict):
    erasureId: str
    status: str


class Erasure(ErasureStarted):
    scope: str
    counts: dict[str, int]
    requestedBy: str
    requestedAt: str
    finishedAt: str | None


class Product(TypedDict):
    productId: str
    name: str
    createdAt: str
    retention: JSON


# TypedDict → the OpenAPI component it must match (checked against the live schema by the tests).
SCHEMA_COMPONENTS: dict[str, type] = {
    "MemoryRevision": MemoryRevision,
    "Memory": Memory,
    "SearchResult": SearchResult,
    "SearchPage": SearchPage,
    "Kind": Kind,
    "KindList": KindList,
    "Scenario": Scenario,
    "ScenarioRequest": ScenarioRequest,
    "ScenarioVersion": ScenarioVersion,
    "Turn": PreparedTurn,
    "TurnDetail": Turn,
    "Completion": Completion,
    "Message": Message,
    "Event": Event,
    "Table": Table,
    "TableEdited": TableEdited,
    "TableList": TableList,
    "TableVersion": TableVersion,
    "ToolList": ToolList,
    "ToolCallResult": ToolCallResult,
    "Stage": Stage,
    "CheckpointResult": CheckpointResult,
    "ReportBody": ReportBody,
    "ReportResult": ReportResult,
    "Task": Task,
    "DiaryEntry": DiaryEntry,
    "Record": Record,
    "State": State,
    "Committed": Committed,
    "Revision": StateRevision,
    "StoryEvent": StoryEvent,
    "Story": Story,
    "StoryVersion": StoryVersion,
    "Compaction": Compaction,
    "ToolTokenMinted": ToolTokenMinted,
    "ToolTokenState": ToolTokenState,
    "ToolTokensRevoked": ToolTokensRevoked,
    "Webhook": Webhook,
    "WebhookWithSecret": WebhookWithSecret,
    "Attempt": Attempt,
    "Delivery": Delivery,
    "ExportStarted": ExportStarted,
    "Export": Export,
    "ImportStarted": ImportStarted,
    "Import": Import,
    "ErasureStarted": ErasureStarted,
    "Erasure": Erasure,
    "Product": Product,
}

# Fields the server sends that the schema's component does not list yet.
NOT_IN_SCHEMA: dict[str, set[str]] = {}

# operationId → TypedDict for responses the schema does not type yet: none today (the schema types every answer
# the client returns; their TypedDicts are in SCHEMA_COMPONENTS).
UNTYPED_IN_SCHEMA: dict[str, type] = {}
