"""The minimal acceptance run, through HTTP: read → explicit change with receipt → a NEW turn sees it."""

from __future__ import annotations

from tests.support.api import assert_envelope
from tests.support.turns import prepare

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


def test_minimal_acceptance_run(alice):
    assert alice.post("/v1/scenarios", SCENARIO).status_code == 201
    # 1. read the old value
    old = {"scene": "城门", "keyHolder": "用户"}
    assert alice.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": old}).json() == {"revision": 1}
    first = prepare(alice, "gate", "hello")
    assert '"keyHolder":"用户"' in first["prompt"]
    assert first["referencedVariables"] == ["jsonMemory"] and first["unreferencedVariables"] == []
    assert first["sources"][0]["revision"] == 1
    # 2. one explicit change, with its receipt
    new = {"scene": "城门", "keyHolder": "守卫"}
    assert alice.put(f"{CONV}/memory", {"expectedRevision": 1, "memory": new}).json() == {"revision": 2}
    # 3. a NEW turn's prompt contains the new value
    second = prepare(alice, "gate", "who holds the key?")
    assert '"keyHolder":"守卫"' in second["prompt"] and "用户" not in second["prompt"].split("User:")[0]
    assert second["sources"][0]["revision"] == 2
    # a conflicting write and a failed save leave the prompt on the last good value
    assert_envelope(alice.put(f"{CONV}/memory", {"expectedRevision": 1, "memory": {"x": 1}}), 409, "revision_conflict")
    alice.product.memory_schema = {"type": "object", "required": ["scene"]}
    alice.product.save()
    assert_envelope(
        alice.put(f"{CONV}/memory", {"expectedRevision": 2, "memory": {"keyHolder": "贼"}}), 422, "rejected_by_policy"
    )
    third = prepare(alice, "gate", "hello")
    assert '"keyHolder":"守卫"' in third["prompt"] and "贼" not in third["prompt"]
