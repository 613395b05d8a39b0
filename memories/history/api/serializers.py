"""Request and response shapes of history search, the index status and message import (camelCase)."""

from __future__ import annotations

from rest_framework import serializers

from memories.history.selectors import MODES
from memories.history.services.imports import MAX_MESSAGES
from memoryhub.api.fields import (
    IdentifierField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
)
from memoryhub.timefmt import iso

ROLES = ["user", "assistant"]


class HistorySearchSerializer(StrictSerializer):
    query = StrictCharField(max_length=1000)
    mode = serializers.ChoiceField(choices=list(MODES), required=False, default="hybrid")
    limit = StrictIntegerField(min_value=1, max_value=100, required=False, default=10)
    minScore = StrictFloatField(
        min_value=-1.0,
        max_value=1.0,
        required=False,
        help_text=(
            "Floor on the semantic cosine (semantic and hybrid; keyword ignores it): a message below it is not a "
            "semantic hit. Hybrid defaults to SEARCH_MIN_SCORE, unset the floor measured for the configured "
            "embedder (0.15 for the bundled default, 0.18 for e5-minilm); -1 turns it off. Semantic: none unless given."
        ),
    )
    conversations = serializers.ListField(
        child=IdentifierField(),
        min_length=1,
        max_length=100,
        required=False,
        help_text="Only these conversations (1-100 ids; an empty list is 400, leave the field out for all).",
    )
    after = serializers.DateTimeField(required=False, help_text="Only messages created at or after (ISO 8601).")
    before = serializers.DateTimeField(required=False, help_text="Only messages created before (ISO 8601).")
    roles = serializers.ListField(
        child=StrictCharField(), min_length=1, max_length=2, required=False, help_text='"user" and/or "assistant".'
    )

    def validate_roles(self, value: list[str]) -> list[str]:
        # Checked here, not by a ChoiceField: the schema would name the import's role enum twice.
        if any(role not in ROLES for role in value):
            raise serializers.ValidationError('each role must be "user" or "assistant"')
        return value

    def validate(self, attrs):
        if attrs.get("after") and attrs.get("before") and attrs["after"] >= attrs["before"]:
            raise serializers.ValidationError({"before": "must be later than after"})
        return attrs


class HistoryHitSerializer(serializers.Serializer):
    messageId = serializers.IntegerField(help_text="The message's id in the history index.")
    conversationId = serializers.CharField()
    round = serializers.IntegerField()
    role = serializers.CharField(help_text='"user" or "assistant".')
    name = serializers.CharField(
        help_text="The speaker's name: an imported message's `name`; for a turn's message its witness name (the "
        "prepare's `name` on the reply, `userName` on the user message); empty when none was given."
    )
    clientId = serializers.CharField(help_text="The product's id of an imported message; empty otherwise.")
    content = serializers.CharField()
    createdAt = serializers.DateTimeField()
    score = serializers.FloatField(help_text="hybrid: the fused RRF score; keyword: BM25; semantic: cosine.")
    why = serializers.JSONField(help_text='Each signal\'s rank and score ({"keyword": {"rank", "score"}, …, "fused"}).')


class HistorySearchResultSerializer(serializers.Serializer):
    results = HistoryHitSerializer(many=True)


class HistoryStatusSerializer(serializers.Serializer):
    messages = serializers.IntegerField(help_text="Indexed messages of the user (superseded ones included).")
    embedded = serializers.IntegerField(help_text="Of those, with a vector of the active embedding index.")
    pending = serializers.IntegerField(help_text="Still waiting for their vector (searchable by keyword already).")


class ClientIdField(StrictCharField):
    """The product's own id of a message: 1-128 printable characters (e.g. LoCoMo's "D1:3"), kept as sent: a space at
    an end is refused, not trimmed (docs/contract.md, "Request bodies"), so " m1 " never becomes a second m1."""

    def __init__(self, **kwargs):
        super().__init__(max_length=128, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.isprintable() or value != value.strip():
            raise serializers.ValidationError("must be 1-128 printable characters, no space at either end")
        return value


class ImportedMessageSerializer(StrictSerializer):
    clientId = ClientIdField(
        help_text="The product's id of the message: 1-128 printable characters (a tab, a newline, a no-break "
        "space or another non-printable character is 400), kept as sent: a space at either end is 400, never "
        "trimmed; unique within the request and the conversation (the same id with other role, name, content or "
        "time is 422)."
    )
    role = serializers.ChoiceField(choices=ROLES)
    content = StrictCharField(
        max_length=100_000, trim_whitespace=False, help_text="1-100,000 characters, kept as sent."
    )
    createdAt = serializers.DateTimeField()
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")


class MessageImportSerializer(StrictSerializer):
    messages = ImportedMessageSerializer(
        many=True,
        min_length=1,
        max_length=MAX_MESSAGES,
        help_text="1 to 1,000 messages, in order (an empty list or more than 1,000 is 400).",
    )


class MessageImportResultSerializer(serializers.Serializer):
    imported = serializers.IntegerField(help_text="Messages stored by this request.")
    existing = serializers.IntegerField(help_text="Messages already imported before (same clientId and content).")
    rounds = serializers.IntegerField(help_text="The conversation's round counter after the import.")


def hit_to_dict(hit) -> dict:
    entry = hit.entry
    return {
        "messageId": entry.pk,
        "conversationId": entry.conversation_id,
        "round": entry.round,
        "role": entry.role,
        "name": entry.name,
        "clientId": entry.client_id,
        "content": entry.content,
        "createdAt": iso(entry.created_at),
        "score": round(hit.score, 6),
        "why": hit.why,
    }
