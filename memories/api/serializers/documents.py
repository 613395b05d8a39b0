from __future__ import annotations

from rest_framework import serializers

from memoryhub.api.fields import CheckedLaterObjectField, StrictIntegerField, StrictSerializer


class MemoryWriteSerializer(StrictSerializer):
    expectedRevision = StrictIntegerField()
    memory = CheckedLaterObjectField(help_text="The complete new document (a JSON object); replaces the old one.")


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
