"""Frozen data passed between the turn pipeline, runtimes and variable producers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from memoryhub.addresses import ConversationAddress

SourceStatus = Literal["ok", "empty", "error", "unavailable"]
# The user's plans, free first: the one definition (turns, tool tokens, diary planning and recall read it).
SUBSCRIPTION_CATEGORIES = ("default", "plus", "ultra", "max")


class InvalidSubscriptionCategory(ValueError):
    """`subscriptionCategory` is not one of SUBSCRIPTION_CATEGORIES (the API maps this to 400)."""

    field = "subscriptionCategory"

    def __init__(self, value: object):
        allowed = ", ".join(SUBSCRIPTION_CATEGORIES)
        super().__init__(f"subscriptionCategory must be one of {allowed} (or absent), got {value!r}")
        self.value = value


def normalize_subscription_category(category: object) -> str:
    """Absent (None) means the free category; anything outside the four names is refused."""
    if category is None:
        return SUBSCRIPTION_CATEGORIES[0]
    if isinstance(category, str) and category in SUBSCRIPTION_CATEGORIES:
        return category
    raise InvalidSubscriptionCategory(category)


@dataclass(frozen=True)
class SourceConfig:
    """One entry of a scenario's memorySources."""

    id: str
    agent_ref: str
    variable: str
    priority: int | None = None
    # The source's own fields that its variable's registration accepts (registry.register_source(options=…)).
    options: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class RecallRequest:
    """Everything a producer may use; identity comes from the authenticated product, never from model output."""

    address: ConversationAddress  # the conversation recalled for: producers pass it on, never rebuild it
    source: SourceConfig
    scenario: Any = None
    user_message: str = ""
    subscription_category: str | None = None
    round: int = 0
    replaces_turn_id: int | None = None  # set when this turn regenerates a completed reply of the same round
    # The character this turn's reply is for (witness scopes): sources reading messages read only what it witnessed.
    character: str | None = None

    @property
    def product(self) -> Any:
        return self.address.product

    @property
    def user_id(self) -> str:
        return self.address.user_id

    @property
    def conversation_id(self) -> str:
        return self.address.conversation_id


@dataclass(frozen=True)
class SourceResult:
    """What one source produced for a turn, with the revision/version it was read at."""

    text: str
    status: SourceStatus
    revision: int | None = None
    version: int | None = None
    details: dict = field(default_factory=dict)
    cached: bool = False
    # The texts of the source's further variables, by part (registry.Source.parts); a missing part is "".
    parts: dict[str, str] = field(default_factory=dict)


class Producer(Protocol):
    def __call__(self, request: RecallRequest) -> SourceResult: ...


@dataclass(frozen=True)
class TurnContext:
    """The input of a runtime's recall for one turn."""

    product: Any
    user_id: str
    conversation_id: str
    scenario: Any
    sources: tuple[SourceConfig, ...]
    user_message: str
    subscription_category: str | None
    round: int
    request_id: str
    # Formal user/assistant messages before this turn (empty unless runtime.uses_history).
    history: tuple[dict, ...] = ()
    replaces_turn_id: int | None = None
    character: str | None = None  # the replying character in a group scene (witness scopes)


@dataclass(frozen=True)
class Recall:
    """A runtime's answer: variable texts, one status per source, and runtime state kept with the turn."""

    variables: dict[str, str]
    sources: list[dict]
    state: dict = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryWrite:
    """What happened to the memory write of a committed turn (separate from the reply being stored)."""

    status: Literal["committed", "failed", "skipped", "pending"]
    reason: str | None = None

    def as_dict(self) -> dict:
        return {"status": self.status, **({"reason": self.reason} if self.reason else {})}


class Runtime(Protocol):
    name: str
    allowed_variables: frozenset[str]

    def validate_sources(self, sources: list[SourceConfig]) -> dict[str, str]: ...

    def recall(self, context: TurnContext) -> Recall: ...

    def commit(self, turn: Any) -> MemoryWrite | None: ...


def empty_result(reason: str) -> SourceResult:
    return SourceResult(text="", status="empty", details={"reason": reason})
