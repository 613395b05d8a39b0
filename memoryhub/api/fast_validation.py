"""A fast path for strict serializers: a body that is already valid as sent is returned without DRF.

Instantiating a DRF serializer deep-copies its declared fields, and validating runs each field's
validators through several layers: about a third of a millisecond for a turn's four fields, on every
prepare. Most bodies are valid and already in their canonical form (strings without surrounding
whitespace where the field trims, integers in range), so `fast_validated` checks exactly that with
plain code and returns the same dictionary the serializer would. Anything else — a missing, unknown,
blank, too long or mistyped field, a field kind it does not know, a serializer with its own `validate`
hooks — returns None, and the serializer runs as before and produces the error (tests/test_fast_validation.py
checks the two paths agree).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.validators import MaxLengthValidator, MinLengthValidator, ProhibitNullCharactersValidator
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from memoryhub.identifiers import validate_identifier

from .fields import (
    CheckedLaterNamesField,
    CheckedLaterObjectField,
    IdentifierField,
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)

Check = Callable[[Any], bool]  # True: the value is valid and the serializer would return it unchanged
_CHAR_VALIDATORS = (
    MaxLengthValidator,
    MinLengthValidator,
    ProhibitNullCharactersValidator,
    ProhibitSurrogateCharactersValidator,
)
_plans: dict[type, tuple[dict[str, Check], frozenset[str]] | None] = {}


def fast_validated(serializer_class: type[serializers.Serializer], data: object) -> dict | None:
    """The serializer's validated data when `data` is valid as sent, else None (run the serializer)."""
    plan = _plans[serializer_class] if serializer_class in _plans else _plan(serializer_class)
    if plan is None or type(data) is not dict:
        return None
    checks, required = plan
    if not required <= data.keys():
        return None
    for name, value in data.items():
        check = checks.get(name)
        if check is None or not check(value):
            return None
    return {name: data[name] for name in checks if name in data}  # the serializer's order: the declared one


def _plan(serializer_class: type[serializers.Serializer]) -> tuple[dict[str, Check], frozenset[str]] | None:
    plan = None
    if issubclass(serializer_class, StrictSerializer) and not _has_hooks(serializer_class):
        fields = serializer_class().fields
        checks = {name: _check(field) for name, field in fields.items()}
        if all(check is not None and fields[name].source == name for name, check in checks.items()):
            required = frozenset(name for name, field in fields.items() if field.required)
            plan = ({name: check for name, check in checks.items() if check is not None}, required)
    _plans[serializer_class] = plan
    return plan


def _has_hooks(serializer_class: type) -> bool:
    if serializer_class.validate is not serializers.Serializer.validate:
        return True
    if serializer_class.to_internal_value is not StrictSerializer.to_internal_value:
        return True
    own = (name for name in dir(serializer_class) if not hasattr(serializers.Serializer, name))
    return any(name.startswith("validate_") for name in own)


def _check(field: serializers.Field) -> Check | None:
    """How to recognise a value the field accepts unchanged; None for a field this module does not know."""
    if field.read_only or (field.validators and type(field) not in (StrictCharField, IdentifierField)):
        return None
    if getattr(field, "default", serializers.empty) is not serializers.empty:
        return None
    kind = type(field)
    if kind in (StrictCharField, IdentifierField):
        return _char_check(field)
    if kind is StrictIntegerField:
        low, high = field.min_value, field.max_value
        return lambda v: type(v) is int and low <= v <= high
    if kind is StrictBooleanField:
        return lambda v: type(v) is bool
    if kind is JSONObjectField and not field.binary:
        return lambda v: type(v) is dict
    if kind is CheckedLaterObjectField:
        return lambda v: True
    if kind in (serializers.JSONField, CheckedLaterNamesField) and not field.binary:
        return (lambda v: True) if field.allow_null else (lambda v: v is not None)
    return None


def _char_check(field: serializers.CharField) -> Check | None:
    if any(not isinstance(validator, _CHAR_VALIDATORS) for validator in field.validators):
        return None
    low, high = field.min_length or 0, field.max_length
    trim, blank_ok, null_ok = field.trim_whitespace, field.allow_blank, field.allow_null
    identifier = type(field) is IdentifierField

    def check(value: object) -> bool:
        if value is None:
            return null_ok
        if type(value) is not str or (trim and value != value.strip()) or "\x00" in value:
            return False
        if (value == "" and not blank_ok) or len(value) < low or (high is not None and len(value) > high):
            return False
        if not value.isascii():
            try:
                value.encode()
            except UnicodeEncodeError:
                return False  # a lone surrogate: the serializer says which
        if identifier:
            try:
                validate_identifier(value, field.field_name)
            except Exception:
                return False
        return True

    return check
