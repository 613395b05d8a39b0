"""The `story` producer: world facts, the newest events and the narrative of the conversation's snapshot.

Served through the Redis working set; every settlement and rollback invalidates the entry before writing.
A prepare that regenerates a reply sees the story as the rollback will leave it: nothing settled on the
reply it replaces.
"""

from __future__ import annotations

from typing import Any

from memoryhub import working_set
from memoryhub.addresses import ConversationAddress
from memoryhub.runtimes.base import RecallRequest, SourceResult

from .selectors import assistant_message_ids, render_story, restore_point, snapshot_to_dict, story_get, story_row
from .services import story_scope


def _address(request: RecallRequest) -> ConversationAddress:
    return request.address


def produce_story(request: RecallRequest) -> SourceResult:
    address = _address(request)
    story, cached = working_set.get_or_build(story_scope(address), lambda: story_get(address))
    details: dict[str, Any] = {}
    if request.replaces_turn_id is not None and story["version"]:
        story, rewound = _without_replaced_reply(address, request.replaces_turn_id, story)
        if rewound:
            details["asBeforeReplacedReply"] = True
            cached = False
    details |= {"events": len(story["events"]), "facts": len(story["worldFacts"])}
    text = render_story(story)
    if not text:
        details["reason"] = "the story was never settled" if story["version"] == 0 else "the story is empty"
    return SourceResult(
        text=text, status="ok" if text else "empty", version=story["version"], details=details, cached=cached
    )


def _without_replaced_reply(
    address: ConversationAddress, replaced_turn_pk: int, story: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    row = story_row(address)
    point = restore_point(row, assistant_message_ids(replaced_turn_pk)) if row is not None else None
    if point is None:
        return story, False
    restored = snapshot_to_dict(point[0])
    return {**restored, "version": story["version"]}, True


def story_scopes(request: RecallRequest) -> list[working_set.Scope]:
    return [story_scope(_address(request))]
