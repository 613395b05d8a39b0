"""Reads of story snapshots: the current snapshot, its versions, the `story` text, and restore points."""

from __future__ import annotations

import json
from typing import Any

from memories.models import Message
from memoryhub.addresses import ConversationAddress
from memoryhub.pagination import keyset_page

from .models import StorySnapshot, StoryVersion

RECENT_EVENTS = 10


def empty_story() -> dict[str, Any]:
    return {"version": 0, "anchorMessageId": None, "worldFacts": {}, "events": [], "narrative": {}}


def story_row(address: ConversationAddress) -> StorySnapshot | None:
    return StorySnapshot.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    ).first()


def snapshot_to_dict(row: StorySnapshot | StoryVersion | None) -> dict[str, Any]:
    if row is None or row.version == 0:
        return empty_story()
    return {
        "version": row.version,
        "anchorMessageId": row.anchor_message_id,
        "worldFacts": row.world_facts,
        "events": row.events,
        "narrative": row.narrative,
    }


def story_get(address: ConversationAddress) -> dict[str, Any]:
    """The current snapshot; version 0 and empty when never written."""
    return snapshot_to_dict(story_row(address))


def story_versions_page(
    address: ConversationAddress, *, cursor: str | None, limit: int
) -> tuple[list[StoryVersion], str | None]:
    rows = StoryVersion.objects.filter(
        product=address.product,
        snapshot__user_id=address.user_id,
        snapshot__conversation_id=address.conversation_id,
    )
    return keyset_page(rows, field="version", descending=True, cursor=cursor, limit=limit)


def assistant_message_ids(turn_pk: int) -> list[int]:
    return list(Message.objects.filter(turn_id=turn_pk, role="assistant").values_list("pk", flat=True))


def restore_point(
    snapshot: StorySnapshot, invalid_anchors: list[int]
) -> tuple[StoryVersion | None, StoryVersion] | None:
    """Where a rollback goes when `invalid_anchors` are no longer valid anchors.

    None when no live version (one not rolled back already) is anchored on them. Otherwise (restore, first_bad):
    `first_bad` is the oldest live version anchored on one of them; everything from it on was built on that
    reply, so the story returns to the newest live version before it (`restore`; None: the empty story).
    """
    live = StoryVersion.objects.filter(snapshot=snapshot, rolled_back=False)
    first_bad = live.filter(anchor_message_id__in=invalid_anchors).order_by("version").first()
    if first_bad is None:
        return None
    restore = live.filter(version__lt=first_bad.version).order_by("-version").first()
    return restore, first_bad


# --- the `story` variable -------------------------------------------------------------------------------


def _value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_story(story: dict[str, Any], recent: int = RECENT_EVENTS) -> str:
    """World facts, the newest events (oldest of them first) and the narrative, as readable text."""
    parts = []
    if story["worldFacts"]:
        facts = "\n".join(f"- {key}: {_value(value)}" for key, value in sorted(story["worldFacts"].items()))
        parts.append(f"World facts:\n{facts}")
    if story["events"]:
        events = "\n".join(f"- (round {e['round']}) {e['text']}" for e in story["events"][-recent:])
        parts.append(f"Recent events:\n{events}")
    if story["narrative"]:
        narrative = "\n".join(f"- {key}: {_value(value)}" for key, value in story["narrative"].items())
        parts.append(f"Narrative:\n{narrative}")
    return "\n\n".join(parts)
