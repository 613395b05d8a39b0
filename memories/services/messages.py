"""Editing and deleting a stored message: the turn it belongs to is superseded and its derived writes undone.

An edit is a new turn of the same round (the old turn's prompt and the other message copied, the edited text in
place) that replaces the old one: the old turn's writes are rolled back (memories/services/branches.py), then the
new turn commits like any completed reply, so its own background work (e.g. its `<tableEdit>`) applies. A delete
supersedes the turn with no replacement; deleting the user message removes its reply too, deleting the reply keeps
the user message visible. Nothing is removed from the database: messages are marked, turns keep their history.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memories.models import Conversation, Message, Turn
from memories.services.branches import turn_supersede
from memories.services.events import event_emit_for_turn
from memories.services.turns import turn_commit
from memories.signals import messages_stored
from memories.validation import validate_message_length
from memoryhub.addresses import ConversationAddress
from memoryhub.errors import Conflict, NotFound

_COPIED = (
    "product_id",
    "conversation_row_id",
    "user_id",
    "conversation_id",
    "scenario_id",
    "scenario_slug",
    "scenario_version",
    "runtime",
    "round",
    "subscription_category",
    "user_message",
    "assistant_message",
    "prompt",
    "variables",
    "referenced_variables",
    "unreferenced_variables",
    "sources",
    "runtime_state",
    "witness",
)


@dataclass(frozen=True)
class MessageChange:
    turn: Turn  # the new turn of an edit; the superseded turn of a delete
    message_ids: list[int]  # the edit's new messages, or the messages deleted
    rollback: dict
    changed: bool = True


def _live_message(address: ConversationAddress, message_id: int) -> Message:
    Conversation.objects.select_for_update(no_key=True).filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    ).first()
    message = (
        Message.objects.select_related("turn")
        .filter(
            pk=message_id, product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        .first()
    )
    if message is None:
        raise NotFound(f"no message {message_id} in this conversation")
    if message.superseded or message.deleted:
        what = "deleted" if message.deleted else "superseded"
        raise Conflict(
            f"message {message_id} was {what}; edit the current message",
            code="message_superseded",
            details={"messageId": message_id, "turnId": message.turn_id},
        )
    return message


def message_edit(*, address: ConversationAddress, message_id: int, content: str) -> MessageChange:
    with transaction.atomic():
        message = _live_message(address, message_id)
        validate_message_length(message.role, content, "content")
        old = message.turn
        if message.content == content:  # nothing to change: the turn's messages, as a real edit answers its own
            kept = Message.objects.filter(turn=old, deleted=False).order_by("pk").values_list("pk", flat=True)
            return MessageChange(old, list(kept), old.rollback, changed=False)
        if old.status == "superseded":  # a user message whose reply was deleted: no reply to keep beside it
            raise Conflict(
                f"message {message_id} lost its reply (deleted); delete it and send a new message",
                code="message_superseded",
                details={"messageId": message_id, "turnId": old.pk},
            )
        new = Turn(**{name: getattr(old, name) for name in _COPIED})
        new.request_id, new.replaces_id, new.status, new.completed_at = (
            uuid.uuid4().hex,
            old.pk,
            "completed",
            timezone.now(),
        )
        setattr(new, "user_message" if message.role == "user" else "assistant_message", content)
        new.save()
        common = dict(
            product_id=new.product_id, user_id=new.user_id, conversation_id=new.conversation_id, round=new.round
        )
        witness = new.witness or {}  # the edited round keeps its speakers and who was present
        present = witness.get("present", [])
        created = Message.objects.bulk_create(
            [
                Message(role="user", content=new.user_message, turn=new, name=witness.get("userName", ""),
                        present=present, **common),
                Message(role="assistant", content=new.assistant_message, turn=new, name=witness.get("name", ""),
                        present=present, **common),
            ]
        )  # fmt: skip
        messages_stored.send(sender=Message, messages=created)  # indexed for history search like any turn's
        report = turn_supersede(old.pk, by_turn_pk=new.pk, cause="edit")
        event_emit_for_turn(
            new, "message.edited", {"messageId": message_id, "role": message.role, "replacedTurnId": old.pk}
        )
    if old.status == "committed":
        new = turn_commit(turn=Turn.objects.select_related("product", "scenario").get(pk=new.pk))
    return MessageChange(new, [m.pk for m in created], report)


def message_delete(*, address: ConversationAddress, message_id: int) -> MessageChange:
    with transaction.atomic():
        message = _live_message(address, message_id)
        turn = message.turn
        gone = Message.objects.filter(turn=turn) if message.role == "user" else Message.objects.filter(pk=message.pk)
        ids = sorted(gone.values_list("pk", flat=True))
        Message.objects.filter(pk__in=ids).update(deleted=True)
        report = turn_supersede(turn.pk, by_turn_pk=None, cause="delete")
        Message.objects.filter(turn=turn, deleted=False).update(superseded=False)  # a kept user message stays visible
        event_emit_for_turn(turn, "message.deleted", {"messageId": message_id, "role": message.role, "messageIds": ids})
    turn.refresh_from_db()
    return MessageChange(turn, ids, report)
