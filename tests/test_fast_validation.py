"""The fast path of `validated` returns exactly what the serializer returns, and defers to it otherwise."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from memories.api.serializers.documents import MemoryWriteSerializer
from memories.api.serializers.turns import TurnCompleteSerializer, TurnPrepareSerializer
from memoryhub.api.common import validated
from memoryhub.api.fast_validation import fast_validated
from memoryhub.api.fields import StrictCharField, StrictSerializer

SERIALIZERS = [TurnPrepareSerializer, MemoryWriteSerializer, TurnCompleteSerializer]

texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["", " ", " a", "a ", "bench", "x" * 101, "a\x00b", "\ud800", "谁拿着钥匙?", "req-1.@_", "no spaces!"]
    ),
)
values = st.one_of(
    texts,
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2**53 + 1),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
names = st.sampled_from(
    [
        *("scenarioId", "userMessage", "subscriptionCategory", "requestId", "replacesTurnId"),
        *("expectedRevision", "memory", "assistantMessage", "unknown"),
    ]
)


def slow(serializer_class, data):
    serializer = serializer_class(data=data)
    return serializer.validated_data if serializer.is_valid() else None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serializer_class=st.sampled_from(SERIALIZERS), data=st.dictionaries(names, values, max_size=5))
def test_the_fast_path_agrees_with_the_serializer(serializer_class, data):
    fast = fast_validated(serializer_class, data)
    if fast is not None:  # taken only for a valid body, and then with the serializer's answer
        assert fast == slow(serializer_class, data)


@pytest.mark.parametrize(
    "data",
    [
        {"scenarioId": "bench", "userMessage": "谁拿着钥匙?"},
        {
            "scenarioId": "bench",
            "userMessage": "",
            "subscriptionCategory": None,
            "requestId": "r-1",
            "replacesTurnId": 3,
        },
    ],
)
def test_a_valid_turn_body_takes_the_fast_path(data):
    assert fast_validated(TurnPrepareSerializer, data) == slow(TurnPrepareSerializer, data) == data


@pytest.mark.parametrize(
    "data",
    [
        {"scenarioId": "bench"},  # missing field
        {"scenarioId": "bench", "userMessage": "x", "extra": 1},  # unknown field
        {"scenarioId": "bench", "userMessage": 5},  # not a string
        {"scenarioId": "bench", "userMessage": "x", "replacesTurnId": True},
        {"scenarioId": "bench", "userMessage": "x", "requestId": "a b"},
        ["not", "an", "object"],
    ],
)
def test_anything_else_goes_to_the_serializer(data):
    assert fast_validated(TurnPrepareSerializer, data) is None


def test_validated_still_raises_the_serializer_errors():
    with pytest.raises(serializers.ValidationError) as raised:
        validated(TurnPrepareSerializer, {"scenarioId": "bench", "userMessage": 5, "extra": 1})
    assert raised.value.detail == {"extra": ["unknown field"], "userMessage": ["Not a valid string."]}


def test_a_serializer_with_its_own_hooks_is_never_fast():
    class Hooked(StrictSerializer):
        name = StrictCharField()

        def validate_name(self, value):
            return value.upper()

    assert fast_validated(Hooked, {"name": "a"}) is None
    assert validated(Hooked, {"name": "a"}) == {"name": "A"}
