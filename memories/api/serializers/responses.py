"""The response bodies of the memory, scenario, turn and tool endpoints, as the OpenAPI document shows them.

tests/support/openapi.py checks every body the suite receives against these (closed objects: a key sent but not
declared here fails), so they and the `*_to_dict` functions that write the wire cannot drift apart.
"""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from .documents import MemoryReadSerializer, MemoryWriteResultSerializer
from .turns import ScenarioSerializer

JSON_OBJECT = serializers.DictField  # a free-form JSON object


@extend_schema_serializer(component_name="Scenario")  # the name clients know the scenario by
class ScenarioOutSerializer(ScenarioSerializer):
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class ScenarioPageSerializer(serializers.Serializer):
    results = ScenarioOutSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class ScenarioVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    scenario = JSON_OBJECT(help_text="The scenario as it was at this version.")
    actor = serializers.CharField(help_text="Who made the change: an API key's or an admin user's name.")
    createdAt = serializers.DateTimeField()


class ScenarioVersionPageSerializer(serializers.Serializer):
    results = ScenarioVersionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class CompletionSerializer(serializers.Serializer):
    turnId = serializers.IntegerField()
    status = serializers.CharField()
    round = serializers.IntegerField()
    committed = serializers.BooleanField()
    memoryWrite = JSON_OBJECT(help_text="status first, then reason and work (docs/contract.md#turns)")


class TurnSerializer(serializers.Serializer):
    turnId = serializers.IntegerField()
    round = serializers.IntegerField()
    runtime = serializers.CharField()
    scenarioId = serializers.CharField()
    scenarioVersion = serializers.IntegerField()
    status = serializers.CharField()
    prompt = serializers.CharField(help_text="The rendered template: what the model is given.")
    variables = JSON_OBJECT(help_text="Every variable recalled for the template, by name.")
    referencedVariables = serializers.ListField(child=serializers.CharField())
    unreferencedVariables = serializers.ListField(child=serializers.CharField())
    sources = serializers.ListField(child=JSON_OBJECT(), help_text="What each memory source answered.")
    requestId = serializers.CharField(allow_blank=True)
    witness = JSON_OBJECT(required=False, help_text="group scenes: name, userName, present (docs/roleplay.md)")


class TurnDetailSerializer(TurnSerializer):
    committed = serializers.BooleanField()
    memoryWrite = JSON_OBJECT()
    runtimeState = JSON_OBJECT()
    replacesTurnId = serializers.IntegerField(allow_null=True, required=False)
    rollback = JSON_OBJECT(
        required=False, allow_null=True, help_text="what superseding or selecting this turn undid or wrote again"
    )


class MessageSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    turnId = serializers.IntegerField()
    round = serializers.IntegerField()
    role = serializers.ChoiceField(["user", "assistant"])
    content = serializers.CharField(allow_blank=True)
    superseded = serializers.BooleanField(
        help_text="not part of the visible conversation: its turn was superseded, or it is a regeneration of a "
        'commitOn "accepted" scenario waiting for its accept'
    )
    deleted = serializers.BooleanField(help_text="removed by DELETE …/messages/{id} (kept, never shown)")
    name = serializers.CharField(required=False, allow_blank=True, help_text="the speaking character")
    present = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="the characters present (witness scopes)"
    )
    createdAt = serializers.DateTimeField()


class MessagePageSerializer(serializers.Serializer):
    results = MessageSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    turnId = serializers.IntegerField(allow_null=True)
    details = JSON_OBJECT()
    createdAt = serializers.DateTimeField()


class EventPageSerializer(serializers.Serializer):
    results = EventSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class ToolFunctionSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    parameters = JSON_OBJECT(help_text="The JSON Schema of the arguments.")


class ToolSerializer(serializers.Serializer):
    type = serializers.ChoiceField(["function"])
    function = ToolFunctionSerializer()


class ToolListSerializer(serializers.Serializer):
    tools = ToolSerializer(many=True)


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="ToolResult",
        serializers=[MemoryReadSerializer, MemoryWriteResultSerializer],
        resource_type_field_name=None,
    )
)
class ToolResultField(serializers.DictField):
    """get_memory → {revision, memory}; update_memory → {revision}: the shapes of GET and PUT …/memory."""


class ToolCallResultSerializer(serializers.Serializer):
    details = ToolResultField(
        help_text="The tool's result: get_memory → {revision, memory} (revision 0 and memory null when empty); "
        "update_memory → {revision}, the new revision."
    )
