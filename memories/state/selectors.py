"""Reads of conversation state: the stored state, its projections (actor, background) and its history.

Every read is scoped by the address's product, so a foreign conversation is simply one never written.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from memories.models import Conversation, Scenario, Turn
from memories.selectors.scenarios import scenario_get
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import InvalidRequest
from memoryhub.pagination import keyset_page

from .models import ConversationState, ConversationStateRevision
from .validation import SECTION, StateConfig

View = Literal["actor", "background"]
VIEWS: tuple[View, ...] = ("actor", "background")
EMPTY: dict[str, Any] = {"revision": 0, "text": "", "records": []}


def state_row(address: ConversationAddress) -> ConversationState | None:
    return ConversationState.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    ).first()


def state_snapshot(address: ConversationAddress) -> dict[str, Any]:
    """The stored state as plain data (what the working set caches); the empty shape when never written."""
    row = state_row(address)
    if row is None or row.revision == 0:
        return dict(EMPTY)
    return {"revision": row.revision, "text": row.text, "records": row.records}


def scenario_state_config(product: Any, slug: str) -> StateConfig | None:
    """The scenario's "state" section (None when it declares none); NotFound for an unknown scenario."""
    return config_of(scenario_get(product=product, slug=slug))


def config_of(scenario: Any) -> StateConfig | None:
    section = (scenario.sections or {}).get(SECTION) if scenario is not None else None
    return StateConfig.from_section(section) if section else None


def state_rules(address: ConversationAddress) -> tuple[str, StateConfig] | None:
    """The scenario whose "state" section an operator's edit is checked against, and that section.

    The scenario of the latest revision that names one (a candidate's, or the turn's of a rollback), else the
    scenario of the conversation's latest turn. None when neither is known or the scenario no longer exists or
    no longer declares a state section: then only the shape of the records is checked (docs/state.md "Admin").
    """
    slug = (
        ConversationStateRevision.objects.filter(
            product=address.product,
            state__user_id=address.user_id,
            state__conversation_id=address.conversation_id,
        )
        .exclude(scenario_slug="")
        .order_by("-revision")
        .values_list("scenario_slug", flat=True)
        .first()
    ) or (
        Turn.objects.filter(product=address.product, user_id=address.user_id, conversation_id=address.conversation_id)
        .order_by("-id")
        .values_list("scenario_slug", flat=True)
        .first()
    )
    config = config_of(Scenario.objects.filter(product=address.product, slug=slug).first()) if slug else None
    return (slug, config) if slug and config is not None else None


def project(snapshot: dict[str, Any], view: View, config: StateConfig | None) -> dict[str, Any]:
    """`background`: everything. `actor`: only records of categories the scenario marks `actor: true`, in the
    scenario's category order, and no text (the text is the background's running notes)."""
    if view == "background":
        return {"revision": snapshot["revision"], "text": snapshot["text"], "records": list(snapshot["records"])}
    order = {name: index for index, name in enumerate(config.actor_categories if config else [])}
    records = sorted(
        (r for r in snapshot["records"] if r["category"] in order), key=lambda r: (order[r["category"]], r["key"])
    )
    return {"revision": snapshot["revision"], "text": "", "records": records}


def state_view(address: ConversationAddress, *, view: str, scenario_slug: str | None) -> dict[str, Any]:
    if view not in VIEWS:
        raise InvalidRequest("view must be 'actor' or 'background'", details={"field": "view"})
    config = None
    if view == "actor":
        if not scenario_slug:
            raise InvalidRequest(
                "the actor view needs ?scenario=ID: the scenario says which categories the actor sees",
                details={"field": "scenario"},
            )
        config = scenario_state_config(address.product, scenario_slug)
    return project(state_snapshot(address), "actor" if view == "actor" else "background", config)


def state_revisions_page(
    address: ConversationAddress, *, cursor: str | None, limit: int
) -> tuple[list[ConversationStateRevision], str | None]:
    rows = ConversationStateRevision.objects.filter(
        product=address.product,
        state__user_id=address.user_id,
        state__conversation_id=address.conversation_id,
    )
    return keyset_page(rows, field="revision", descending=True, cursor=cursor, limit=limit)


def conversation_rounds(address: ConversationAddress) -> int:
    rounds = (
        Conversation.objects.filter(
            product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        .values_list("rounds", flat=True)
        .first()
    )
    return rounds or 0


# --- rendering ------------------------------------------------------------------------------------------


def render_value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_records(records: list[dict], config: StateConfig | None = None) -> str:
    """Records grouped by category as readable lines: "relationships:\\n- alice: trusts the player"."""
    lines: list[str] = []
    current = None
    for record in records:
        if record["category"] != current:
            current = record["category"]
            category = config.category(current) if config else None
            lines.append(f"{current}{f' ({category.description})' if category and category.description else ''}:")
        lines.append(f"- {record['key']}: {render_value(record['value'])}")
    return "\n".join(lines)


def render_background(snapshot: dict[str, Any]) -> str:
    """The background projection as text (notes, then every record): the diary summariser's context."""
    parts = []
    if snapshot["text"].strip():
        parts.append(f"Notes:\n{snapshot['text'].strip()}")
    if snapshot["records"]:
        parts.append(render_records(snapshot["records"]))
    return "\n\n".join(parts)


def background_text(address: ConversationAddress) -> str:
    return render_background(state_snapshot(address))
