"""Found by fuzzing: JSON objects or lists where a name is expected must be a 400 naming the field, never a 500."""

from __future__ import annotations

import pytest

from tests.support.api import assert_envelope


@pytest.mark.parametrize(
    "field, value, where",
    [
        ("memoryRuntime", {"x": 1}, "memoryRuntime"),
        ("memoryRuntime", ["hinos"], "memoryRuntime"),
        ("memorySources", [{"id": "s", "agentRef": "a", "variable": {"v": 1}}], "memorySources[0].variable"),
        ("memorySources", [{"id": "s", "agentRef": "a", "variable": ["jsonMemory"]}], "memorySources[0].variable"),
    ],
)
def test_unhashable_values_are_named_400s(alice, field, value, where):
    error = assert_envelope(
        alice.post("/v1/scenarios", {"id": "s1", "name": "S", field: value}), 400, "invalid_request"
    )
    assert where in error["details"]["fields"]
