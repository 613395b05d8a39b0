from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub.api.fields import StrictIntegerField, StrictSerializer


@extend_schema_field({"type": "object", "additionalProperties": {}})
class MemoryDocumentField(serializers.JSONField):
    """A JSON object, declared as one; any other value (null included) reaches validate_memory, which answers
    `invalid_memory` for it, so the schema does not call the field nullable."""

    def validate_empty_values(self, data):
        if data is None:
            return True, None
        return super().validate_empty_values(data)


class MemoryWriteSerializer(StrictSerializer):
    expectedRevision = StrictIntegerField()
    memory = MemoryDocumentField(help_text="The complete new document (a JSON object); replaces the old one.")


class MemoryReadSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    memory = serializers.JSONField(allow_null=True)


class MemoryWriteResultSerializer(serializers.Serializer):
    revision = serializers.IntegerField()


class MemoryRevisionSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    memory = serializers.JSONField()
    actor = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")

    def get_actor(self, obj) -> dict:
        return {"type": obj.actor_type, "id": obj.actor}


class MemoryRevisionPageSerializer(serializers.Serializer):
    results = MemoryRevisionSerializer(many=True)
    next = serializers.CharField(allow_null=True)
