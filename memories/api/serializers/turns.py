from __future__ import annotations

from rest_framework import serializers

from memories.validation import MAX_MESSAGE_CHARS
from memoryhub.api.fields import (
    CheckedLaterNamesField,
    IdentifierField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from memoryhub.runtimes import registry


class ScenarioSerializer(serializers.Serializer):
    """Documentation of the scenario body; validation is memories.scenario_validation (shared with the admin)."""

    id = serializers.CharField()
    name = serializers.CharField()
    memoryRuntime = serializers.ChoiceField([], required=False)  # the registered runtimes: see get_fields
    memorySources = serializers.ListField(child=serializers.DictField(), required=False)
    template = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="{{variable}} placeholders; at most MEMORYHUB_TEMPLATE_MAX_CHARS characters (default 100,000) "
        "and MEMORYHUB_TEMPLATE_MAX_PLACEHOLDERS placeholders counted with repeats (default 100).",
    )
    memoryIngest = serializers.ChoiceField(["best_effort", "required"], required=False)
    commitOn = serializers.ChoiceField(["completed", "accepted"], required=False)
    toolUpdates = serializers.BooleanField(required=False)
    memorySchema = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="JSON Schema 2020-12 every memory write under this scenario must pass. Patterns run on RE2 "
        "(no backreferences or lookaround, at most 1,000 characters); $ref only '#' or '#/…' within the schema, "
        "never looping; a refused schema is 400 naming its JSON pointer (docs/contract.md).",
    )
    version = serializers.IntegerField(read_only=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["memoryRuntime"].choices = registry.runtime_names()  # read when built, so the schema shows the enum
        return fields


class TurnPrepareSerializer(StrictSerializer):
    scenarioId = StrictCharField(max_length=100)
    userMessage = StrictCharField(max_length=MAX_MESSAGE_CHARS["user"], allow_blank=True, trim_whitespace=False)
    subscriptionCategory = StrictCharField(required=False, allow_null=True)
    requestId = IdentifierField(required=False)
    replacesTurnId = StrictIntegerField(required=False, min_value=1)
    name = StrictCharField(
        required=False,
        max_length=100,
        help_text="Group scenes: the character who replies; recall keeps to what it witnessed.",
    )
    userName = StrictCharField(
        required=False, max_length=100, help_text="The user's persona, stored on the user message."
    )
    # A JSON field keeps the fast path (memoryhub/api/fast_validation.py); the turn service checks the list.
    present = CheckedLaterNamesField(
        required=False,
        help_text="The characters present this round (a list of at most 50 names, stored on both messages); "
        "none: everyone witnessed it.",
    )


class TurnCompleteSerializer(StrictSerializer):
    assistantMessage = StrictCharField(
        max_length=MAX_MESSAGE_CHARS["assistant"], allow_blank=True, trim_whitespace=False
    )


class ToolTokenSerializer(StrictSerializer):
    scenarioId = StrictCharField(required=False, allow_null=True, max_length=100)
    ttlSeconds = StrictIntegerField(required=False, min_value=1, max_value=24 * 3600)
    subscriptionCategory = StrictCharField(
        required=False,
        allow_null=True,
        max_length=32,
        help_text="The user's plan: how many diaries get_diaries serves (MCP).",
    )


class ToolTokenStateSerializer(serializers.Serializer):
    """A minted tool token as the revocation endpoints show it (never the token itself)."""

    id = serializers.CharField(help_text="ttk_…: names the token for revocation; tool writes record it as their actor")
    userId = serializers.CharField()
    conversationId = serializers.CharField()
    scenarioId = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()
    expiresAt = serializers.DateTimeField()
    revokedAt = serializers.DateTimeField(allow_null=True, help_text="set once revoked: the token is refused (401)")


class ToolTokenMintedSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="ttk_…: POST /v1/tool-tokens/{id}/revoke revokes this token")
    token = serializers.CharField(
        help_text="mht_…: shown once; valid until expiresAt while neither it nor its key is revoked"
    )
    expiresAt = serializers.DateTimeField()


class ToolTokensRevokedSerializer(serializers.Serializer):
    revoked = serializers.IntegerField(help_text="how many of the product's live tokens were revoked now")


class ToolCallSerializer(StrictSerializer):
    name = StrictCharField(max_length=64)
    arguments = serializers.JSONField()


def turn_to_dict(turn) -> dict:
    return {
        "turnId": turn.pk,
        "round": turn.round,
        "runtime": turn.runtime,
        "scenarioId": turn.scenario_slug,
        "scenarioVersion": turn.scenario_version,
        "status": turn.status,
        "prompt": turn.prompt,
        "variables": turn.variables,
        "referencedVariables": turn.referenced_variables,
        "unreferencedVariables": turn.unreferenced_variables,
        "sources": turn.sources,
        "requestId": turn.request_id,
        **({"witness": turn.witness} if turn.witness else {}),
    }


def completion_to_dict(turn) -> dict:
    return {
        "turnId": turn.pk,
        "status": turn.status,
        "round": turn.round,
        "committed": turn.status == "committed",
        "memoryWrite": memory_write_to_dict(turn.memory_write),
    }


def memory_write_to_dict(write: dict | None) -> dict:
    """status first, then reason and work: PostgreSQL's jsonb does not keep the stored key order."""
    write = write or {}
    order = ("status", "reason", "work")
    return {**{k: write[k] for k in order if k in write}, **{k: v for k, v in write.items() if k not in order}}
