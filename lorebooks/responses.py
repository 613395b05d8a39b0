"""The response bodies of the lorebook endpoints, as the OpenAPI document shows them.

tests/support/openapi.py checks every body the suite receives against these (closed objects), so they and
`lorebook_to_dict`/`entry_to_dict`/`version_to_dict` in lorebooks/api.py cannot drift apart.
"""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from lorebooks import formats
from lorebooks.models import LorebookEntryVersion

JSON_OBJECT = serializers.DictField  # a free-form JSON object

VIEW_HELP = (
    "The entry as World Info fields (uid, key, keysecondary, comment, content, order, position, disable, …) "
    "with SillyTavern's defaults filled in, whatever the format (docs/roleplay.md#lorebooks)."
)
NATIVE_HELP = (
    "The entry exactly as the imported format stores it (a World Info entry or a card's character_book entry)."
)


class LorebookSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    format = serializers.ChoiceField(list(formats.FORMATS), help_text="The format it was imported from.")
    entryCount = serializers.IntegerField(help_text="Live (not deleted) entries.")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class LorebookEntrySerializer(serializers.Serializer):
    uid = serializers.CharField()
    revision = serializers.IntegerField(help_text="Send it back as expectedRevision to edit or delete the entry.")
    entry = JSON_OBJECT(help_text=VIEW_HELP)
    native = JSON_OBJECT(help_text=NATIVE_HELP)
    updatedAt = serializers.DateTimeField()


class LorebookDetailSerializer(LorebookSerializer):
    entries = LorebookEntrySerializer(many=True, help_text="Every live entry.")


class LorebookPageSerializer(serializers.Serializer):
    results = LorebookSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class LorebookEntryListSerializer(serializers.Serializer):
    results = LorebookEntrySerializer(many=True)


class LorebookEntryVersionSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    deleted = serializers.BooleanField(help_text="This revision deleted the entry.")
    entry = JSON_OBJECT(help_text=VIEW_HELP)
    native = JSON_OBJECT(help_text=NATIVE_HELP)
    cause = serializers.ChoiceField(
        [value for value, _ in LorebookEntryVersion.CAUSES],
        help_text="What made this revision: the import, an API key, an operator in the admin or a tool call.",
    )
    actor = serializers.CharField(allow_null=True, help_text="Who made it, when known.")
    createdAt = serializers.DateTimeField()


class LorebookEntryVersionPageSerializer(serializers.Serializer):
    results = LorebookEntryVersionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class LorebookFileSerializer(serializers.Serializer):
    """Stands for the exported file; its schema is LorebookFileExtension's."""


FILE_DESCRIPTION = (
    "The lorebook file itself, free-form as the format defines it: a SillyTavern World Info file "
    '({"entries": {uid: entry, …}, …}; a list when imported as one) for format=worldinfo, a Character Card '
    "V2/V3 whose data.character_book holds the entries for format=charactercard. In its imported format it is "
    "the imported file with the edits."
)


class LorebookFileExtension(OpenApiSerializerExtension):
    target_class = LorebookFileSerializer

    def map_serializer(self, auto_schema, direction):
        return {"type": "object", "additionalProperties": {}, "description": FILE_DESCRIPTION}
