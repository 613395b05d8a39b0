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
        help_text="What made this revision: the import, an API key, an operator in the admin, a tool call or an "
        "accepted proposal (its actor names the acceptor and the proposal).",
    )
    actor = serializers.CharField(allow_null=True, help_text="Who made it, when known.")
    createdAt = serializers.DateTimeField()


class LorebookEntryVersionPageSerializer(serializers.Serializer):
    results = LorebookEntryVersionSerializer(many=True)
    next = serializers.CharField(allow_null=True)


class LorebookProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    uid = serializers.CharField(help_text="The entry it edits.")
    baseRevision = serializers.IntegerField(help_text="The entry revision it was proposed on (and commits on).")
    entry = JSON_OBJECT(help_text="The World Info fields it changes.")
    reason = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(["pending", "accepted", "rejected"])
    proposedBy = serializers.CharField(allow_null=True)
    decidedBy = serializers.CharField(allow_null=True)
    note = serializers.CharField(allow_blank=True, help_text="The decision's note (a rejection's reason).")
    revision = serializers.IntegerField(allow_null=True, help_text="accepted: the entry revision after it.")
    createdAt = serializers.DateTimeField()
    decidedAt = serializers.DateTimeField(allow_null=True)


class LorebookProposalPageSerializer(serializers.Serializer):
    results = LorebookProposalSerializer(many=True)
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
