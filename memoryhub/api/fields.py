"""Strict serializer fields: JSON types are checked as sent (no "5" → 5, no true → 1)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub.identifiers import ID_RULE, MAX_SAFE_INTEGER, validate_identifier


class StrictIntegerField(serializers.Field):
    default_error_messages = {"invalid": "must be an integer between {min} and {max}"}

    def __init__(self, *, min_value: int = 0, max_value: int = MAX_SAFE_INTEGER - 1, **kwargs):
        super().__init__(**kwargs)
        self.min_value, self.max_value = min_value, max_value

    def to_internal_value(self, data):
        if not isinstance(data, int) or isinstance(data, bool) or not self.min_value <= data <= self.max_value:
            self.fail("invalid", min=self.min_value, max=self.max_value)
        return data

    def to_representation(self, value):
        return value


class StrictFloatField(serializers.FloatField):
    """A number sent as a JSON number (DRF's FloatField would accept "0.2" and true)."""

    def to_internal_value(self, data):
        if not isinstance(data, (int, float)) or isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A string that must be sent as a JSON string (DRF's CharField would accept numbers), kept as sent: DRF would
    strip its ends, so "c1\n" would name c1 where an id rule refuses it (docs/contract.md, "Identifiers")."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        return data


@extend_schema_field({"type": "object", "additionalProperties": {}})
class CheckedLaterObjectField(serializers.Field):
    """A JSON object that the service checks itself (a memory document: validate_memory answers `invalid_memory`
    for any other value, null included), so the field passes every parsed value on as it is. The schema declares
    an object, not a nullable anything."""

    def validate_empty_values(self, data):
        if data is None:
            return True, None
        return super().validate_empty_values(data)

    def to_internal_value(self, data):
        return data

    def to_representation(self, value):
        return value


@extend_schema_field(
    {
        "type": "array",
        "maxItems": 50,
        "items": {
            "type": "string",
            "minLength": 1,
            "description": "1-100 characters once leading and trailing whitespace is trimmed",
        },
    }
)
class CheckedLaterNamesField(serializers.JSONField):
    """A list of names that the service checks itself (a prepare's `present`: memories.services.turns.witness_names
    answers 400 with `details.field`), so the field passes the parsed value on. The schema declares the list."""


class IdentifierField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=128, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            return validate_identifier(value, self.field_name)
        except Exception:
            raise serializers.ValidationError(f"must be {ID_RULE}") from None


class StrictSerializer(serializers.Serializer):
    """Refuse unknown fields: a typo must not be silently ignored."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["the body must be a JSON object"]})
        unknown = {name: ["unknown field"] for name in sorted(set(data) - set(self.fields))}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:  # with the unknown ones: `revision` sent for `expectedRevision`
            detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
            raise serializers.ValidationError({**unknown, **detail}) from None
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class EmptyBodySerializer(StrictSerializer):
    """`{}` (or no body): an action that takes nothing; any field is refused."""
