"""Swipes and rollback over HTTP: select a reply of its round, edit or delete a stored message (docs/roleplay.md)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.services.branches import turn_select
from memories.services.messages import MessageChange, message_delete, message_edit
from memories.validation import MAX_MESSAGE_CHARS
from memoryhub.api.common import conversation_address, optional_body, validated
from memoryhub.api.fields import EmptyBodySerializer, StrictCharField, StrictSerializer

from .serializers.turns import completion_to_dict


class MessageEditSerializer(StrictSerializer):
    content = StrictCharField(
        max_length=MAX_MESSAGE_CHARS["assistant"],
        allow_blank=True,
        trim_whitespace=False,
        help_text=f"A reply: at most {MAX_MESSAGE_CHARS['assistant']:,} characters; a user message at most "
        f"{MAX_MESSAGE_CHARS['user']:,}, as a prepare's userMessage (else 400 naming content).",
    )


class RollbackSerializer(serializers.Serializer):
    """What superseding (or selecting) a turn did to each kind of derived write."""

    action = serializers.ChoiceField(["rolled_back", "reapplied"])
    cause = serializers.ChoiceField(["regenerate", "edit", "delete", "select"])
    status = serializers.ChoiceField(
        ["ok", "conflict"],
        help_text="conflict: a kind's artefact was written after "
        "the turn by someone else and was left as it is (kinds.<kind>.status)",
    )
    kinds = serializers.DictField(
        child=serializers.JSONField(), help_text="e.g. tables, state, story, compact, longterm"
    )
    byTurnId = serializers.IntegerField(
        required=False, allow_null=True, help_text="rolled_back: the turn that superseded it (null for a delete)"
    )
    displacedTurnId = serializers.IntegerField(
        required=False, allow_null=True, help_text="reapplied: the reply this select superseded"
    )
    at = serializers.DateTimeField()


class SelectedSerializer(serializers.Serializer):
    turnId = serializers.IntegerField()
    status = serializers.CharField()
    round = serializers.IntegerField()
    changed = serializers.BooleanField(help_text="false: the turn was the current reply already")
    rollback = RollbackSerializer(
        allow_null=True, help_text="what was written again for the selected turn; null when nothing changed"
    )
    displaced = serializers.ListField(child=serializers.DictField(), help_text="[{turnId, rollback}] superseded now")


class MessageChangedSerializer(serializers.Serializer):
    turnId = serializers.IntegerField(help_text="edit: the new turn; delete: the superseded turn")
    status = serializers.CharField()
    round = serializers.IntegerField()
    messageIds = serializers.ListField(child=serializers.IntegerField())
    changed = serializers.BooleanField()
    rollback = RollbackSerializer(
        allow_null=True, help_text="what superseding the old turn undid; an unchanged edit: the turn's own, or null"
    )


_ERRORS = {
    404: OpenApiResponse(description="not_found: no such turn or message in this conversation (of this product)"),
    400: OpenApiResponse(description="invalid_request: a malformed body"),
}


class TurnSelectView(APIView):
    @extend_schema(
        request=EmptyBodySerializer,  # no body at all is read as {}
        responses={
            200: SelectedSerializer,
            **_ERRORS,
            409: OpenApiResponse(
                description="turn_not_selectable: not a committed reply that was superseded (e.g. a regeneration "
                "waiting for its accept: accept it instead)"
            ),
        },
        operation_id="turns_select",
        description="Swipe back: the turn (a superseded reply of its round) becomes the current reply; the round's "
        "current reply is superseded and its derived writes rolled back, then this turn's are written again.",
    )
    def post(self, request, user_id: str, conversation_id: str, turn_id: int):
        address = conversation_address(request, user_id, conversation_id)
        validated(EmptyBodySerializer, optional_body(request))
        selection = turn_select(address=address, turn_id=turn_id)
        turn = selection.turn
        body = {
            "turnId": turn.pk,
            "status": turn.status,
            "round": turn.round,
            "changed": selection.changed,
            "rollback": turn.rollback or None,  # the current reply selected again: nothing was written
            "displaced": selection.displaced,
        }
        return Response(body)


def _changed(change: MessageChange) -> dict:
    completion = completion_to_dict(change.turn)
    return {
        **{k: completion[k] for k in ("turnId", "status", "round")},
        "messageIds": change.message_ids,
        "changed": change.changed,
        "rollback": change.rollback or None,  # an unchanged edit of a turn never superseded nor selected: {}
    }


class MessageEditView(APIView):
    @extend_schema(
        request=MessageEditSerializer,
        responses={
            200: MessageChangedSerializer,
            **_ERRORS,
            409: OpenApiResponse(
                description="message_superseded: the message is not current; turn_superseded: another reply of "
                "its round was made current (a concurrent regeneration or select) before the edit's new turn committed"
            ),
        },
        operation_id="messages_edit",
        description="Edit a stored user message or reply: a new turn of the same round replaces the message's turn, "
        "whose derived writes are rolled back; the new turn then commits and its own work applies.",
    )
    def post(self, request, user_id: str, conversation_id: str, message_id: int):
        address = conversation_address(request, user_id, conversation_id)
        data = validated(MessageEditSerializer, request.data)
        return Response(_changed(message_edit(address=address, message_id=message_id, content=data["content"])))


class MessageDetailView(APIView):
    @extend_schema(
        responses={
            200: MessageChangedSerializer,
            **_ERRORS,
            409: OpenApiResponse(description="message_superseded: the message is not current"),
        },
        operation_id="messages_delete",
        description="Delete a user message (and its reply) or a reply: its turn is superseded with no replacement "
        "and its derived writes rolled back. Messages are marked deleted, never removed.",
    )
    def delete(self, request, user_id: str, conversation_id: str, message_id: int):
        address = conversation_address(request, user_id, conversation_id)
        return Response(_changed(message_delete(address=address, message_id=message_id)))
