"""The MCP tools (docs/mcp.md): each is a JSON Schema, a result schema and one call of an existing service or selector.

Identity comes from the tool token alone (`Caller`): no tool takes a product, user or conversation, so a model has
no argument with which to reach another conversation. Writing tools are withheld (not offered, refused on call)
when the token's scenario says `toolUpdates: false`, exactly as `update_memory` is on `/v1/tools`.
Failures are domain errors; the HTTP edge turns them into in-band tool errors the model reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from jsonschema import Draft202012Validator

from diaries.producers import recall_count, render_summaries
from diaries.selectors import diary_agent_ref, diary_recent_summaries
from lorebooks import formats as lore_formats
from lorebooks.models import Lorebook
from lorebooks.producers import AGENT_REF as LOREBOOK_AGENT_REF
from lorebooks.selectors import live_entries, lorebook_get
from lorebooks.services import proposal_submit
from memories.longterm.selectors import memory_search
from memories.models import Product, Scenario
from memories.services.runonce import request_fingerprint
from memories.services.tools import ToolToken, argument_field, tool_call, tool_token_authenticate, tool_updates_allowed
from memories.state.selectors import config_of, state_view
from memories.state.services import state_candidate_submit
from memories.story.selectors import render_story, story_get
from memoryhub import working_set
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress, UserAddress, run_address_checks
from memoryhub.errors import InvalidRequest, NotFound, RevisionConflict
from memoryhub.runtimes.base import InvalidSubscriptionCategory
from tables.applying import TableState
from tables.rendering import render_tables
from tables.selectors import tables_snapshot
from tables.services import tables_scope

from . import schemas


class Caller:
    """Who calls: the product, user and conversation (and scenario) of one valid tool token."""

    def __init__(self, product: Product, token: ToolToken) -> None:
        self.product = product
        self.token = token
        self.address = ConversationAddress(product, token.user_id, token.conversation_id)

    @cached_property
    def scenario(self) -> Scenario | None:
        if self.token.scenario_slug is None:
            return None
        return Scenario.objects.filter(product=self.product, slug=self.token.scenario_slug).first()

    @cached_property
    def may_write(self) -> bool:
        return tool_updates_allowed(product=self.product, token=self.token)

    @property
    def actor(self) -> Actor:
        return Actor("tool", self.token.token_id)


def caller_from_token(raw: str) -> Caller | None:
    """The caller a bearer credential names, or None: forged, expired, revoked (or its key), a product API key,
    or a deleted product."""
    found = tool_token_authenticate(raw)
    return None if found is None else Caller(found[1], found[0])


@dataclass(frozen=True)
class McpTool:
    """One tool: what the model sees (name, title, description, schemas) and the call behind it."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Caller, dict], dict]
    writes: bool = False
    offered_when: Callable[[Caller], bool] | None = None  # beyond toolUpdates, e.g. a scenario with a state section


def tool_offered(caller: Caller, tool: McpTool) -> bool:
    if tool.writes and not caller.may_write:
        return False
    return tool.offered_when is None or tool.offered_when(caller)


def tool_run(caller: Caller, tool: McpTool, arguments: dict) -> dict:
    """Validate the arguments against the tool's schema, check the address (e.g. an erasure), run the tool."""
    error = next(iter(Draft202012Validator(tool.input_schema).iter_errors(arguments)), None)
    if error is not None:
        field = argument_field(error)
        raise InvalidRequest(f"invalid arguments for {tool.name}: {error.message}", details={"field": field})
    run_address_checks(caller.product, caller.token.user_id, caller.token.conversation_id)
    return tool.run(caller, arguments)


# ----------------------------------------------------------------------------------------- the calls


def _memory_tool(name: str) -> Callable[[Caller, dict], dict]:
    def run(caller: Caller, arguments: dict) -> dict:
        return tool_call(product=caller.product, token=caller.token, name=name, arguments=arguments)

    return run


def _search(caller: Caller, arguments: dict) -> dict:
    page = memory_search(
        UserAddress(caller.product, caller.token.user_id),
        mode=arguments["mode"],
        query=arguments["query"],
        limit=arguments.get("limit", 10),
        cursor=arguments.get("cursor"),
    )
    results = [
        {
            "id": row.memory_id,
            "kind": row.kind,
            "content": row.content,
            "evidence": row.evidence,
            "version": row.version,
            "score": round(score, 6),
            "updatedAt": row.updated_at.isoformat().replace("+00:00", "Z"),
        }
        for row, score in page.results
    ]
    return {"mode": page.mode, "query": arguments["query"], "next": page.next, "results": results}


def _diaries(caller: Caller, arguments: dict) -> dict:
    category = caller.token.subscription_category or "default"
    try:
        count = recall_count(category)
    except InvalidSubscriptionCategory as exc:
        raise InvalidRequest(str(exc), details={"field": "subscriptionCategory"}) from None
    entries = diary_recent_summaries(
        product=caller.product,
        user_id=caller.token.user_id,
        conversation_id=caller.token.conversation_id,
        limit=count,
        agent_ref=diary_agent_ref(caller.scenario),
    )
    shaped = [
        {"id": e["id"], "roundFrom": e["round_from"], "roundTo": e["round_to"], "summary": e["summary"]}
        for e in entries
    ]
    return {"subscriptionCategory": category, "limit": count, "entries": shaped, "text": render_summaries(entries)}


def _tables(caller: Caller, arguments: dict) -> dict:
    snapshot, _ = working_set.get_or_build(tables_scope(caller.address), lambda: tables_snapshot(caller.address))
    states = [TableState.from_dict(table) for table in snapshot]
    tables = [
        {
            "id": table["id"],
            "index": index,
            "name": state.name,
            "version": table["version"],
            "columns": state.columns,
            "rows": state.rows,
        }
        for index, (table, state) in enumerate(zip(snapshot, states, strict=True))
    ]
    return {"tables": tables, "text": render_tables(states)}


def _state(caller: Caller, arguments: dict) -> dict:
    return state_view(caller.address, view="background", scenario_slug=None)


def _has_state_section(caller: Caller) -> bool:
    return config_of(caller.scenario) is not None


def _propose_state(caller: Caller, arguments: dict) -> dict:
    assert caller.token.scenario_slug is not None  # offered only with a scenario that has a state section
    body = {**arguments, "scenarioId": caller.token.scenario_slug}
    try:
        outcome = state_candidate_submit(
            address=caller.address,
            body=body,
            actor=caller.actor,
            request_hash=request_fingerprint("MCP", "tools/call/propose_state", body),
        )
    except RevisionConflict as exc:
        raise RevisionConflict(
            exc.current, message=f"the state changed (now revision {exc.current}): call get_state, then propose again"
        ) from None
    return {"revision": outcome.revision, "replayed": outcome.replayed}


def _story(caller: Caller, arguments: dict) -> dict:
    story = story_get(caller.address)
    return {**story, "text": render_story(story)}


def _scenario_lorebooks(caller: Caller) -> list[str]:
    """The lorebooks the token's scenario recalls: the only ones its model may read or edit."""
    if caller.scenario is None:
        return []
    names: list[str] = []
    for source in caller.scenario.sources.all():
        if source.agent_ref == LOREBOOK_AGENT_REF:
            names.extend(b for b in (source.options or {}).get("lorebooks", []) if b not in names)
    return names


def _wanted_lorebooks(caller: Caller, lorebook: str | None) -> list[str]:
    names = _scenario_lorebooks(caller)
    if lorebook is not None and lorebook not in names:
        raise NotFound(f"the scenario recalls no lorebook {lorebook!r}; it recalls {', '.join(names)}")
    return names if lorebook is None else [lorebook]


def _lorebook_entries(caller: Caller, arguments: dict) -> dict:
    books = []
    for slug in _wanted_lorebooks(caller, arguments.get("lorebook")):
        book = Lorebook.objects.filter(product=caller.product, slug=slug).first()
        if book is not None:
            entries = [
                {"uid": e.uid, "revision": e.revision, "entry": lore_formats.view_of(book.format, e.data)}
                for e in live_entries(book)
            ]
            books.append({"id": slug, "entries": entries})
    return {"lorebooks": books}


def _propose_lorebook_edit(caller: Caller, arguments: dict) -> dict:
    """A model's entry edit is a proposal: stored pending, committed when the product or an operator accepts it."""
    slug = _wanted_lorebooks(caller, arguments["lorebook"])[0]
    try:
        proposal = proposal_submit(
            lorebook=lorebook_get(product=caller.product, slug=slug),
            uid=arguments["uid"],
            base_revision=arguments["baseRevision"],
            changes=arguments["entry"],
            reason=arguments.get("reason", ""),
            actor=caller.actor,
        )
    except RevisionConflict as exc:
        raise RevisionConflict(
            exc.current, message=f"the entry changed (now revision {exc.current}): read it again, then propose"
        ) from None
    return {"proposalId": proposal.pk, "status": proposal.status}


def _memory_text(name: str) -> str:
    return str(MEMORY_DESCRIPTIONS[name])


MEMORY_DESCRIPTIONS = {name: definition["function"]["description"] for name, definition in schemas.MEMORY_TOOLS.items()}

TOOLS: tuple[McpTool, ...] = (
    McpTool(
        "get_memory",
        "Read the conversation's memory",
        _memory_text("get_memory"),
        schemas.GET_MEMORY_INPUT,
        schemas.GET_MEMORY_OUTPUT,
        _memory_tool("get_memory"),
    ),
    McpTool(
        "update_memory",
        "Replace the conversation's memory",
        _memory_text("update_memory"),
        schemas.UPDATE_MEMORY_INPUT,
        schemas.UPDATE_MEMORY_OUTPUT,
        _memory_tool("update_memory"),
        writes=True,
    ),
    McpTool(
        "search_memories",
        "Search the user's long-term memories",
        "Search the user's long-term memories (preferences and other searchable kinds) by keyword or by meaning. "
        "Results carry id, version and score; pass `next` as cursor for more.",
        schemas.SEARCH_INPUT,
        schemas.SEARCH_OUTPUT,
        _search,
    ),
    McpTool(
        "get_diaries",
        "Read the conversation's diaries",
        "The newest diary summaries of this conversation, as many as the user's plan allows, newest first.",
        schemas.NO_ARGUMENTS,
        schemas.DIARIES_OUTPUT,
        _diaries,
    ),
    McpTool(
        "get_tables",
        "Read the conversation's memory tables",
        "The conversation's memory tables: rows, versions and the rendered text models are prompted with.",
        schemas.NO_ARGUMENTS,
        schemas.TABLES_OUTPUT,
        _tables,
    ),
    McpTool(
        "get_state",
        "Read the conversation's state",
        "The conversation's state: revision, running notes and records. Read it before propose_state.",
        schemas.NO_ARGUMENTS,
        schemas.STATE_OUTPUT,
        _state,
        offered_when=_has_state_section,
    ),
    McpTool(
        "propose_state",
        "Propose a state change",
        "Propose a change to the conversation's state (upserts and deletes of records, new notes) on the revision "
        "you read. It is validated against the scenario and committed only if the state is still at baseRevision; "
        "on a conflict, call get_state and decide again.",
        schemas.PROPOSE_STATE_INPUT,
        schemas.PROPOSE_STATE_OUTPUT,
        _propose_state,
        writes=True,
        offered_when=_has_state_section,
    ),
    McpTool(
        "get_story",
        "Read the story so far",
        "The settled story of this conversation: world facts, events and narrative, with a readable summary.",
        schemas.NO_ARGUMENTS,
        schemas.STORY_OUTPUT,
        _story,
    ),
    McpTool(
        "get_lorebook_entries",
        "Read the scenario's lorebook entries",
        "The entries of the lorebooks this scenario recalls (World Info fields), each with its revision.",
        schemas.LOREBOOK_ENTRIES_INPUT,
        schemas.LOREBOOK_ENTRIES_OUTPUT,
        _lorebook_entries,
        offered_when=lambda caller: bool(_scenario_lorebooks(caller)),
    ),
    McpTool(
        "propose_lorebook_entry_edit",
        "Propose a lorebook entry edit",
        "Propose changing fields of one entry of the scenario's lorebooks, on the revision you read (World Info "
        "fields; the others keep their values). The proposal waits for the product or an operator to accept it; "
        "on a conflict, call get_lorebook_entries and propose again.",
        schemas.PROPOSE_LOREBOOK_EDIT_INPUT,
        schemas.PROPOSE_LOREBOOK_EDIT_OUTPUT,
        _propose_lorebook_edit,
        writes=True,
        offered_when=lambda caller: bool(_scenario_lorebooks(caller)),
    ),
)
